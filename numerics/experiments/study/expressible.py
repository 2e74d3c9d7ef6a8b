"""The best expressible loss ``U_L`` at the paper's Table 1 spectra, computed once and shipped.

:func:`theory.expressible.best_expressible` is minutes of CPU per spectrum at population scale
(three independent sets of 2^15, 2^17 and 2^17 contexts -- fit, selection, report -- and a dictionary of 832 heads), so its
results for the Table 1 spectra at the certified study's sizes (d = 16, P = 64, top-2) are
computed by :func:`run_expressible` (``idepth expressible run``), one JSON file per spectrum in
``theory/data/expressible/`` (package data: ``theory.predict_loss`` reads them). The run is
resumable: a spectrum whose file exists with the same settings is not recomputed, and each file
also holds the exchangeable laws of three head families at that spectrum
(:func:`theory.expressible.family_laws`).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from numerics.io import write_json
from theory.paper import INFERRED_SOFTMAX_SIZES, TABLE1_SPECTRA

__all__ = ["ExpressibleSettings", "SETTINGS", "TABLE1_SPECTRA", "run_expressible", "data_dir", "file_name"]


@dataclass(frozen=True)
class ExpressibleSettings:
    """What one shipped ``U_L`` file is computed with (its file is recomputed when these change).

    The sizes are the certified study's (:data:`theory.paper.INFERRED_SOFTMAX_SIZES`); the set sizes give a
    paired SE of ``U_L − B_L`` of at most 0.002 at every depth.

    Examples
    --------
    >>> ExpressibleSettings().depths[-1], ExpressibleSettings(n_fit=1024).n_fit
    (128, 1024)
    """

    d: int = INFERRED_SOFTMAX_SIZES["d"]
    P: int = INFERRED_SOFTMAX_SIZES["P"]
    k: int = 2
    depths: tuple = (1, 2, 4, 8, 16, 32, 64, 128)
    n_fit: int = 1 << 15
    n_select: int = 1 << 17
    n_report: int = 1 << 18  # sized for a paired SE of U_L − B_L ≤ 0.002 at every depth (tests/test_expressible*.py)
    pool: int = 64
    sigmas: tuple = (0.25, 0.5, 1.0)
    n_class_temperatures: int = 4
    seed: int = 2030


#: the shipped settings (the certified study's sizes)
SETTINGS = ExpressibleSettings()




def data_dir() -> Path:
    """``theory/data/expressible`` of this installation (:data:`theory.expressible.SHIPPED_DIR`).

    Examples
    --------
    >>> data_dir().parts[-2:]
    ('data', 'expressible')
    """
    import theory
    from theory.expressible import SHIPPED_DIR

    return Path(theory.__file__).parent.joinpath(*SHIPPED_DIR)


def file_name(a: float, b: float, settings: ExpressibleSettings = SETTINGS) -> str:
    """The file of one spectrum (:func:`theory.expressible.data_file_name`).

    Examples
    --------
    >>> file_name(0, 0.25)
    'a0_b0.25_d16_P64_k2.json'
    """
    from theory.expressible import data_file_name

    return data_file_name(a, b, settings.d, settings.P, settings.k)


def run_expressible(spectra, out: Path | None = None, settings: ExpressibleSettings = SETTINGS, *,
                    progress=print, recompute: bool = False) -> list[Path]:
    """Compute and write ``U_L`` for each ``(a, b)`` in ``spectra`` (resumable: done files are kept).

    Parameters
    ----------
    spectra : sequence of (a, b)
    out : path, optional
        Directory (default :func:`data_dir`).
    settings : ExpressibleSettings
    progress : callable
        Receives one line per stage.
    recompute : bool
        Recompute files that exist with the same settings.

    Returns
    -------
    list of Path
        The files, in ``spectra`` order.

    Notes
    -----
    No example: it takes CPU minutes per spectrum (``idepth expressible run``; the shipped files are
    checked by ``tests/test_expressible_shipped.py``).
    """
    from theory import PowerLawSpectrum, __version__
    from theory.expressible import best_expressible, family_laws
    from theory.mixture_limit import shipped_infinite_mixture

    out = Path(out) if out is not None else data_dir()
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for a, b in spectra:
        path = out / file_name(a, b, settings)
        say = (lambda message, a=a, b=b: progress(f"(a, b) = ({a:g}, {b:g}): {message}"))
        stored = json.loads(path.read_text()) if path.exists() and not recompute else {}
        if stored.get("settings") != _settings_dict(settings):
            stored = {}
        spectrum = PowerLawSpectrum(a, b, settings.d)
        if "result" not in stored:
            start = time.process_time()
            result = best_expressible(settings.depths, spectrum, settings.P, settings.k, n_fit=settings.n_fit,
                                      n_select=settings.n_select, n_report=settings.n_report, pool=settings.pool,
                                      sigmas=settings.sigmas, n_class_temperatures=settings.n_class_temperatures,
                                      measure=shipped_infinite_mixture(spectrum, settings.P, settings.k),
                                      rng=settings.seed, progress=say)
            stored = {"a": a, "b": b, "settings": _settings_dict(settings), "result": result.to_dict(),
                      "cpu_seconds": time.process_time() - start, "package_version": __version__}
            write_json(path, stored)
        if "laws" not in stored:
            say("exchangeable laws of the head families")
            start = time.process_time()
            stored["laws"] = family_laws(spectrum, settings.P, settings.k, depth=max(settings.depths),
                                         rng=settings.seed + 1)
            stored["laws_cpu_seconds"] = time.process_time() - start
            write_json(path, stored)
        say(f"done ({path.name})")
        written.append(path)
    return written


def _settings_dict(settings: ExpressibleSettings) -> dict:
    return json.loads(json.dumps(asdict(settings)))
