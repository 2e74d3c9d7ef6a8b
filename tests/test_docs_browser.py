"""Claims about the built documentation: it builds with warnings as errors, references no CDN,
and its math typesets in a real browser (headless Chromium) with every network lookup blocked.

The site is built once per module into a temporary directory (``idepth docs build --out``).
Screenshots are written to ``test-artifacts/docs/`` at the repository root (or to the directory
in the environment variable ``IDEPTH_TEST_ARTIFACTS``), for a person to look at.

Chromium: Debian's ``chromium`` package (``.ci/install-chromium.sh``). Without it the browser
tests are skipped locally, and fail in CI (environment variable ``CI`` set).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from idepth.commands import docs as docs_command

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(os.environ.get("IDEPTH_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "docs"
#: pages opened in the browser: the landing page and one derivation page
PAGES = ("index.html", "derivations/polynomial_laws.html")
#: a module that does not exist, whose stale API stub the build must remove before reading the pages
STALE_MODULE = "numerics.experiments.left_the_api"
#: URLs inside the vendored MathJax 3.2.2 bundle (speech-rule-engine data and IE polyfills). They
#: are only fetched by the speech/explorer features of MathJax's context menu, which conf.py turns
#: off (enableMenu: False); the browser test below proves typesetting needs none of them.
DORMANT_MATHJAX_URLS = {
    "https://cdn.jsdelivr.net/npm/sre-mathmaps-ie",
    "https://cdn.jsdelivr.net/npm/wicked-good-xpath",
    "https://cdn.jsdelivr.net/npm/speech-rule-engine",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The HTML site, built once with ``idepth docs build --out DIR`` (warnings are errors)."""
    out = tmp_path_factory.mktemp("docs") / "html"
    # a stub left by an earlier build for a module that has since left the API: the build removes it before
    # Sphinx lists the pages (read, autodoc could not import the module and the build would fail)
    generated = ROOT / "docs" / "api" / "generated"
    generated.mkdir(parents=True, exist_ok=True)
    stale = generated / f"{STALE_MODULE}.rst"
    stale.write_text(f"{STALE_MODULE}\n{'=' * len(STALE_MODULE)}\n\n.. automodule:: {STALE_MODULE}\n", encoding="utf-8")
    status = docs_command.run(argparse.Namespace(out=out))
    assert status == 0, "idepth docs build failed (run it to see the warnings; they are errors)"
    assert not stale.exists(), "the build left a stale API stub"
    return out


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI"):
        pytest.fail("chromium is not installed but CI is set: .ci/install-chromium.sh must install it")
    pytest.skip("chromium is not installed (Debian: apt-get install chromium, or run .ci/install-chromium.sh)")


def _run_chromium(page: Path, profile: Path, *extra: str, budget_ms: int = 10000) -> subprocess.CompletedProcess:
    command = [
        _chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
        # any host name lookup fails: math must typeset from the local files alone
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--virtual-time-budget={budget_ms}", "--window-size=1280,1800", *extra, page.as_uri(),
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=max(120, budget_ms / 1000))


def _visible_text(dom: str) -> str:
    """Text a reader sees: scripts, styles and typeset math removed, tags stripped."""
    for element in ("script", "style", "mjx-container"):
        dom = re.sub(rf"<{element}\b.*?</{element}>", " ", dom, flags=re.S | re.I)
    return html.unescape(re.sub(r"<[^>]+>", " ", dom))


