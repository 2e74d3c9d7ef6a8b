"""The converged study: the controlled softmax model trained to convergence at the inferred sizes.

The question (issue 11): does the paper's nonlinear model show ``R_L ≈ L0 + c/L`` *at
convergence*, at the sizes its plateaus imply (``idepth study sizes``: d = 16 strongly,
P in 32-96; the study uses :data:`STUDY_SIZES`)? Every choice the paper leaves open is a
field of :class:`ConvergedPlan` (documented there). The rules:

* **Each run converges on its own.** A run of cap ``S`` steps (warm-up then cosine decay,
  no early stop) counts as *converged* when its held-out loss changed by less than its own
  standard error over the last quarter of training: ``|R(3S/4) − R(S)| < SE(R(S))``. A run
  that is not converged is trained again from scratch with the cap doubled (a new run in
  the store), up to ``max_doublings`` times; the CSV records the steps and the flag of the
  last attempt, never a run dropped for being inconvenient.
* **Common held-out contexts.** All runs of one spectrum (every depth, seed, width and
  norm) are evaluated on one held-out set (``eval_seed`` from the spectrum,
  :func:`eval_seed_of`), so ``R_1 − R_L`` of one seed is a paired difference over the same
  contexts; its SE comes from the per-context differences (and, over seeds, from the
  seed-to-seed spread, whichever is larger).
* **Next to what softmax heads can express.** ``B_1``, ``B_L`` and ``B_∞`` over the model's
  own pre-norm similarity at its width (:mod:`theory.softmax_bounds`, independent draws,
  cached by :mod:`numerics.experiments.bounds`).

Every run goes through the one sweep runner and the resumable store, so an interrupted
study (Ctrl-C, SIGKILL, a session that ends) continues where it stopped:
``idepth study converged --store DIR``. :func:`write_study_csv` writes one row per run,
:func:`converged_markdown` the docs page (from the CSV alone: ``--report-only``).
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import math
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from numerics.io import make_output_dir, save_figure, write_json, write_text
from numerics.train import TrainConfig
from theory.validation import check_positive_int
from theory.paper import paper_table

__all__ = [
    "CSV_COLUMNS",
    "STUDY_SIZES",
    "TABLE1_SPECTRA",
    "TABLE4_SPECTRA",
    "group_stats",
    "gap_fit",
    "training_failures",
    "draw_decomposition_figure",
    "EXTRA_SPECTRA",
    "ConvergedPlan",
    "RunSpec",
    "converged_markdown",
    "eval_seed_of",
    "is_converged",
    "last_quarter_change",
    "paired_depth_gains",
    "read_study_csv",
    "run_converged_study",
    "study_rows",
    "write_study_csv",
]

#: (d, P) of the study: d = 16 is where the χ² of ``idepth study sizes`` is smallest by far;
#: P = 64 is inside the region the data allow (32-96) and the size of the paper's prototype
STUDY_SIZES = {"d": 16, "P": 64}
#: the seven (a, b) of the paper's Table 1
TABLE1_SPECTRA = tuple((float(r["a"]), float(r["b"])) for r in paper_table("table1"))
#: the (a, b, k) of the paper's Table 4 (top-2 and top-16)
TABLE4_SPECTRA = tuple((float(r["a"]), float(r["b"]), int(r["k"])) for r in paper_table("table4"))
#: (a, b, k) the study also ran that are in none of the paper's nonlinear tables (kept: they are data)
EXTRA_SPECTRA = ((1.0, 0.5, 2), (0.5, 1.0, 2))
#: the columns of ``docs/results/converged-study.csv`` (one row per run)
CSV_COLUMNS = ("model", "norm", "a", "b", "k", "d", "N", "P", "depth", "seed", "steps", "converged", "R_L", "R_L_se",
               "A_L", "C_L", "change_last_quarter", "attempts", "delta_R1", "delta_R1_se", "eval_size", "eval_seed",
               "batch_size", "learning_rate", "cpu_time", "content_hash", "doubling_gain", "doubling_gain_se")
#: columns a table written before they existed may lack (read as NaN)
OPTIONAL_COLUMNS = ("doubling_gain", "doubling_gain_se")


@dataclass(frozen=True)
class RunSpec:
    """One run of the study without its step cap: model, spectrum, width, depth, seed.

    Examples
    --------
    >>> RunSpec("nonlinear", 0.0, 0.0, 32, 4, 1).depth
    4
    """

    model: str
    a: float
    b: float
    N: int
    depth: int
    seed: int
    k: int = 2


@dataclass(frozen=True)
class ConvergedPlan:
    """What the converged study trains (every choice the paper leaves open is a field).

    Attributes
    ----------
    d, P, k : int
        Input dimension, context length, top-k (:data:`STUDY_SIZES`, k = 2 as Table 1).
    spectra : tuple of (a, b)
        Spectra at ``N = width_factor · d`` with every depth and top-``k`` (default Table 1's seven).
    table4_spectra : tuple of (a, b, k)
        Further spectra with their own top-k, every depth, ``N = width_factor · d`` (default
        :data:`TABLE4_SPECTRA`, Table 4's top-2 and top-16 rows, then :data:`EXTRA_SPECTRA`).
    depths : tuple of int
        Depths of every spectrum.
    deep_depths : tuple of int
        Extra depths at the contrast spectrum (default 256 at (0, 0)).
    seeds : tuple of int
    width_factor : int
        ``N = width_factor · d`` for the main runs (default 2).
    contrast_spectrum : (a, b) or None
        Where the contrasts run: ``N = d`` (LayerNorm removes one input direction there) and
        the RMSNorm model ``nonlinear_rms`` at ``N = width_factor · d``, all depths.
    confirm_depths : tuple of int
        At the contrast spectrum (main model, ``N = width_factor · d``), these depths are also
        trained with twice the cap at which they converged: the paired gain of doubling
        (``doubling_gain`` in the CSV) says whether the rule's "converged" holds up.
    batch_size, learning_rate, warmup_steps : int, float, int
        Adam with fresh batches every step, warm-up then cosine decay to 0 over the cap.
    base_steps, max_doublings : int
        First step cap and how many times a run that has not converged is retrained with the
        cap doubled (default 6000: the (0, 0) L = 1 model reaches its single-head bound only
        after about 6000 steps; the shipped table was trained with it).
    eval_size : int
        Held-out contexts (common to all runs of a spectrum).
    evals_per_run : int
        Evaluations per run (the last quarter holds a quarter of them).
    dtype : str

    Examples
    --------
    >>> plan = ConvergedPlan(spectra=((0.0, 0.0),), depths=(1, 2), seeds=(0,), contrast_spectrum=None, deep_depths=(),
    ...                      table4_spectra=())
    >>> [(s.model, s.N, s.depth) for s in plan.runs()]
    [('nonlinear', 32, 1), ('nonlinear', 32, 2)]
    """

    d: int = STUDY_SIZES["d"]
    P: int = STUDY_SIZES["P"]
    k: int = 2
    spectra: tuple = TABLE1_SPECTRA
    table4_spectra: tuple = TABLE4_SPECTRA + EXTRA_SPECTRA
    depths: tuple = (1, 2, 4, 8, 16, 32, 64, 128)
    deep_depths: tuple = (256,)
    seeds: tuple = (0, 1, 2)
    width_factor: int = 2
    contrast_spectrum: tuple | None = (0.0, 0.0)
    confirm_depths: tuple = (1, 16, 128)
    batch_size: int = 256
    learning_rate: float = 1e-3
    warmup_steps: int = 200
    base_steps: int = 6000
    max_doublings: int = 3
    eval_size: int = 4096
    evals_per_run: int = 16
    dtype: str = "float32"

    def __post_init__(self) -> None:
        for name in ("d", "P", "k", "width_factor", "batch_size", "base_steps", "eval_size", "evals_per_run"):
            check_positive_int(name, getattr(self, name))
        for k in (self.k, *(spec[2] for spec in self.table4_spectra)):
            check_positive_int("k", k)
            if k > self.P:
                raise ValueError(f"k must be <= P; got k={k}, P={self.P}")
        if self.evals_per_run < 4:
            raise ValueError(f"evals_per_run must be >= 4 (the last quarter needs an evaluation); got {self.evals_per_run}")
        if self.max_doublings < 0:
            raise ValueError(f"max_doublings must be >= 0; got {self.max_doublings}")
        if self.base_steps % self.evals_per_run:
            raise ValueError(f"base_steps ({self.base_steps}) must be a multiple of evals_per_run ({self.evals_per_run})")
        if self.base_steps <= self.warmup_steps:
            raise ValueError(f"base_steps ({self.base_steps}) must exceed warmup_steps ({self.warmup_steps})")
        for depth in (*self.depths, *self.deep_depths):
            check_positive_int("depth", depth)
        if not self.spectra or not self.depths or not self.seeds:
            raise ValueError("spectra, depths and seeds must not be empty")

    @property
    def N(self) -> int:
        """The main runs' width ``width_factor · d``."""
        return self.width_factor * self.d

    def runs(self) -> list[RunSpec]:
        """Every run of the plan (main grid, then the deep depths and the contrasts)."""
        specs = [RunSpec("nonlinear", float(a), float(b), self.N, L, s, self.k) for a, b in self.spectra
                 for L in self.depths for s in self.seeds]
        if self.contrast_spectrum is not None:
            a, b = map(float, self.contrast_spectrum)
            specs += [RunSpec("nonlinear", a, b, self.N, L, s) for L in self.deep_depths for s in self.seeds]
            if self.width_factor != 1:
                specs += [RunSpec("nonlinear", a, b, self.d, L, s) for L in self.depths for s in self.seeds]
            specs += [RunSpec("nonlinear_rms", a, b, self.N, L, s) for L in self.depths for s in self.seeds]
        specs += [RunSpec("nonlinear", float(a), float(b), self.N, L, s, int(k)) for a, b, k in self.table4_spectra
                  for L in self.depths for s in self.seeds]
        return list(dict.fromkeys(specs))

    def confirm_specs(self) -> list[RunSpec]:
        """The runs of the doubling check (:attr:`confirm_depths` at the contrast spectrum, every seed)."""
        if self.contrast_spectrum is None:
            return []
        a, b = map(float, self.contrast_spectrum)
        return [RunSpec("nonlinear", a, b, self.N, L, s) for L in self.confirm_depths if L in self.depths
                for s in self.seeds]

    def config(self, spec: RunSpec, steps: int) -> TrainConfig:
        """The :class:`~numerics.train.TrainConfig` of ``spec`` with a cap of ``steps`` (no early stop)."""
        return TrainConfig(
            model=spec.model, task="difficult", k=spec.k, a=spec.a, b=spec.b, d=self.d, N=spec.N, P=self.P,
            depth=spec.depth, seed=spec.seed, batch_size=self.batch_size, max_steps=steps,
            learning_rate=self.learning_rate, schedule="warmup_cosine", warmup_steps=self.warmup_steps,
            eval_size=self.eval_size, eval_every=steps // self.evals_per_run,
            eval_seed=eval_seed_of(spec.a, spec.b, spec.k), tol=0.0, window=steps + 1, dtype=self.dtype,
        )

    def caps(self) -> list[int]:
        """The step caps of the attempts: ``base_steps · 2^i``, ``i = 0 … max_doublings``."""
        return [self.base_steps * 2**i for i in range(self.max_doublings + 1)]

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def eval_seed_of(a: float, b: float, k: int) -> int:
    """The held-out set's seed of a spectrum: one per ``(a, b, k)``, so every depth, seed, width and norm shares it.

    Examples
    --------
    >>> eval_seed_of(0, 0, 2) == eval_seed_of(0.0, 0.0, 2), eval_seed_of(0, 0, 2) != eval_seed_of(0.5, 0, 2)
    (True, True)
    """
    text = f"converged-study held-out a={float(a)!r} b={float(b)!r} k={int(k)}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")


def last_quarter_change(loss_curve: np.ndarray) -> float:
    """``R(S) − R(3S/4)`` of a loss curve ``(n, 2)`` of (step, held-out loss): negative while still improving.

    ``R(3S/4)`` is the evaluation at the first step ``>= 3S/4``.

    Examples
    --------
    >>> last_quarter_change(np.array([[0, 5.0], [50, 3.0], [75, 2.5], [100, 2.4]]))
    -0.10000000000000009
    """
    curve = np.asarray(loss_curve, dtype=np.float64).reshape(-1, 2)
    steps, losses = curve[:, 0], curve[:, 1]
    quarter = np.flatnonzero(steps >= 0.75 * steps[-1])[0]
    return float(losses[-1] - losses[quarter])


def is_converged(loss_curve: np.ndarray, se: float) -> bool:
    """The study's rule: the held-out loss changed by less than its own SE over the last quarter of training.

    Examples
    --------
    >>> curve = np.array([[0, 5.0], [50, 3.0], [75, 2.5], [100, 2.49]])
    >>> is_converged(curve, 0.02), is_converged(curve, 0.005)
    (True, False)
    """
    return abs(last_quarter_change(loss_curve)) < se


# ----------------------------------------------------------------------------- running
def run_converged_study(plan: ConvergedPlan, store_dir, *, workers: int | None = None, progress: bool | None = None,
                        specs: Sequence[RunSpec] | None = None) -> dict:
    """Train the runs of ``plan`` (or ``specs``) until each meets the convergence rule or its last cap, through the store.

    Attempt ``i`` trains the runs still not converged with the cap ``base_steps · 2^i``;
    finished attempts are read back from the store, so calling it again continues the study.

    Returns
    -------
    dict
        :func:`collect_results` of the runs asked for.

    Notes
    -----
    No example: it trains (``tests/test_converged.py`` runs a tiny study).
    """
    from ..grid import Grid
    from ..runner import run
    from ..sweep import run_sweep

    todo = list(plan.runs() if specs is None else specs)
    asked = list(todo)
    for cap in plan.caps():
        if not todo:
            break
        configs = [plan.config(spec, cap) for spec in todo]
        run_sweep(Grid.of(configs), store_dir, workers=workers, progress=progress, runner=run)
        found = collect_results(plan, store_dir, todo)
        todo = [spec for spec in todo if spec in found and found[spec][0].max_steps == cap and not found[spec][3]]
    found = collect_results(plan, store_dir, asked)
    confirm = [plan.config(spec, 2 * found[spec][0].max_steps) for spec in plan.confirm_specs() if spec in found]
    if confirm:  # the doubling check: the same runs with twice the cap they converged at
        run_sweep(Grid.of(confirm), store_dir, workers=workers, progress=progress, runner=run)
    return found


def collect_results(plan: ConvergedPlan, store_dir, specs: Sequence[RunSpec] | None = None) -> dict:
    """What the store holds of each run: ``{RunSpec: (TrainConfig, record, attempts, converged)}``.

    For each run the attempts are read in the order of :meth:`ConvergedPlan.caps`; the first
    converged one is the run's result, else the last one present. Runs with no finished
    attempt are absent.
    """
    from ..store import load_results, store_path

    if not store_path(store_dir).is_file():
        return {}
    records = {r["hash"]: r for r in load_results(store_dir, status="done")}
    out = {}
    for spec in plan.runs() if specs is None else specs:
        for attempt, cap in enumerate(plan.caps(), start=1):
            cfg = plan.config(spec, cap)
            record = records.get(cfg.content_hash())
            if record is None:
                break
            converged = is_converged(_curve(store_dir, record["hash"]), record["metrics"]["R_L_se"])
            out[spec] = (cfg, record, attempt, converged)
            if converged:
                break
    return out


def _curve(store_dir, run_hash: str) -> np.ndarray:
    from ..store import load_arrays

    return load_arrays(store_dir, run_hash, ["loss_curve"])["loss_curve"]


def _squared_errors(store_dir, cfg: TrainConfig, record, targets: dict) -> np.ndarray:
    from numerics.train import evaluation_batch

    from ..store import load_arrays

    key = (cfg.a, cfg.b, cfg.k, cfg.eval_seed)
    if key not in targets:
        targets[key] = np.asarray(evaluation_batch(cfg).target, dtype=np.float64)
    prediction = load_arrays(store_dir, record["hash"], ["eval_prediction"])["eval_prediction"]
    return (np.asarray(prediction, dtype=np.float64) - targets[key]) ** 2


def paired_depth_gains(errors: Mapping[int, np.ndarray]) -> dict:
    """``R_1 − R_L`` of one (spectrum, width, norm, seed) and its SE, paired over the common held-out contexts.

    ``errors`` maps depth to per-context squared errors (the same contexts in the same order).

    Examples
    --------
    >>> e = {1: np.array([2.0, 3.0, 4.0]), 2: np.array([1.5, 2.0, 4.0])}
    >>> gains = paired_depth_gains(e)
    >>> round(gains[2][0], 6), round(gains[2][1], 6), gains[1]
    (0.5, 0.288675, (0.0, 0.0))
    """
    if 1 not in errors:
        return {}
    out = {}
    for depth, e in errors.items():
        diff = errors[1] - e
        out[depth] = (float(diff.mean()), float(diff.std(ddof=1) / math.sqrt(diff.size)) if diff.size > 1 else math.nan)
    return out


def study_rows(plan: ConvergedPlan, results: Mapping, store_dir) -> list[dict]:
    """One CSV row (:data:`CSV_COLUMNS`) per run of ``results`` (from :func:`collect_results`).

    ``delta_R1`` is ``R_1 − R_L`` of the same model, width, spectrum and seed, paired over the
    common held-out contexts (:func:`paired_depth_gains`); ``converged`` is the study's rule.

    Notes
    -----
    No example: it needs a store of trained runs (``tests/test_converged.py``).
    """
    from ..store import load_results

    targets: dict = {}
    errors: dict = {}
    for spec, (cfg, record, *_) in results.items():
        errors[spec] = _squared_errors(store_dir, cfg, record, targets)
    done = {r["hash"]: r for r in load_results(store_dir, status="done")}
    rows = []
    for spec, (cfg, record, attempts, _) in results.items():
        m = record["metrics"]
        group = {s.depth: errors[s] for s in results if (s.model, s.a, s.b, s.k, s.N, s.seed) == (spec.model, spec.a, spec.b, spec.k, spec.N, spec.seed)}
        gain, gain_se = paired_depth_gains(group).get(spec.depth, (math.nan, math.nan))
        change = last_quarter_change(_curve(store_dir, record["hash"]))
        doubled = done.get(plan.config(spec, 2 * cfg.max_steps).content_hash())
        doubling, doubling_se = math.nan, math.nan
        if doubled is not None:  # paired over the same held-out contexts
            diff = errors[spec] - _squared_errors(store_dir, cfg, doubled, targets)
            doubling, doubling_se = float(diff.mean()), float(diff.std(ddof=1) / math.sqrt(diff.size))
        from numerics.models import get_model

        rows.append({
            "model": spec.model, "norm": get_model(spec.model).NORM, "a": spec.a, "b": spec.b, "k": cfg.k, "d": cfg.d,
            "N": spec.N, "P": cfg.P, "depth": spec.depth, "seed": spec.seed, "steps": int(m["steps"]),
            "converged": abs(change) < m["R_L_se"], "R_L": m["R_L"], "R_L_se": m["R_L_se"], "A_L": m["A_L"],
            "C_L": m["C_L"], "change_last_quarter": change, "attempts": attempts, "delta_R1": gain,
            "delta_R1_se": gain_se, "eval_size": cfg.eval_size, "eval_seed": cfg.eval_seed,
            "batch_size": cfg.batch_size, "learning_rate": cfg.learning_rate, "cpu_time": m.get("cpu_time", math.nan),
            "content_hash": record["hash"], "doubling_gain": doubling, "doubling_gain_se": doubling_se,
        })
    rows.sort(key=lambda r: (r["model"], r["k"], r["N"], r["a"], r["b"], r["depth"], r["seed"]))
    return rows


# ----------------------------------------------------------------------------- the CSV
def _format(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)
    return str(value)


def write_study_csv(rows: Sequence[Mapping], path, *, provenance: Mapping | None = None) -> Path:
    """Write ``rows`` to ``path`` (atomically; :data:`CSV_COLUMNS`) and ``provenance`` beside it (``.provenance.json``).

    Examples
    --------
    >>> import tempfile, os
    >>> row = dict.fromkeys(CSV_COLUMNS, 0.5) | {"model": "nonlinear", "norm": "layer", "converged": False}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = write_study_csv([row], os.path.join(tmp, "s.csv"), provenance={"command": "x"})
    ...     open(path).read().splitlines()[0].split(",")[:3], os.path.isfile(os.path.join(tmp, "s.provenance.json"))
    (['model', 'norm', 'a'], True)
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        writer.writerow([_format(row[c]) for c in CSV_COLUMNS])
    path = Path(path)
    write_text(path, buffer.getvalue())
    if provenance is not None:
        write_json(path.with_suffix(".provenance.json"), dict(provenance))
    return path


def read_study_csv(path) -> list[dict]:
    """Rows of a study CSV with numbers and booleans parsed.

    Examples
    --------
    >>> import tempfile, os
    >>> row = dict.fromkeys(CSV_COLUMNS, 1.0) | {"model": "nonlinear", "norm": "layer", "converged": True,
    ...                                         "content_hash": "x"}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = write_study_csv([row], os.path.join(tmp, "s.csv"))
    ...     back = read_study_csv(os.path.join(tmp, "s.csv"))[0]
    >>> back["converged"], back["R_L"], back["depth"]
    (True, 1.0, 1)
    """
    integers = {"k", "d", "N", "P", "depth", "seed", "steps", "attempts", "eval_size", "eval_seed", "batch_size"}
    text = {"model", "norm", "content_hash"}
    rows = []
    with open(path, newline="") as handle:
        for raw in csv.DictReader(handle):
            raw = {**raw, **{key: "nan" for key in OPTIONAL_COLUMNS if key not in raw}}
            row = {}
            for key, value in raw.items():
                if key in text:
                    row[key] = value
                elif key == "converged":
                    row[key] = value == "true"
                elif key in integers:
                    row[key] = int(float(value))
                else:
                    row[key] = float(value)
            rows.append(row)
    return rows


def provenance(plan: ConvergedPlan, command: str, elapsed: float | None = None) -> dict:
    """Package version, command, date, machine and the plan of a study CSV."""
    import datetime
    import os

    from theory import __version__

    return {"package_version": __version__, "command": command,
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                        "cpu_count": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__},
            "elapsed_seconds": elapsed, "plan": plan.to_dict()}


# ----------------------------------------------------------------------------- the report
def group_stats(rows: Sequence[Mapping]) -> dict:
    """Mean over seeds of R_L, A_L, C_L and the paired gain, each with its SE, per (model, N, a, b, k, depth).

    The SE is ``sqrt(max(between-seed variance, mean within-run SE²) / n)``: a few seeds that
    happen to agree cannot make a mean look more precise than its held-out set allows.

    References
    ----------
    Paper eqs. (12), (61)-(63).

    Examples
    --------
    >>> rows = [{"model": "nonlinear", "N": 8, "a": 0.0, "b": 0.0, "k": 2, "depth": 1, "R_L": r, "R_L_se": 0.01,
    ...          "A_L": r, "C_L": float("nan"), "delta_R1": 0.0, "delta_R1_se": float("nan"), "converged": True,
    ...          "steps": 100} for r in (1.0, 1.2)]
    >>> stats = group_stats(rows)[("nonlinear", 8, 0.0, 0.0, 2, 1)]
    >>> round(stats["R_L"], 6), round(stats["R_L_se"], 6), stats["n"]
    (1.1, 0.1, 2)
    """
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["model"], r["N"], r["a"], r["b"], r["k"], r["depth"]), []).append(r)
    out = {}
    for key, rs in groups.items():
        n = len(rs)

        def mean_se(values, within, n=n):
            values = np.asarray(values, dtype=np.float64)
            between = values.var(ddof=1) if n > 1 else 0.0
            within_var = float(np.mean(np.square(within))) if len(within) else 0.0
            return float(values.mean()), math.sqrt(max(between, within_var) / n)

        R, R_se = mean_se([r["R_L"] for r in rs], [r["R_L_se"] for r in rs])
        gain, gain_se = mean_se([r["delta_R1"] for r in rs], [r["delta_R1_se"] for r in rs if math.isfinite(r["delta_R1_se"])])
        out[key] = {"n": n, "R_L": R, "R_L_se": R_se, "A_L": float(np.mean([r["A_L"] for r in rs])),
                    "C_L": float(np.mean([r["C_L"] for r in rs])), "delta_R1": gain, "delta_R1_se": gain_se,
                    "converged": sum(bool(r["converged"]) for r in rs), "steps": sorted({r["steps"] for r in rs})}
    return out


def _num(value: float) -> str:
    """A table cell: 4 decimals, or a dash where the quantity is undefined (C_L at L = 1)."""
    return "—" if not math.isfinite(value) else f"{value:.4f}"


def _bound_at(bounds, depth: int):
    """``(B_L, SE)`` of a :class:`theory.softmax_bounds.SoftmaxBounds` at ``depth``, or None."""
    if bounds is None or depth not in bounds.depths:
        return None
    i = list(bounds.depths).index(depth)
    return bounds.average[i], bounds.average_se[i]


def converged_markdown(rows: Sequence[Mapping], bounds: Mapping | None = None, *, provenance_info: Mapping | None = None) -> str:
    """The docs page of the study, from its CSV rows (and the bounds ``{(model, N, a, b, k): SoftmaxBounds}``).

    Examples
    --------
    >>> row = dict.fromkeys(CSV_COLUMNS, 1.0) | {"model": "nonlinear", "norm": "layer", "converged": True, "N": 32,
    ...                                         "depth": 1, "steps": 4000, "seed": 0, "delta_R1_se": float("nan")}
    >>> print(converged_markdown([row]).splitlines()[4])
    Runs converged by the study's rule (held-out change over the last quarter < its own SE): **1 of 1**.
    """
    stats = group_stats(rows)
    lines = ["# The converged softmax study", ""]
    if provenance_info:
        lines += [f"Generated from `converged-study.csv` ({len(rows)} runs; package {provenance_info.get('package_version')}, "
                  f"{provenance_info.get('date')}, last written by `{provenance_info.get('command')}`).", ""]
    lines += ["Regenerate this page from the CSV: `idepth study converged --out docs/results --report-only`; continue or "
              "extend the study (resumable): `idepth study converged --out docs/results --store DIR`. The method and "
              "its rules: :mod:`numerics.experiments.study.converged`.".replace(":mod:", ""), ""]
    n_conv = sum(bool(r["converged"]) for r in rows)
    lines += [f"Runs converged by the study's rule (held-out change over the last quarter < its own SE): "
              f"**{n_conv} of {len(rows)}**.", ""]
    keys = sorted({k[:5] for k in stats})
    for model, N, a, b, k in keys:
        lines += [f"## {model}, top-{k}, N = {N}, (a, b) = ({a:g}, {b:g})", ""]
        bnd = None if bounds is None else bounds.get((model, N, a, b, k))
        lines += ["| L | seeds (converged) | steps | R_L ± SE | R_1 − R_L ± paired SE | B_L ± SE | R_L / B_L − 1 | C_L | A_L − C_L |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for depth in sorted(key[5] for key in stats if key[:5] == (model, N, a, b, k)):
            s = stats[(model, N, a, b, k, depth)]
            B = _bound_at(bnd, depth)
            B_text = f"{B[0]:.4f} ± {B[1]:.4f}" if B else "—"
            ratio = f"{s['R_L'] / B[0] - 1:+.2%}" if B else "—"
            lines.append(f"| {depth} | {s['n']} ({s['converged']}) | {'/'.join(map(str, s['steps']))} | "
                         f"{s['R_L']:.4f} ± {s['R_L_se']:.4f} | {s['delta_R1']:+.4f} ± {s['delta_R1_se']:.4f} | {B_text} | "
                         f"{ratio} | {_num(s['C_L'])} | {_num(s['A_L'] - s['C_L'])} |")
        lines += [""] + _group_findings(rows, stats, (model, N, a, b, k), bnd) + [""]
    lines += _targets(rows, stats, bounds)
    return "\n".join(lines)


def _targets(rows, stats, bounds) -> list[str]:
    """The issue's targets, computed from the rows: L = 1 against B_1, the deepest model against B_∞, the paired SE."""
    if bounds is None:
        return []
    main = sorted({k[:5] for k in stats if k[0] == "nonlinear" and k[1] > min(r["d"] for r in rows)})
    if not main:
        return []
    out = ["## Targets", "", "| model, top-k, N, (a, b) | R_1 / B_1 − 1 | predict_loss(1) / R_1 − 1 (± 1.96 SE) | "
           "deepest L | R_L / B_∞ − 1 | max paired SE of R_1 − R_L | (B_1 − B_∞)/4 |", "|---|---|---|---|---|---|---|"]
    for key in main:
        bnd = bounds.get(key)
        depths = sorted(k[5] for k in stats if k[:5] == key)
        if bnd is None or 1 not in depths:
            continue
        one, deep = stats[key + (1,)], stats[key + (depths[-1],)]
        ses = [stats[key + (L,)]["delta_R1_se"] for L in depths if L != 1]
        model, N, a, b, k = key
        predicted, half_width = _predicted_single(a, b, k, rows)
        out.append(f"| {model}, top-{k}, {N}, ({a:g}, {b:g}) | {one['R_L'] / bnd.single - 1:+.2%} | "
                   f"{predicted / one['R_L'] - 1:+.2%} (± {half_width / one['R_L']:.1%}) | {depths[-1]} | "
                   f"{deep['R_L'] / bnd.mixture - 1:+.2%} | {max(ses) if ses else math.nan:.4f} | "
                   f"{(bnd.single - bnd.mixture) / 4:.4f} |")
    out += ["", "predict_loss(1): `theory.predict_loss(1, spectrum, attention='softmax', task='difficult', P, k, "
            "regime='converged', n_samples=16384)` (its own Monte Carlo, independent of the B_1 column's). "
            "Targets of the study: predict_loss(1) within 3 % of R_1; R_1 within 2 % of B_1 and the deepest model within 2 % of B_∞ (both unpaired: "
            "the bounds are Monte Carlo on other contexts, SEs in the tables above); the paired SE of R_1 − R_L below "
            "a quarter of B_1 − B_∞.", ""]
    return out


#: Monte-Carlo contexts per seed of the page's ``predict_loss`` column (4× the API default: its interval, not the
#: model, would otherwise decide the 3 % comparison)
PREDICT_SAMPLES = 16384


def _predicted_single(a: float, b: float, k: int, rows) -> tuple[float, float]:
    """``theory.predict_loss(1, ..., regime='converged')`` at the study's sizes and the half-width of its interval
    (seed derived from the spectrum)."""
    from theory import PowerLawSpectrum, predict_loss

    d, P = rows[0]["d"], rows[0]["P"]
    seed = int.from_bytes(hashlib.sha256(f"predict {a!r} {b!r} {k} {d} {P}".encode()).digest()[:4], "big")
    pred = predict_loss(1, PowerLawSpectrum(a, b, d), attention="softmax", task="difficult", P=P, k=k,
                        regime="converged", rng=seed, n_samples=PREDICT_SAMPLES)
    return float(pred.loss[0]), float(pred.upper[0] - pred.loss[0])


def gap_fit(depths: Sequence[int], C: Sequence[float], L0: float) -> dict:
    """The paper's gap fit ``L0 − C_L = c L^-α`` (eqs. 92-93; :func:`theory.fit_gap_law`) over ``L ≥ 2``.

    Returns ``{"ok", "alpha", "alpha_se", "r_squared", "reason"}``; not ``ok`` when some
    ``C_L ≥ L0`` (the logarithm is undefined) or fewer than three depths remain.

    References
    ----------
    Paper eqs. (92)-(93), Table 5.

    Examples
    --------
    >>> out = gap_fit([2, 4, 8, 16], [1.5, 1.75, 1.875, 1.9375], 2.0)
    >>> out["ok"], round(out["alpha"], 3)
    (True, 1.0)
    """
    from theory import fit_gap_law

    depths = np.asarray(depths, dtype=np.float64)
    C = np.asarray(C, dtype=np.float64)
    keep = (depths >= 2) & np.isfinite(C)
    L, shared = depths[keep], C[keep]
    if np.any(shared >= L0):
        first = int(np.argmax(shared >= L0))
        return {"ok": False, "reason": f"C_L = {shared[first]:.4g} at L = {int(L[first])} is not below L0 = {L0:.4g}"}
    if L.size < 3:
        return {"ok": False, "reason": f"only {L.size} depths with C_L defined"}
    fit = fit_gap_law(L.astype(np.int64), shared, L0)
    return {"ok": True, "alpha": float(fit.alpha), "alpha_se": float(fit.standard_errors["alpha"]),
            "r_squared": float(fit.r_squared), "reason": ""}


def training_failures(depths: Sequence[int], gains: Sequence[float], ses: Sequence[float]) -> tuple:
    """Depths whose ``R_L`` is above ``R_1`` by more than two paired SE (``gains`` are ``R_1 − R_L``).

    A depth-L model expresses the L = 1 solution by repeating its layer (eqs. 59-60), so such a
    run stopped at a worse point, whatever the convergence rule says: a training failure.

    References
    ----------
    Paper eqs. (59)-(60).

    Examples
    --------
    >>> training_failures([1, 2, 4], [0.0, 0.1, -0.5], [0.0, 0.01, 0.1])
    (4,)
    """
    return tuple(int(L) for L, g, se in zip(depths, gains, ses) if g < -2 * se)


def _paper_plateau(a: float, b: float, k: int):
    from .consistency import paper_plateaus

    for row in paper_plateaus():
        if (row["a"], row["b"], row["k"]) == (a, b, k):
            return row["source"].split(" (")[0], row["value"]
    return None


def _group_findings(rows, stats, key, bnd) -> list[str]:
    """Numbers of one (model, N, spectrum): fit, depth gain against the bounds' ceiling, where R_L is below B_L."""
    from theory import fit_depth_law

    model, N, a, b, k = key
    group = [r for r in rows if (r["model"], r["N"], r["a"], r["b"], r["k"]) == key]
    depths = sorted({r["depth"] for r in group})
    seeds = sorted({r["seed"] for r in group})
    out = []
    complete = all(any(r["depth"] == L and r["seed"] == s for r in group) for L in depths for s in seeds)
    if len(depths) >= 3 and complete:
        losses = np.array([[next(r["R_L"] for r in group if r["depth"] == L and r["seed"] == s) for L in depths]
                           for s in seeds])
        seed_text = int.from_bytes(hashlib.sha256(repr(key).encode()).digest()[:4], "big")
        mean = losses.mean(axis=0)
        peak = int(np.argmax(mean))
        ranges = [("all depths, as the paper fits", 0)]
        if 0 < peak <= len(depths) - 3:  # the curve rises first: also fit from its maximum on (defined by the data)
            ranges.append((f"from the depth of the largest R_L (L = {depths[peak]}) on", peak))
        for label, start in ranges:
            sub_depths, sub = depths[start:], losses[:, start:]
            try:
                fit = fit_depth_law(sub_depths, sub, n_bootstrap=200 if len(seeds) > 1 else 0, rng=seed_text)
            except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
                out.append(f"- Fit R_L = L0 + c L^-α, {label}: no fit ({exc}).")
                continue
            boot = fit.bootstrap_samples
            alpha_se, L0_se = ((float(np.std(boot[:, 2], ddof=1)), float(np.std(boot[:, 0], ddof=1)))
                               if boot is not None and len(boot) > 1 else (fit.alpha_se, fit.L0_se))
            paper = _paper_plateau(a, b, group[0]["k"])
            paper_text = f"; the paper's {paper[0]} plateau: {paper[1]:.4g}" if paper is not None else ""
            out.append(f"- Fit R_L = L0 + c L^-α, {label} (L = {sub_depths[0]}–{sub_depths[-1]}, mean of {len(seeds)} "
                       f"seeds; SEs {'bootstrap over seeds' if boot is not None else 'Gauss-Newton'}): α = "
                       f"{fit.alpha:.3g} ± {alpha_se:.2g}, L0 = {fit.L0:.4g} ± {L0_se:.2g}, R² (log) = "
                       f"{fit.r_squared:.4f}{paper_text}.")
    if 1 in depths and len(depths) >= 3:
        from theory import fit_gain_law

        gains = [stats[key + (L,)]["delta_R1"] for L in depths]
        ses = [stats[key + (L,)]["delta_R1_se"] for L in depths]
        try:
            g = fit_gain_law(depths, gains, ses)
            out.append(f"- Gain law R_1 − R_L = c (1 − L^-α) on the paired gains (eq. 16 with L0 cancelled; "
                       f"theory.fit_gain_law): α = {g.alpha:.3g}, two-sigma interval {g.interval_text()}, c = "
                       f"{g.c:.4g} ± {g.c_se:.2g}, χ² = {g.chi2:.1f} for {g.dof} dof; the paper's α ≈ 1 is "
                       f"{'inside' if g.covers(1.0) else 'outside'} the interval"
                       + ("." if g.bounded or not g.covers(1.0) else " (the data do not bound α: no resolved depth law)."))
        except ValueError as exc:
            out.append(f"- Gain law: no fit ({exc}).")
    paper = _paper_plateau(a, b, k)
    C_depths = [L for L in depths if L >= 2 and math.isfinite(stats[key + (L,)]["C_L"])]
    if paper is not None and len(C_depths) >= 3:
        C = np.array([stats[key + (L,)]["C_L"] for L in C_depths])
        gap = gap_fit(C_depths, C, paper[1])
        last = f"C_{C_depths[-1]} = {C[-1]:.4g} ({C[-1] / paper[1] - 1:+.1%} from the paper's L0)"
        if gap["ok"]:
            out.append(f"- Gap fit L0 − C_L = c L^-α with the paper's L0 = {paper[1]:.4g} (eqs. 92-93, Table 5): "
                       f"α = {gap['alpha']:.3g} ± {gap['alpha_se']:.2g}, R² (log) = {gap['r_squared']:.4f}; {last}.")
        else:
            out.append(f"- Gap fit with the paper's L0 = {paper[1]:.4g}: impossible, {gap['reason']}; {last}.")
    worse = [L for L in training_failures(depths, [stats[key + (L,)]["delta_R1"] for L in depths],
                                          [stats[key + (L,)]["delta_R1_se"] for L in depths]) if L != 1]
    if worse:
        out.append(f"- **Training failure** at L = {', '.join(map(str, worse))}: R_L above R_1 by more than two paired SE, "
                   "although converged by the rule. A depth-L model can express the L = 1 solution (every layer the "
                   "same head, eqs. 59-60), so these runs stopped at a worse point; the rule (the loss has stopped "
                   "moving) is necessary for convergence to the optimum, not sufficient.")
    if 1 in depths and len(depths) > 1:
        deepest = stats[key + (depths[-1],)]
        out.append(f"- Depth gain R_1 − R_{depths[-1]} = {deepest['delta_R1']:+.4f} ± {deepest['delta_R1_se']:.4f} "
                   "(paired over the common held-out contexts, mean over seeds)"
                   + (f"; the cosine-head ceiling B_1 − B_∞ = {bnd.single - bnd.mixture:.4f}" if bnd is not None else "")
                   + ".")
    doubled = [r for r in group if math.isfinite(r.get("doubling_gain", math.nan))]
    if doubled:
        by_depth: dict = {}
        for r in doubled:
            by_depth.setdefault(r["depth"], []).append(r)
        parts = []
        for L, rs in sorted(by_depth.items()):
            gain = float(np.mean([r["doubling_gain"] for r in rs]))
            se = math.sqrt(float(np.mean([r["doubling_gain_se"] ** 2 for r in rs])) / len(rs))
            if len(rs) > 1:
                se = max(se, float(np.std([r["doubling_gain"] for r in rs], ddof=1)) / math.sqrt(len(rs)))
            parts.append(f"L = {L}: {gain:+.4f} ± {se:.4f} ({len(rs)} seeds, {rs[0]['steps']} → {2 * rs[0]['steps']} steps)")
        out.append("- Doubling the step cap (paired R(S) − R(2S) on the same held-out contexts; > 0: the longer run is "
                   "better): " + "; ".join(parts) + ".")
    if bnd is not None:
        below = []
        for L in depths:
            B = _bound_at(bnd, L)
            s = stats[key + (L,)]
            if B is not None and s["R_L"] < B[0] - 2 * math.hypot(s["R_L_se"], B[1]):
                below.append(L)
        out.append(f"- B_1 = {bnd.single:.4f} ± {bnd.single_se:.4f}, B_∞ = {bnd.mixture:.4f} ± {bnd.mixture_se:.4f} "
                   "(heads over exact cosine similarity, one temperature each). Depths where the trained "
                   f"R_L is more than 2 SE below B_L: {', '.join(map(str, below)) or 'none'}"
                   + (" — these bounds are not proven bounds of the model: each layer learns its own quadratic form "
                      "D_ℓ = (W_q^ℓ A)ᵀ(W_k^ℓ A), not only a temperature." if below else "."))
    return out


# ----------------------------------------------------------------------------- bounds, figure, the whole command
def study_bounds(rows: Sequence[Mapping], *, n_contexts: int = 8192, n_seeds: int = 4, cache_dir=None,
                 workers: int = 1, progress: bool | None = False) -> dict:
    """``{(model, N, a, b, k): SoftmaxBounds}`` over exact cosine similarity, for every depth of ``rows``.

    Exact cosine, not the pre-norm similarity of an orthonormal ``W_x`` at initialisation: the
    trained model can express cosine heads exactly (RMSNorm at any ``N``; LayerNorm when
    ``N > d``, with ``W_x``'s columns orthogonal to the all-ones vector), and the learned
    ``W_x`` is not the initial one. One bound per spectrum, shared by its widths and norms.

    Notes
    -----
    No example: a Monte-Carlo computation (``tests/test_converged.py`` runs it small).
    """
    from ..bounds import cached_softmax_bounds, softmax_bounds_key

    groups: dict = {}
    for r in rows:
        groups.setdefault((r["a"], r["b"], r["k"], r["d"], r["P"]), set()).add(r["depth"])
    keys = {spectrum: softmax_bounds_key(spectrum[0], spectrum[1], spectrum[3], spectrum[4], spectrum[2],
                                         depths=sorted(depths), n_contexts=n_contexts, n_seeds=n_seeds)
            for spectrum, depths in sorted(groups.items())}
    values = dict(zip(keys, cached_softmax_bounds(list(keys.values()), cache_dir, workers=workers, progress=progress)))
    return {(r["model"], r["N"], r["a"], r["b"], r["k"]): values[(r["a"], r["b"], r["k"], r["d"], r["P"])] for r in rows}


def draw_study_figure(rows: Sequence[Mapping], bounds: Mapping, path) -> Path:
    """Per (model, N, spectrum): top, R_L against L (mean over seeds, ±1.96 SE) with ``B_L`` and ``B_∞``; bottom,
    the depth gain ``R_1 − R_L`` paired over the common held-out contexts (±1.96 paired SE) with the cosine-head
    ceiling ``B_1 − B_L`` and, dotted, eq. (16) with ``α = 1`` through the same total gain.

    Notes
    -----
    No example: it draws a file (``tests/test_converged.py`` draws one).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stats = group_stats(rows)
    keys = sorted({k[:5] for k in stats})
    if not keys:
        raise ValueError("no runs to draw: the study has no finished run yet")
    cols = min(3, len(keys))
    grid_rows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(2 * grid_rows, cols, figsize=(4.4 * cols, 5.2 * grid_rows), squeeze=False)
    for j in range(len(keys), grid_rows * cols):  # empty slots of the last row
        row, col = divmod(j, cols)
        axes[2 * row, col].axis("off")
        axes[2 * row + 1, col].axis("off")
    for j, key in enumerate(keys):
        row, col = divmod(j, cols)
        top, bottom = axes[2 * row, col], axes[2 * row + 1, col]
        depths = sorted(k[5] for k in stats if k[:5] == key)
        get = lambda name: np.array([stats[key + (L,)][name] for L in depths])
        top.errorbar(depths, get("R_L"), yerr=1.96 * get("R_L_se"), fmt="o-", ms=3, capsize=2, label="trained $R_L$")
        bottom.errorbar(depths, get("delta_R1"), yerr=1.96 * get("delta_R1_se"), fmt="o-", ms=3, capsize=2,
                        label="$R_1 - R_L$ (paired)")
        bottom.axhline(0.0, color="0.6", lw=0.8)
        gains = get("delta_R1")
        if len(depths) > 2 and depths[0] == 1:  # eq. (16) with α = 1 through the same total gain, for comparison
            L = np.asarray(depths, dtype=np.float64)
            bottom.plot(depths, gains[-1] * (1 - 1 / L) / (1 - 1 / L[-1]), ":", color="0.35", lw=1.2,
                        label="α = 1 law, same total gain")
        bnd = bounds.get(key)
        if bnd is not None:
            BL = np.array([(_bound_at(bnd, L) or (math.nan, math.nan))[0] for L in depths])
            top.plot(depths, BL, "s--", ms=3, color="C2", label="$B_L$ (cosine heads)")
            top.axhline(bnd.mixture, color="C3", lw=1, ls=":", label=r"$B_\infty$")
            bottom.plot(depths, bnd.single - BL, "s--", ms=3, color="C2", label="$B_1 - B_L$")
        model, N, a, b, k = key
        top.set_title(f"{model}, top-{k}, N = {N}, (a, b) = ({a:g}, {b:g})", fontsize=8)
        bottom.set_xlabel("depth L", fontsize=8)
        top.set_xscale("log", base=2)
        bottom.set_xscale("log", base=2)
        for ax in (top, bottom):
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
    for row in range(grid_rows):
        axes[2 * row, 0].set_ylabel("held-out loss (±1.96 SE)", fontsize=8)
        axes[2 * row + 1, 0].set_ylabel("depth gain (±1.96 paired SE)", fontsize=8)
    axes[0, 0].legend(fontsize=7)
    axes[1, 0].legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, path)


def draw_decomposition_figure(rows: Sequence[Mapping], path) -> Path:
    """Fig. 6c, d of the converged study: ``C_L`` divided by the paper's plateau (Tables 1, 4; by ``C_L`` at the
    deepest depth where the paper has none) and ``A_L − C_L`` against depth, one line per main-width spectrum.

    Notes
    -----
    No example: it draws a file (``tests/test_converged.py`` draws one).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stats = group_stats(rows)
    widest: dict = {}
    for key in stats:
        model, N, a, b, k, _ = key
        if model == "nonlinear":
            widest[(a, b, k)] = max(widest.get((a, b, k), 0), N)
    keys = sorted(("nonlinear", N, a, b, k) for (a, b, k), N in widest.items())
    if not keys:
        raise ValueError("no nonlinear runs to draw")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.5, 4.4), constrained_layout=True)
    for index, key in enumerate(keys):
        depths = [L for L in sorted(k[5] for k in stats if k[:5] == key) if L >= 2]
        if not depths:
            continue
        C = np.array([stats[key + (L,)]["C_L"] for L in depths])
        gap = np.array([stats[key + (L,)]["A_L"] - stats[key + (L,)]["C_L"] for L in depths])
        _, _, a, b, k = key
        paper = _paper_plateau(a, b, k)
        scale, scale_text = (paper[1], "paper L0") if paper is not None else (C[-1], f"C_{depths[-1]}")
        style = dict(marker="os^vD<>p*hX"[index % 11], ms=3.5, lw=1.2, ls="-" if k == 2 else "--")
        left.plot(depths, C / scale, label=f"top-{k} ({a:g}, {b:g}) / {scale_text}", **style)
        right.plot(depths, gap, label=f"top-{k} ({a:g}, {b:g})", **style)
    left.axhline(1.0, color="0.4", lw=0.9, ls=":")
    left.set_ylabel("shared error C_L / plateau")
    right.set_ylabel("disagreement A_L − C_L")
    right.set_yscale("log")
    r = rows[0]
    for ax, title in ((left, "Fig. 6c: C_L against depth (dotted: the plateau)"),
                      (right, "Fig. 6d: A_L − C_L against depth")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("depth L")
        ax.set_title(f"{title}; d = {r['d']}, P = {r['P']}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
    left.legend(fontsize=6.5, ncol=2)
    return save_figure(fig, path)


def run_converged(out_dir, *, plan: ConvergedPlan | None = None, store_dir=None, workers: int | None = None,
                  progress: bool | None = None, report_only: bool = False, bound_contexts: int = 8192,
                  command: str = "idepth study converged", only_spectra: Sequence[tuple] | None = None) -> tuple[list, str]:
    """The whole study: train (resumably) unless ``report_only``, write the CSV, its provenance, the page and figure.

    ``out_dir`` receives ``converged-study.csv``, ``converged-study.provenance.json``,
    ``converged-study.md`` and ``figures/converged-study.png``; bounds are cached in
    ``out_dir/cache``. With ``report_only`` the CSV already in ``out_dir`` is read (no
    training, no store needed). ``only_spectra`` trains only the runs of those ``(a, b)``; the CSV
    always holds every run of the plan the store has finished (so a study run spectrum by
    spectrum, or over several sessions, grows one table).

    Returns
    -------
    (rows, markdown)
    """
    import json
    import time

    out = Path(out_dir)
    csv_path = out / "converged-study.csv"
    started = time.perf_counter()
    if report_only:
        if not csv_path.is_file():
            raise FileNotFoundError(f"--report-only needs {csv_path}; run the study first")
        rows = read_study_csv(csv_path)
        prov_path = csv_path.with_suffix(".provenance.json")
        prov = json.loads(prov_path.read_text()) if prov_path.is_file() else None
    else:
        plan = ConvergedPlan() if plan is None else plan
        store_dir = out / "store" if store_dir is None else Path(store_dir)
        make_output_dir(out)
        specs = plan.runs()
        if only_spectra is not None:
            wanted = {(float(a), float(b)) for a, b in only_spectra}
            specs = [spec for spec in specs if (spec.a, spec.b) in wanted]
            if not specs:
                raise ValueError(f"only_spectra {sorted(wanted)} selects no run of the plan (its spectra: {plan.spectra})")
        run_converged_study(plan, store_dir, workers=workers, progress=progress, specs=specs)
        rows = study_rows(plan, collect_results(plan, store_dir), store_dir)
        prov = provenance(plan, command, time.perf_counter() - started)
        prov["runs_planned"] = len(plan.runs())
        prov["runs_in_csv"] = len(rows)
        write_study_csv(rows, csv_path, provenance=prov)
    bounds = study_bounds(rows, n_contexts=bound_contexts, cache_dir=out / "cache", workers=workers or 1,
                          progress=progress)
    markdown = converged_markdown(rows, bounds, provenance_info=prov)
    if rows:
        make_output_dir(out / "figures")
        draw_study_figure(rows, bounds, out / "figures" / "converged-study.png")
        draw_decomposition_figure(rows, out / "figures" / "converged-study-decomposition.png")
        markdown += ("\n![R_L against depth, with the bounds](figures/converged-study.png)\n"
                     "\n![C_L and A_L − C_L against depth](figures/converged-study-decomposition.png)\n")
    write_text(out / "converged-study.md", markdown)
    return rows, markdown
