"""Checks of the theory of exchangeable heads against trained models: the rows (computed here).

:func:`write_expressible_checks` (``idepth expressible check``) writes
them as ``docs/results/expressible.md``, its figure and CSV tables (``docs/results/expressible/``); nothing
trains, the certified files are read through the study's own readers.

**The lazy recipe against its exchangeable law**: the trained ``R_L`` of the certified contrasts against
:func:`theory.head_families.exchangeable_law_from_reads` of the recipe's own *initial* heads (the per-layer reads
``p_ℓ·y`` of a deep model drawn with its initialisation, on fresh contexts); with the gain fixed at 1, as the
recipe keeps it, the law is ``plateau + c/L`` with ``plateau = s − 2h + q``, ``c = v``. (The certified envelope
against ``U_L`` is no longer checked here: the certified study pairs the two per cell.)
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from numerics.io import savefig, write_together

from .._plotting import pyplot
from ..criteria import mean_se
from .certified.bootstrap import replicates
from .certified.contrasts import collect_contrasts
from .plan import TABLE1_SPECTRA, Plan
from .certified.statistics import BOOTSTRAP
from .curves import spectrum_label
from .defaults import fit_inverse_depth
from .figures import draw_expressible_figure
from .page import FIGURE, LAZY_CSV, LAZY_FIT_CSV, PAGE, csv_text, expressible_markdown

__all__ = ["LazyRow", "LazyFit", "check_results_dir", "lazy_law", "lazy_checks", "write_expressible_checks", "PAGE",
           "FIGURE"]
#: the lazy recipe's initial heads: layers of one deep model (the pool), independent draws of the shared
#: weights (W_x), fresh contexts per draw; the root seed of these draws (not the study's streams)
LAW_LAYERS, LAW_DRAWS, LAW_CONTEXTS, LAW_SEED = 256, 8, 4096, 306


# --------------------------------------------------------------------------- the lazy recipe against its law

@dataclass(frozen=True)
class LazyRow:
    """The lazy recipe at one spectrum and depth: trained ``R_L`` against its exchangeable law.

    ``law_fixed``: the law with the gain held at 1 (the recipe freezes it); ``law_refit``: gain refitted per
    depth. SEs: trained, joint (seeds, contexts) bootstrap; law, spread over independent draws.

    Examples
    --------
    >>> round(LazyRow(0.0, 0.0, 8, 5, 2.29, 0.06, 2.91, 0.05, 2.88, 0.05).difference, 2)
    -0.62
    """

    a: float
    b: float
    depth: int
    seeds: int
    trained: float
    trained_se: float
    law_fixed: float
    law_fixed_se: float
    law_refit: float
    law_refit_se: float

    @property
    def difference(self) -> float:
        """Trained − the fixed-gain law."""
        return self.trained - self.law_fixed

    difference_se = property(lambda self: math.hypot(self.trained_se, self.law_fixed_se), doc="Its SE.")


@dataclass(frozen=True)
class LazyFit:
    """``plateau + c/L`` fitted to the trained lazy curve (WLS), against the law's computed constants.

    ``law_plateau, law_c``: fixed gain 1 (``s − 2h + q`` and ``v``); ``refit_plateau, refit_c, refit_shift``:
    the refitted-gain law ``R_∞ + c/(L + L₀)``. Each with its SE.

    Examples
    --------
    >>> f = LazyFit(0.0, 0.0, 2.15, 0.03, 0.9, 0.05, 2.4, 0.04, 4.1, 0.1, 2.2, 0.04, 5.3, 0.1, 0.7, 8, 256, 4096)
    >>> [round(v, 2) for v in f.plateau_difference + f.c_difference]
    [-0.25, 0.05, -3.2, 0.11]
    """

    a: float
    b: float
    plateau: float
    plateau_se: float
    c: float
    c_se: float
    law_plateau: float
    law_plateau_se: float
    law_c: float
    law_c_se: float
    refit_plateau: float
    refit_plateau_se: float
    refit_c: float
    refit_c_se: float
    refit_shift: float
    draws: int
    layers: int
    contexts: int

    @property
    def plateau_difference(self) -> tuple[float, float]:
        """Trained plateau − the fixed-gain law's, with its SE."""
        return self.plateau - self.law_plateau, math.hypot(self.plateau_se, self.law_plateau_se)

    @property
    def c_difference(self) -> tuple[float, float]:
        """Trained c − the fixed-gain law's, with its SE."""
        return self.c - self.law_c, math.hypot(self.c_se, self.law_c_se)