def test_built_html_references_no_cdn(site):
    html_files = sorted(site.rglob("*.html"))
    assert len(html_files) >= 10
    remote = re.compile(r"""<(script|link|img|iframe)\b[^>]*\b(src|href)\s*=\s*["']?(https?:)?//""", re.I)
    for path in html_files:
        text = path.read_text(encoding="utf-8")
        assert not remote.search(text), f"{path.relative_to(site)} loads a remote resource"
        assert "cdn." not in text, f"{path.relative_to(site)} mentions a CDN"
    mathjax_dir = site / "_static" / "mathjax"
    for path in sorted((site / "_static").rglob("*.js")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if mathjax_dir in path.parents:
            urls = {m.group(0).split("@")[0] for m in re.finditer(r"https?://cdn\.[^\"'\s]+", text)}
            assert urls <= DORMANT_MATHJAX_URLS, f"{path.relative_to(site)}: unexpected CDN URLs {urls - DORMANT_MATHJAX_URLS}"
        else:
            assert "cdn." not in text, f"{path.relative_to(site)} mentions a CDN"


def test_mathjax_is_loaded_from_the_local_copy(site):
    index = (site / "index.html").read_text(encoding="utf-8")
    sources = re.findall(r"""<script[^>]*src="([^"]*mathjax[^"]*)\"""", index, flags=re.I)
    assert sources, "no MathJax script tag in index.html"
    for source in sources:
        local = site / source.split("?")[0]
        assert local.is_file(), f"MathJax script {source} is not in the built site"
    assert (site / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2" / "MathJax_Main-Regular.woff").is_file()


def test_landing_page_shows_the_readme_commands(site):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"```bash\n(.*?)\n```", readme.split("## Layout")[0], flags=re.S)
    assert commands, "README.md has no bash commands before its Layout section"
    text = html.unescape(re.sub(r"<[^>]+>", "", (site / "index.html").read_text(encoding="utf-8")))
    for command in commands:
        assert command.strip() in text


def test_commands_quoted_in_prose_keep_their_double_dashes(site):
    """Figure pages quote the commands behind their verdicts outside code spans: the build must not turn "--" into "–"."""
    text = html.unescape(re.sub(r"<[^>]+>", "", (site / "figures" / "fig6a.html").read_text(encoding="utf-8")))
    assert "idepth study page certified --no-progress" in text and "certified –no-progress" not in text


def _api_extension():
    import importlib.util

    spec = importlib.util.spec_from_file_location("idepth_api", ROOT / "docs" / "_ext" / "idepth_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_api_reference_has_one_page_per_public_object_and_no_monolithic_page(site):
    api = site / "api" / "generated"
    for module, name in (("theory.predict", "predict_loss"), ("numerics.train", "train"),
                         ("numerics.train", "ModelRun"), ("theory.spectra", "PowerLawSpectrum")):
        page = api / f"{module}.{name}.html"
        assert page.is_file(), f"no page for {module}.{name}"
        assert f'id="{module}.{name}"' in page.read_text(encoding="utf-8")  # the object's own description
    homes = _api_extension().object_homes()
    expected = {f"{module}.{name}.html" for module, entries in homes.items() for name, _ in entries}
    assert len(expected) > 400 and expected <= {path.name for path in api.glob("*.html")}
    documented = [name for entries in homes.values() for name, _ in entries]
    assert "predict_loss" in documented and documented.count("TrainConfig") == 1  # once, at its home
    for old in ("theory.html", "numerics.html"):  # the former one-page-per-package references
        assert not (site / "api" / old).exists()
    largest = max(site.joinpath("api").rglob("*.html"), key=lambda path: path.stat().st_size)
    assert largest.stat().st_size < 250_000, f"{largest.name} is {largest.stat().st_size} bytes"
    api_index = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert 'href="generated/index-theory.html"' in api_index and 'href="generated/index-numerics.html"' in api_index
    assert 'href="api/index.html"' in (site / "index.html").read_text(encoding="utf-8")
    theory_index = (api / "index-theory.html").read_text(encoding="utf-8")
    assert 'href="theory.predict.html' in theory_index  # the package page links its modules


def test_quickstart_code_runs_and_its_stated_numbers_hold():
    text = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 4
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/quickstart.md", "exec"), namespace)  # noqa: S102 - the page's own code
    assert namespace["constrained"].exponent == 1.0 and namespace["free"].exponent == 2.0
    assert all(namespace["free"].loss <= namespace["constrained"].loss)
    assert "59.38 at every depth" in text
    assert [round(x, 2) for x in namespace["floor"].loss] == [59.38] * 4
    assert namespace["softmax"].loss.tolist() == [10.0, 6.0, 4.0, 3.0, 2.5]
    assert namespace["best"].kind == "U_L: best expressible loss found (an upper bound on the optimum R*_L)"
    assert namespace["best"].loss[-1] < namespace["best"].loss[1]  # diverse heads beat the saturated cosine heads
    assert namespace["law"].coefficient > 0 and namespace["law"].exponent == 1.0


@pytest.mark.browser
@pytest.mark.parametrize("page", PAGES)
def test_math_typesets_offline_in_headless_chromium(site, page, tmp_path):
    source = (site / page).read_text(encoding="utf-8")
    math_nodes = len(re.findall(r'class="math notranslate nohighlight"', source))
    assert math_nodes >= 5, f"{page} has only {math_nodes} math elements; is it the right page?"

    dump = _run_chromium(site / page, tmp_path / "profile", "--dump-dom")
    assert dump.returncode == 0, dump.stderr[-2000:]
    dom = dump.stdout
    typeset = len(re.findall(r"<mjx-container\b", dom))
    assert typeset >= math_nodes, f"{page}: {typeset} typeset math elements for {math_nodes} math sources"
    text = _visible_text(dom)
    for raw in ("\\(", "\\)", "\\[", "\\]", "$$"):
        assert raw not in text, f"{page}: raw math delimiter {raw!r} is visible: ...{text[text.find(raw) - 80:text.find(raw) + 80]}..."
    leftover = re.search(r"\$[^$\s][^$]{0,80}\$", text)
    assert leftover is None, f"{page}: untypeset inline math is visible: {leftover.group(0) if leftover else ''}"

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / (page.replace("/", "__").replace(".html", ".png"))
    shot = _run_chromium(site / page, tmp_path / "profile-shot", f"--screenshot={screenshot}")
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert screenshot.is_file() and screenshot.stat().st_size > 20_000


#: run in each copied page once it has loaded: the window's width, the page's scroll width, and the right edge of
#: every image (of its scrolling container, when it has one), written into the DOM that --dump-dom prints
_LAYOUT_PROBE = """<script>window.addEventListener('load', () => { const pre = document.createElement('pre');
pre.id = 'idepth-layout'; pre.textContent = JSON.stringify({width: window.innerWidth,
scroll: document.documentElement.scrollWidth, images: [...document.querySelectorAll('img')].map(
i => [i.getAttribute('src'), Math.ceil((i.closest('.idepth-scroll') || i).getBoundingClientRect().right)])});
document.body.appendChild(pre); });
</script>"""


@pytest.mark.browser
def test_every_figure_and_results_page_fits_a_1280px_window(site, tmp_path):
    pages = sorted((site / "figures").glob("*.html")) + sorted((site / "results").rglob("*.html"))
    assert len(pages) >= 10, "figure and results pages missing from the build"
    too_wide = []
    for page in pages:
        probe = page.with_name(f"_probe_{page.name}")
        probe.write_text(page.read_text(encoding="utf-8").replace("</body>", _LAYOUT_PROBE + "</body>"), encoding="utf-8")
        dump = _run_chromium(probe, tmp_path / f"profile-{page.stem}", "--dump-dom")
        assert dump.returncode == 0, dump.stderr[-2000:]
        match = re.search(r'<pre id="idepth-layout">(.*?)</pre>', dump.stdout, flags=re.S)
        assert match, f"{page.name}: the layout probe did not run"
        layout = json.loads(html.unescape(match.group(1)))
        assert layout["width"] == 1280
        # an image wider than its scrolling container (a figure shown wide enough for its text to be legible,
        # docs/_ext/readable_figures.py) is cut by the container, which scrolls to it, not by the window
        wide = [src for src, right in layout["images"] if right > layout["width"]]
        if wide or layout["scroll"] > layout["width"]:
            too_wide.append((str(page.relative_to(site)), layout["scroll"], wide))
    assert not too_wide, f"pages wider than a 1280 px window (page, scroll width, images cut): {too_wide}"


#: a page that opens each page of a list in a 1280 x 1800 frame, one after the other, and measures it once loaded and
#: typeset: the right edge of the text column (``div.body`` less its padding), every table's width and right edge,
#: every image's source, natural and displayed width; the results go into the DOM that --dump-dom prints
_MEASURE_DRIVER = """<!doctype html><html><body><iframe id="frame" style="width:1280px;height:1800px;border:0"></iframe>
<pre id="idepth-measures"></pre><script>
const pages = PAGES, results = {}, frame = document.getElementById('frame');
function measure(doc) {
  const body = doc.querySelector('div.body') || doc.body, box = body.getBoundingClientRect();
  const column = box.right - parseFloat(doc.defaultView.getComputedStyle(body).paddingRight);
  return {width: doc.defaultView.innerWidth, column: column,
    tables: [...doc.querySelectorAll('table')].map(t => [t.getBoundingClientRect().width, t.getBoundingClientRect().right]),
    images: [...doc.querySelectorAll('img')].map(i => [i.getAttribute('src'), i.naturalWidth, i.getBoundingClientRect().width])};
}
async function run() {
  for (const page of pages) {
    await new Promise(resolve => { frame.onload = resolve; frame.src = page; });
    const win = frame.contentWindow;
    if (win.MathJax && win.MathJax.startup && win.MathJax.startup.promise) {
      try { await win.MathJax.startup.promise; } catch (error) {}
    }
    results[page] = measure(frame.contentDocument);
  }
  document.getElementById('idepth-measures').textContent = JSON.stringify(results);
}
window.addEventListener('load', run);
</script></body></html>"""


def _measure_pages(site: Path, pages: list[Path], tmp_path: Path) -> dict:
    """:data:`_MEASURE_DRIVER`'s measures of ``pages`` (relative path -> measures), in one headless Chromium."""
    names = [page.relative_to(site).as_posix() for page in pages]
    driver = site / "_measure_driver.html"
    driver.write_text(_MEASURE_DRIVER.replace("PAGES", json.dumps(names)), encoding="utf-8")
    try:
        # virtual time: the pages load one after the other in the same frame (about 0.1 s each, unloaded)
        dump = _run_chromium(driver, tmp_path / "profile-measure", "--allow-file-access-from-files", "--dump-dom",
                             budget_ms=600_000)
    finally:
        driver.unlink()
    assert dump.returncode == 0, dump.stderr[-2000:]
    match = re.search(r'<pre id="idepth-measures">(.*?)</pre>', dump.stdout, flags=re.S)
    assert match and match.group(1), "the measuring page did not finish"
    return json.loads(html.unescape(match.group(1)))


def _readable_figures():
    import importlib.util

    spec = importlib.util.spec_from_file_location("readable_figures", ROOT / "docs" / "_ext" / "readable_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.browser
def test_every_page_at_1280px_has_no_table_wider_than_its_column_and_no_figure_text_under_9px(site, tmp_path):
    """Every built page with a table or an image (the others have nothing to measure), at a 1280 px window.

    A figure's smallest text is ``points * dpi / 72 * displayed / natural`` pixels tall, from the size the PNG
    records (:func:`numerics.io.figure_text_size`, written by :func:`numerics.io.savefig`); a PNG without the
    record cannot be judged and is listed as such (regenerate it with the command on its page).
    """
    from numerics.io import figure_text_size

    minimum = _readable_figures().MIN_TEXT_PX
    pages = sorted(page for page in site.rglob("*.html")
                   if not any(part.startswith("_") for part in page.relative_to(site).parts)
                   and re.search(r"<table|<img", page.read_text(encoding="utf-8")))
    assert len(pages) >= 30, "pages with tables and figures missing from the build"
    measures = _measure_pages(site, pages, tmp_path)
    assert sorted(measures) == sorted(page.relative_to(site).as_posix() for page in pages)
    wide_tables, small_text, unrecorded = [], [], []
    for name, page in measures.items():
        assert page["width"] == 1280
        for width, right in page["tables"]:
            if right > page["column"] + 1:  # one pixel of rounding
                wide_tables.append((name, round(width), f"{right - page['column']:.0f} px past the column"))
        for source, natural, displayed in page["images"]:
            path = (site / name).parent / source
            if path.suffix.lower() != ".png" or "_images" not in path.parts:  # the theme's icons are no figures
                continue
            size = figure_text_size(path)
            assert size.width == natural, f"{name}: {source} is {natural} px wide in the browser, {size.width} on disk"
            if size.points is None:
                unrecorded.append((name, path.name))
            elif size.pixels(displayed) < minimum - 1e-6:
                small_text.append((name, path.name, f"{size.pixels(displayed):.1f} px"))
    assert not wide_tables, f"tables wider than the text column at 1280 px (page, width, overflow): {wide_tables}"
    assert not small_text, f"figures whose smallest text is under {minimum:g} px at 1280 px: {small_text}"
    assert not unrecorded, f"figures that record no text size (saved before numerics.io.savefig recorded it): {unrecorded}"


def test_the_readable_width_puts_a_figures_smallest_text_at_9px():
    """7 pt text at 130 dpi is 12.6 px at the natural size: a 2145 px figure (fig1) needs 1528 px for 9 px."""
    from numerics.io import FigureTextSize

    module = _readable_figures()
    size = FigureTextSize(7.0, 130.0, 2145)
    width = module.readable_width(size)
    assert width == 1528 and size.pixels(width) >= module.MIN_TEXT_PX > size.pixels(width - 1)
    assert size.pixels(800) == pytest.approx(4.71, abs=0.01)  # the 800 px the page showed it at: under 5 px
    assert module.readable_width(FigureTextSize(None, 130.0, 2145)) is None


def test_a_recorded_figure_is_given_the_width_at_which_its_smallest_text_is_9px(tmp_path):
    """A one-page Sphinx project with the extension: the figure (7 pt text at 144 dpi, 1440 px wide: 14 px text)
    gets min-width 926 px (9 px text) and keeps its natural width; an unrecorded PNG is left as Sphinx writes it;
    their containers scroll sideways. No browser needed."""
    import sys

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from numerics.io import figure_text_size, savefig

    source = tmp_path / "src"
    source.mkdir()
    fig, ax = plt.subplots(figsize=(10, 3))
    ax.set_xlabel("depth L", fontsize=7)
    ax.tick_params(labelsize=8)
    savefig(fig, source / "recorded.png", dpi=144)
    fig.savefig(source / "plain.png", dpi=144)  # matplotlib's own: no record
    plt.close(fig)
    # the PNG stores dots per metre as an integer: 144 dpi comes back as 143.99
    assert figure_text_size(source / "recorded.png") == (7.0, pytest.approx(144.0, abs=0.01), 1440)
    (source / "conf.py").write_text(f"import sys\nsys.path.insert(0, {str(ROOT / 'docs' / '_ext')!r})\n"
                                    "extensions = ['readable_figures']\n", encoding="utf-8")
    (source / "index.rst").write_text("Page\n====\n\n.. image:: recorded.png\n   :width: 1440px\n\n"
                                      "A paragraph.\n\n.. image:: plain.png\n", encoding="utf-8")
    build = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", str(source), str(tmp_path / "html")],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    page = (tmp_path / "html" / "index.html").read_text(encoding="utf-8")
    images = {re.search(r'src="_images/(\w+)\.png"', tag).group(1): tag for tag in re.findall(r"<img [^>]*>", page)}
    assert 'style="width: 1440px; min-width: 926px"' in images["recorded"] and "idepth-readable" in images["recorded"]
    assert "min-width" not in images["plain"] and "idepth-readable" not in images["plain"]
    assert page.count("idepth-scroll") == 2  # both images' containers scroll sideways
    width = _readable_figures().readable_width(figure_text_size(source / "recorded.png"))
    assert width == 926 and figure_text_size(source / "recorded.png").pixels(width) >= 9.0