def lazy_law(a: float, b: float, plan: Plan, depths, *, layers: int = LAW_LAYERS, draws: int = LAW_DRAWS,
             contexts: int = LAW_CONTEXTS, seed: int = LAW_SEED) -> dict:
    """The exchangeable law of the lazy recipe's initial heads at (a, b), over ``draws`` independent models.

    Each draw: a ``layers``-deep model with the contrast run's initialisation, its per-layer reads
    ``p_ℓ·y = f_ℓ/g`` on ``contexts`` fresh contexts (a stream of ``seed``, not the study's), fed to
    :func:`theory.head_families.exchangeable_law_from_reads`. Returns per-draw arrays ``fixed``, ``refit``
    (draws, depths) and constants ``law_plateau, law_c`` (gain 1), ``refit_plateau, refit_c, refit_shift``.

    Notes
    -----
    No example: about 7 s of CPU per draw at the defaults.
    """
    from numerics.models import get_model
    from numerics.tasks import sample
    from theory.head_families import exchangeable_law_from_reads

    from .regimes import regime_config

    config = regime_config("lazy", d=plan.d, N=plan.N, P=plan.P, depth=1, seed=0, a=a, b=b, k=plan.k)
    model = get_model(config.model)
    spectrum = config.spectrum()
    L = np.asarray(depths, dtype=np.float64)
    out: dict = {key: [] for key in ("fixed", "refit", "law_plateau", "law_c", "refit_plateau", "refit_c", "refit_shift")}
    for draw in range(draws):
        rng = np.random.default_rng([seed, int(round(a * 1000)), int(round(b * 1000)), draw])
        params = model.init_params(plan.d, plan.N, layers, rng, dtype=np.float32, **config.init_options)
        gain = float((params["W_o"] @ params["W_v"] @ params["W_y"]).item())
        batch = sample(config.task, spectrum, plan.P, contexts, rng, k=plan.k, dtype=np.float32, stream=plan.stream)
        reads = np.concatenate([np.asarray(model.forward(params, batch.slice(i, min(i + 256, contexts)))
                                           .layer_predictors, dtype=np.float64) / gain
                                for i in range(0, contexts, 256)], axis=1).T  # (contexts, layers): p_ℓ·y
        law = exchangeable_law_from_reads(reads, np.asarray(batch.target, dtype=np.float64))
        m = law.moments
        for key, value in (("fixed", law.fixed_gain_loss(L, gain=1.0)), ("refit", law.loss(L)),
                           ("law_plateau", m["s"] - 2 * m["h"] + m["q"]), ("law_c", m["v"]),
                           ("refit_plateau", law.plateau), ("refit_c", law.coefficient), ("refit_shift", law.shift)):
            out[key].append(value)
    return {key: np.asarray(value) for key, value in out.items()} | {"layers": layers, "contexts": contexts}


def lazy_checks(contrasts, laws: dict, plan: Plan, *, rng=0) -> tuple[list, list]:
    """``(rows, fits)``: :class:`LazyRow` per spectrum and depth, :class:`LazyFit` per spectrum of ``laws``.

    ``laws``: ``(a, b) -> (depths, lazy_law(...))``. The trained curve: every depth with a lazy contrast of
    every seed of the main setting; its WLS fit's SEs come from refitting each joint bootstrap replicate.

    Notes
    -----
    No example: it needs the contrast runs.
    """
    rng = np.random.default_rng(rng)
    rows, fits = [], []
    for (a, b), (law_depths, law) in laws.items():
        runs = {(c.depth, c.seed): c.errors for c in contrasts
                if c.recipe == "lazy" and c.setting[:2] == (a, b) and plan.is_main(a, b, c.setting[5], c.setting[2])}
        seeds = sorted({s for _, s in runs})
        depths = [L for L in law_depths if seeds and all((L, s) in runs for s in seeds)]
        if not depths:
            continue
        cube = np.asarray([[runs[L, s] for s in seeds] for L in depths], dtype=np.float64)
        means = cube.mean(axis=(1, 2))
        boot = replicates(cube, rng, BOOTSTRAP)
        ses = boot.std(axis=0, ddof=1)
        index = [list(law_depths).index(L) for L in depths]
        fixed, fixed_se = mean_se(law["fixed"][:, index], axis=0)
        refit, refit_se = mean_se(law["refit"][:, index], axis=0)
        for i, L in enumerate(depths):
            rows.append(LazyRow(a, b, int(L), len(seeds), float(means[i]), float(ses[i]), float(fixed[i]),
                                float(fixed_se[i]), float(refit[i]), float(refit_se[i])))
        plateau, c, _ = fit_inverse_depth(depths, means, ses)
        replicate_fits = np.array([fit_inverse_depth(depths, rep, ses)[:2] for rep in boot])
        p_se, c_se = replicate_fits.std(axis=0, ddof=1)
        consts = [float(v) for key in ("law_plateau", "law_c", "refit_plateau", "refit_c")
                  for v in mean_se(law[key], axis=0)]
        fits.append(LazyFit(a, b, plateau, float(p_se), c, float(c_se), *consts, float(np.mean(law["refit_shift"])),
                            int(law["fixed"].shape[0]), int(law["layers"]), int(law["contexts"])))
    return rows, fits


def check_results_dir(out_dir, name: str = "out_dir", *, certified_dir=None) -> Path:
    """``out_dir`` as a path if it is a writable results directory holding the certified study's contrast runs.

    The checks run before any Monte Carlo (the lazy heads' law takes CPU minutes): ``out_dir`` must be a
    writable directory, and the certified study's lazy contrast runs (``certified_dir/contrasts``, default
    ``out_dir/certified/contrasts``) must be there, since every row of the page compares one of them.

    Raises
    ------
    ValueError
        Naming ``name``, the path and what it lacks.

    Examples
    --------
    >>> check_results_dir("/no/such/results", "--out")
    Traceback (most recent call last):
    ...
    ValueError: --out '/no/such/results' holds no certified study: '/no/such/results/certified/contrasts' is not a directory (a results directory is docs/results of a checkout, or $IDEPTH_RESULTS, holding certified/contrasts)
    """
    from numerics.io import check_output_dir

    out = check_output_dir(out_dir, name)
    runs = (Path(certified_dir) if certified_dir is not None else out / "certified") / "contrasts"
    if not runs.is_dir():
        raise ValueError(f"{name} {str(out)!r} holds no certified study: {str(runs)!r} is not a directory (a results "
                         "directory is docs/results of a checkout, or $IDEPTH_RESULTS, holding certified/contrasts)")
    if not any(runs.iterdir()):
        raise ValueError(f"{name} {str(out)!r} holds no certified study: {str(runs)!r} is empty")
    return out


def write_expressible_checks(out_dir=None, *, progress=print, certified_dir=None, expressible_dir=None,
                             spectra=TABLE1_SPECTRA, law_draws: int = LAW_DRAWS, law_layers: int = LAW_LAYERS,
                             law_contexts: int = LAW_CONTEXTS, plan: Plan | None = None) -> list[Path]:
    """Compute the lazy recipe's check and write the page, its figure and two CSV tables; nothing is written on failure.

    ``certified_dir``: the certified study's files (default ``out_dir/certified``: its ``contrasts/``);
    ``expressible_dir``: the shipped U_L (default ``theory/data/expressible``), at whose depths the law is drawn.
    A spectrum without a shipped U_L is left out and named on the page. Returns the written paths.

    Notes
    -----
    No example: it reads the study's files (``tests/test_expressible_checks.py``).
    """
    from theory.expressible import ExpressibleLoss

    from .expressible import SETTINGS, data_dir, file_name

    if out_dir is None:
        from ..shipped import shipped_path

        out_dir = shipped_path()
    out_dir = check_results_dir(out_dir, "out_dir", certified_dir=certified_dir)  # before any Monte Carlo
    plan = plan or Plan()
    certified_dir = Path(certified_dir) if certified_dir is not None else out_dir / "certified"
    expressible_dir = Path(expressible_dir) if expressible_dir is not None else data_dir()
    contrasts = collect_contrasts(certified_dir / "contrasts")  # a corrupt run is named before anything is done
    expressible, missing = {}, []
    for a, b in spectra:
        path = expressible_dir / file_name(a, b, SETTINGS)
        if path.is_file():
            expressible[float(a), float(b)] = ExpressibleLoss.from_dict(json.loads(path.read_text())["result"])
        else:
            missing.append((float(a), float(b)))
    progress(f"U_L shipped at {len(expressible)} of {len(spectra)} spectra" +
             (f" (missing: {', '.join(f'(a, b) = {spectrum_label(a, b)}' for a, b in missing)})" if missing else ""))
    progress(f"certified study: {len(contrasts)} contrast runs")
    laws = {}
    for (a, b), loss in expressible.items():
        progress(f"(a, b) = {spectrum_label(a, b)}: the lazy initial heads' law ({law_draws} draws of {law_layers} layers on "
                 f"{law_contexts} contexts)")
        laws[a, b] = (loss.depths, lazy_law(a, b, plan, loss.depths, layers=law_layers, draws=law_draws,
                                            contexts=law_contexts))
    lazy_rows, fits = lazy_checks(contrasts, laws, plan, rng=1)
    # everything computed and drawn before anything is written; then all files replace the old ones together
    page = expressible_markdown(lazy_rows, fits, missing=missing)
    fig = draw_expressible_figure(lazy_rows)
    try:
        written = write_together(out_dir, {FIGURE: lambda path: savefig(fig, path, dpi=100),
                                           LAZY_CSV: csv_text(lazy_rows), LAZY_FIT_CSV: csv_text(fits), PAGE: page})
    finally:
        pyplot().close(fig)
    for path in written:
        progress(f"wrote {path}")
    return written
