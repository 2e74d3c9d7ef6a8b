"""The reproduction's scales: the named plans of runs each figure and table of the paper needs, and the budgets.

A reproduction trains the paper's models in *families* of runs: each a one-run
:class:`~numerics.experiments.study.plan.Plan` (one model, task, size and recipe over spectra, depths
and seeds; :data:`FAMILIES` names them). A :class:`Scale` fixes every family and the regime study's budget
(:data:`~numerics.experiments.study.regime_plans.STUDY_SCALES`, of the same name); :data:`SCALES` holds the
shipped ones: ``smoke`` (CI only, numbers mean nothing), ``quick`` (the default; :func:`measured_run_time`),
``medium`` (hours on a workstation) and ``paper`` (the linear families at the sizes of Table 3, the softmax ones at
:data:`INFERRED_SOFTMAX_SIZES`: a Dask cluster). Each scale's description says what it is for.

The paper states neither sizes, optimiser, schedule nor step budget (digest section 3): every
choice below is this package's and is printed in the report. The recipes are those of
:mod:`numerics.experiments.recipes`.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from theory.paper import INFERRED_SOFTMAX_SIZES, TABLE1_SPECTRA as _TABLE1_SPECTRA, table_spectra
from theory.validation import check_choice

from .. import recipes
from ..recipes import GAIN_PARAMETERS, LAZY_INIT
from ..shipped import checkout_root
from ..study.plan import Plan
from ..study.regime_plans import STUDY_SCALES, StudyScale

#: every family of runs a reproduction may need: its model, task and top-k (the same at every scale), and what it is for
FAMILIES = MappingProxyType({
    "linear_easy": ("linear", "easy", 2, "linear attention, easy task (Figs. 3a-c, Table 2)"),
    "linear_difficult": ("linear", "difficult", 2,
        "linear attention, difficult task, k = 2 (Figs. 5a-b, Tables 1 and 3)"),
    "linear_difficult_k16": ("linear", "difficult", 16, "linear attention, difficult task, k = 16 (Fig. 5b, Table 3)"),
    "nonlinear_easy": ("nonlinear", "easy", 2, "softmax attention, easy task (Figs. 4a-c)"),
    "nonlinear_lazy": ("nonlinear", "difficult", 2,
        "softmax attention, difficult task, k = 2, lazy training (Figs. 1, 6, 7, 13; Tables 1, 4, 5)"),
    "nonlinear_converged": ("nonlinear", "difficult", 2,
        "softmax attention, difficult task, k = 2, trained to convergence (Fig. 6a, verdict)"),
    "nonlinear_k16": ("nonlinear", "difficult", 16,
        "softmax attention, difficult task, k = 16, lazy training (Fig. 14, Table 4)"),
    "single_stream": ("single_stream", "difficult", 2, "single-stream model, difficult task, k = 2 (Fig. 9)"),
    "untied_values": ("untied_values", "difficult", 2, "untied values, difficult task, k = 2 (Fig. 10)"),
    "context_updates": ("context_updates", "difficult", 2,
        "context updates M(m), difficult task, k = 2 (Figs. 11, 12)"),
    "context_updates_k16": ("context_updates", "difficult", 16,
        "context updates M(m), difficult task, k = 16 (Figs. 11, 12)"),
})


__all__ = [
    "FAMILIES",
    "LAZY_INIT",
    "GAIN_PARAMETERS",
    "Scale",
    "SCALES",
    "MeasuredRunTime",
    "measured_run_time",
    "INFERRED_SOFTMAX_SIZES",
    "get_scale",
]


@dataclass(frozen=True)
class MeasuredRunTime:
    """One measured run time of a whole reproduction, with the machine state it was measured on.

    Read from the records ``python benchmarks/bench_reproduce.py`` writes (``idepth reproduce --scale
    SCALE`` from an empty directory) by :func:`measured_run_time`, the one source of a run time: the README,
    ``idepth reproduce --help``, the printed plan and the report quote :meth:`text`. Wall clock, user +
    system time, ``load_average`` the mean 1-minute load during the run (other jobs slow it), ``cores`` the
    machine's and ``serial_seconds`` what the main process did alone (figures, report). On idle cores the run
    takes about ``cpu_seconds / cores + serial_seconds`` (:meth:`idle_seconds`). ``idle``: no other job ran (the
    mean load at most its own workers plus 0.5); ``also``: the same job on other machines, quoted after this one.

    Examples
    --------
    >>> MeasuredRunTime("quick", 1745, 1759, "2 cores", "idepth reproduce").text()
    '29 min wall, 29 min CPU (1745 s, 1759 s) on 2 cores'
    >>> MeasuredRunTime("quick", 900, 1000, "2 cores", "idepth reproduce", 4.0, 2, 40).text()
    '15 min wall, 17 min CPU (900 s, 1000 s) on 2 cores at load average 4.0 (other jobs); on idle cores ≈ 9 min (540 s: CPU / 2 cores + 40 s in the main process alone)'
    >>> avx512 = MeasuredRunTime("quick", 270, 510, "AVX-512", "idepth reproduce", idle=True)
    >>> MeasuredRunTime("quick", 360, 680, "AVX2", "idepth reproduce", idle=True, also=(avx512,)).text()
    '6 min wall, 11 min CPU (360 s, 680 s) on AVX2, idle; on AVX-512: 4 min wall, 8 min CPU (270 s, 510 s), idle'
    """

    scale: str
    wall_seconds: float
    cpu_seconds: float
    machine: str
    command: str
    load_average: float | None = None
    cores: int | None = None
    serial_seconds: float | None = None
    idle: bool = False
    also: tuple = ()

    @classmethod
    def from_record(cls, record: Mapping) -> MeasuredRunTime:
        """The run time of one record of ``benchmarks/bench_reproduce.py``.

        The machine is the record's with numpy's SIMD level named as such, and the kernels the run disabled
        (``NPY_DISABLE_CPU_FEATURES``, recorded as ``numpy_disabled_cpu_features``).

        Examples
        --------
        >>> record = dict(scale="quick", wall_seconds=411.3, cpu_seconds=795.6, cpu_over_cores_seconds=397.8,
        ...               machine="2 cores, AVX2 (X86_V3)", command="idepth reproduce --scale quick --out OUT",
        ...               load_average_during_mean=1.75, serial_wall_seconds=17.3,
        ...               numpy_disabled_cpu_features="X86_V4 AVX512_ICL AVX512_SPR")
        >>> MeasuredRunTime.from_record(record).text()
        '7 min wall, 13 min CPU (411 s, 796 s) on 2 cores, AVX2 (X86_V3) per numpy (its AVX-512 kernels disabled), idle'
        """
        cores = round(record["cpu_seconds"] / record["cpu_over_cores_seconds"])
        disabled = record.get("numpy_disabled_cpu_features")
        machine = record["machine"] + " per numpy" + (
            "" if not disabled else " (its AVX-512 kernels disabled)" if "AVX512" in disabled
            else f" ({disabled} disabled)")
        load = record.get("load_average_during_mean")
        return cls(scale=record["scale"], wall_seconds=record["wall_seconds"], cpu_seconds=record["cpu_seconds"],
                   machine=machine, command=record["command"], load_average=load, cores=cores,
                   serial_seconds=record.get("serial_wall_seconds"),
                   idle=load is not None and load <= cores + 0.5)  # its own workers only

    def _times(self) -> str:
        return (f"{self.wall_seconds / 60:.0f} min wall, {self.cpu_seconds / 60:.0f} min CPU "
                f"({self.wall_seconds:.0f} s, {self.cpu_seconds:.0f} s)")

    def idle_seconds(self) -> float | None:
        """``cpu_seconds / cores + serial_seconds``: the wall time on idle cores (None if not measured)."""
        if self.cores is None or self.serial_seconds is None:
            return None
        return self.cpu_seconds / self.cores + self.serial_seconds

    def text(self) -> str:
        """``'29 min wall, 29 min CPU (1745 s, 1759 s) on <machine>'``, then ``idle`` or the load and the idle
        estimate, then the measurements of :attr:`also`."""
        text = f"{self._times()} on {self.machine}"
        if self.idle:
            text += ", idle"
        elif self.load_average is not None:
            text += f" at load average {self.load_average:.1f} (other jobs)"
        idle = self.idle_seconds()
        if idle is not None and not self.idle:
            text += (f"; on idle cores ≈ {idle / 60:.0f} min ({idle:.0f} s: CPU / {self.cores} cores + "
                     f"{self.serial_seconds:.0f} s in the main process alone)")
        for other in self.also:
            text += f"; on {other.machine}: " + other.text().split(f" on {other.machine}", 1)[0] + (
                ", idle" if other.idle else "")
        return text


def measured_run_time(scale: str, results: str | Path | None = None) -> MeasuredRunTime | None:
    """The measured run time of a whole reproduction at ``scale``, or None where none was measured.

    Read from ``results/reproduce_<scale>*.json`` (default: ``benchmarks/results`` of the source checkout;
    an installed wheel has none), the records ``python benchmarks/bench_reproduce.py`` writes: the slowest
    first (what a user's machine should expect at most), the others as its :attr:`~MeasuredRunTime.also`.

    Examples
    --------
    >>> import json, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     record = dict(scale="quick", wall_seconds=300.0, cpu_seconds=580.0, cpu_over_cores_seconds=290.0,
    ...                   machine="2 cores, AVX-512", command="idepth reproduce", load_average_during_mean=1.7)
    ...     _ = (Path(tmp) / "reproduce_quick.json").write_text(json.dumps(record))
    ...     measured_run_time("quick", tmp).text(), measured_run_time("smoke", tmp)
    ('5 min wall, 10 min CPU (300 s, 580 s) on 2 cores, AVX-512 per numpy, idle', None)
    """
    if results is None:
        root = checkout_root()
        if root is None:
            return None
        results = root / "benchmarks" / "results"
    records = [json.loads(path.read_text()) for path in sorted(Path(results).glob(f"reproduce_{scale}*.json"))]
    records = sorted((r for r in records if r.get("scale") == scale), key=lambda r: -r["wall_seconds"])
    if not records:
        return None
    times = [MeasuredRunTime.from_record(record) for record in records]
    return dataclasses.replace(times[0], also=tuple(times[1:]))





_TABLE2_SPECTRA = table_spectra("table2")
_TABLE3_K2_SPECTRA, _TABLE3_K16_SPECTRA = table_spectra("table3", k=2), table_spectra("table3", k=16)
_TABLE4_K2_SPECTRA, _TABLE4_K16_SPECTRA = table_spectra("table4", k=2), table_spectra("table4", k=16)


def _unique(*groups) -> tuple:
    return tuple(dict.fromkeys(item for group in groups for item in group))


@dataclass(frozen=True)
class Scale:
    """A complete reproduction recipe: every family's runs plus the Monte-Carlo budgets.

    Parameters
    ----------
    name, description : str
        The scale and what it is for (how long it takes).
    families : mapping of str to Plan
        Keyed by :data:`FAMILIES` names; a scale defines all of them.
    bound_contexts, floor_samples : int
        Monte-Carlo contexts of the oracle softmax-head bound
        (:func:`numerics.experiments.bounds.softmax_head_bound`) and of the linear floor
        (:func:`theory.floor.linear_floor_monte_carlo`).
    needs_cluster : bool
        True when the scale is meant for a Dask cluster.
    study : StudyScale
        The regime study's budget (:mod:`numerics.experiments.study`), given this scale's
        ``name`` and ``bound_contexts`` so that the study and the reproduction share each bound.
    certified_checks : tuple of (a, b, k, P, depth, seed, start, learning_rate, steps)
        Cold-started candidates of the shipped certified study that the reproduction re-trains
        from their cells (:func:`numerics.experiments.reproduce.envelope.spot_check_configs`).
    judges_claims : bool
        Whether a reproduction at this scale states verdicts; False where the numbers mean
        nothing (``smoke``): every claim then reads "not judged", its measured status kept.
    softmax_claim_sizes : tuple of (d, P) or None
        The sizes the paper's softmax numbers imply (:data:`INFERRED_SOFTMAX_SIZES`) where this
        scale judges the softmax claims: a claim reading a softmax top-k family run below them is
        not judged (:meth:`undersized_families`); None: no such rule.

    References
    ----------
    The paper's experiments, sections 3-4 and appendices A-C.

    Examples
    --------
    >>> scale = get_scale("smoke")
    >>> scale.n_runs == sum(f.n_runs for f in scale.families.values())
    True
    """

    name: str
    description: str
    families: Mapping[str, Plan]
    bound_contexts: int = 8192
    floor_samples: int = 4096
    needs_cluster: bool = False
    study: "StudyScale | None" = None
    certified_checks: tuple = ()
    judges_claims: bool = True
    softmax_claim_sizes: tuple | None = None

    def __post_init__(self) -> None:
        missing = [name for name in FAMILIES if name not in self.families]
        if missing:
            raise ValueError(f"scale {self.name!r} does not define the families {', '.join(missing)}")
        for key, family in self.families.items():
            if key != family.name:
                raise ValueError(f"scale {self.name!r}: family stored under {key!r} is named {family.name!r}")
        object.__setattr__(self, "families", MappingProxyType(dict(self.families)))
        if not isinstance(self.study, StudyScale):
            raise TypeError(f"scale {self.name!r}: study must be a StudyScale; got {self.study!r}")
        object.__setattr__(self, "study", dataclasses.replace(self.study, name=self.name,
                                                              bound_contexts=self.bound_contexts))

    @property
    def n_runs(self) -> int:
        """All runs of all families (before de-duplication of identical configs)."""
        return sum(family.n_runs for family in self.families.values())

    def undersized_families(self) -> dict:
        """``{name: why}`` of the softmax top-k families run below the sizes the paper's softmax numbers imply.

        A family with ``d`` or ``P`` below :attr:`softmax_claim_sizes` cannot bear on a claim
        made at those sizes: a claim that reads one is not judged at this scale.

        Examples
        --------
        >>> sorted(get_scale("quick").undersized_families())
        ['context_updates', 'context_updates_k16']
        >>> get_scale("medium").undersized_families()
        {}
        """
        if self.softmax_claim_sizes is None:
            return {}
        d, P = self.softmax_claim_sizes
        return {name: f"{name} runs at d = {family.d}, P = {family.P}, below the sizes the paper's softmax numbers "
                      f"imply (d = {d}, P = {P})"
                for name, family in self.families.items()
                if family.model != "linear" and family.task == "difficult" and (family.d < d or family.P < P)}


def _scale(name, description, families, **kwargs) -> Scale:
    return Scale(name, description, {f.name: f for f in families}, **kwargs)


def _family(name: str, d, N, P, spectra, depths, seeds, **recipe) -> Plan:
    model, task, k, _ = FAMILIES[name]
    return Plan.one_run(name, model=model, task=task, k=k, d=d, N=N, P=P, spectra=spectra, depths=depths,
                        seeds=seeds, **recipe)


# each family's recipe (recipes.py) and its line in the report (Plan.regime)
_EASY = dict(recipe=recipes.EASY, regime="from near-uniform attention (qk_scale 0.05): Adam 0.03, 20 warm-up steps, "
                                         "then constant")
_LINEAR = dict(recipe=recipes.LINEAR_GAMMA_STAR, regime="converged: Adam with warm-up + cosine decay over the whole "
                                                        "budget, start at γ* = L/λ_1 (eq. 33)")
_LAZY = dict(recipe=recipes.LAZY, regime="lazy: gain W_o W_v W_y frozen at 1, Adam 1e-4 constant for the whole "
                                         "budget, W_q = W_k = √0.6 (I + 0.5 G/√N)")
_CONVERGED = dict(recipe=recipes.EQUAL_BUDGET, regime="equal budget: every parameter trained, Adam 1e-3 with warm-up "
                  "+ cosine decay, one step budget for every depth, same initialisation as the lazy runs (the "
                  "certified study trains each depth from several starts and keeps the best)")
#: the sizes (d, N, P) of the softmax families at the quick and paper scales
_SOFTMAX = tuple(INFERRED_SOFTMAX_SIZES[name] for name in ("d", "N", "P"))
#: (d, P) below which a softmax family's numbers bear on no claim of the paper (Scale.softmax_claim_sizes)
_SOFTMAX_CLAIM_SIZES = (INFERRED_SOFTMAX_SIZES["d"], INFERRED_SOFTMAX_SIZES["P"])


def _smoke() -> Scale:
    tiny = dict(batch_size=8, max_steps=20, eval_size=64, eval_every=10, warmup_steps=0)
    lazy = {**_LAZY, **tiny}
    linear = {**_LINEAR, **tiny}
    converged = {**_CONVERGED, **tiny}
    zero = ((0.0, 0.0),)
    return _scale("smoke", "CI only: tiny sizes and 20 steps per run; checks the pipeline, its numbers mean nothing", [
        _family("linear_easy", 4, 4, 16, ((2.0, 1.0), (1.0, 2.0)), (1, 2, 4), (0,), **linear),
        _family("linear_difficult", 4, 4, 16, zero, (1, 2, 4), (0,), **linear),
        _family("linear_difficult_k16", 4, 4, 32, ((1.0, 0.0),), (1, 2), (0,), **linear),
        _family("nonlinear_easy", 4, 4, 16, zero, (1, 2), (0,), **{**_EASY, **tiny}),
        _family("nonlinear_lazy", 4, 4, 16, ((0.0, 0.0), (0.5, 0.0)), (1, 2, 4), (0, 1), **lazy),
        _family("nonlinear_converged", 4, 4, 16, zero, (1, 2, 4), (0,), **converged),
        _family("nonlinear_k16", 4, 4, 32, ((0.0, 0.5),), (1, 2, 4), (0,), **lazy),
        _family("single_stream", 4, 4, 16, zero, (1, 2, 4), (0,), **lazy),
        _family("untied_values", 4, 4, 16, zero, (1, 2, 4), (0,), **lazy),
        _family("context_updates", 4, 4, 16, zero, (1, 2), (0,), **converged),
        _family("context_updates_k16", 4, 4, 32, zero, (1, 2), (0,), **converged),
    ], bound_contexts=256, floor_samples=128, study=STUDY_SCALES["smoke"], judges_claims=False)


def _quick() -> Scale:
    # the softmax families at the sizes the paper's nonlinear numbers imply (_SOFTMAX), where the certified study
    # (the verdict) was measured; nonlinear_lazy and nonlinear_converged are exactly the runs of the
    # regime study's quick scale (study.regime_config, batch 32): sharing the store trains them once
    lazy = dict(_LAZY, max_steps=1000, batch_size=32, eval_every=100, eval_size=1024)
    # context updates: the learned scalar m of M(m) must be able to move (paper: m ≈ −2.3 for top-16)
    converged = dict(_CONVERGED, max_steps=2000, batch_size=32, eval_every=100, warmup_steps=100)
    linear = dict(_LINEAR, batch_size=64, max_steps=1500, eval_every=100, warmup_steps=100)
    # lr 3e-3: at 1e-2 the L = 8 models stopped further above the floor
    linear_difficult = dict(linear, batch_size=32, max_steps=1000, learning_rate=3e-3)
    depths = (1, 2, 4, 8, 16, 32)
    measured = measured_run_time("quick")  # benchmarks/results: in a source checkout only
    measured = measured.text() if measured else "none here"
    return _scale("quick", f"default; measured: {measured}, regime study included", [
        # L = 16 is left out: at lr 1e-2 it trained unstably here
        _family("linear_easy", 16, 16, 512, _TABLE2_SPECTRA[:4], (1, 2, 4, 8), (0,), **linear),
        # d = N = 32, P = 128 (Table 1 compares it with the softmax families at _SOFTMAX; the report says so)
        _family("linear_difficult", 32, 32, 128, ((0.0, 0.0), (0.0, 0.5), (0.5, 0.0), (0.5, 0.5), (1.0, 1.0)),
                (1, 2, 4, 8), (0,), **linear_difficult),
        _family("linear_difficult_k16", 16, 16, 128, ((0.5, 0.5), (1.0, 0.0)), (1, 2, 4), (0,), **linear_difficult),
        # 1000 steps: at 500 the (2, 1) model stopped at 3 % of its initial loss, short of the claim's 1 % (0.7 % here)
        _family("nonlinear_easy", 16, 16, 64, ((0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (2.0, 1.0)), (1, 2), (0,),
                max_steps=1000, batch_size=64, eval_every=50, **_EASY),
        _family("nonlinear_lazy", *_SOFTMAX, ((0.0, 0.0), (0.0, 0.5), (0.5, 0.0)), depths, (0, 1, 2), **lazy),
        _family("nonlinear_converged", *_SOFTMAX, ((0.0, 0.0),), depths, (0, 1, 2), **converged),
        # the appendix families (figs. 9, 10, 14; no verdict reads them) on the quick budgets: the certified cells'
        # recipe (6000 steps x batch 256) made them half of the quick scale's training. Top-16 and untied values in
        # the lazy regime, as at the medium scale; the single stream with every parameter trained (equal budget):
        # with its gain frozen it stays near R_L = 7 at every depth
        _family("nonlinear_k16", *_SOFTMAX, ((0.0, 0.5),), depths, (0,), **lazy),
        _family("single_stream", *_SOFTMAX, ((0.0, 0.0),), (1, 2, 4, 8), (0,), **converged),
        _family("untied_values", *_SOFTMAX, ((0.0, 0.0),), (1, 2, 4, 8, 16), (0,), **lazy),
        _family("context_updates", 8, 8, 32, ((0.0, 0.0),), (1, 2, 4, 8), (0,), **converged),
        _family("context_updates_k16", 8, 8, 32, ((0.0, 0.0),), (1, 2, 4, 8), (0,), **converged),
    ], bound_contexts=8192, floor_samples=4096, study=STUDY_SCALES["quick"],
        # two shipped candidates re-trained: the recipe of every certified cell (cold, Adam 1e-3, 6000 steps) at L = 1, 2
        certified_checks=((0.0, 0.0, 2, 64, 1, 0, "cold", 1e-3, 6000), (0.0, 0.0, 2, 64, 2, 0, "cold", 1e-3, 6000)),
        softmax_claim_sizes=_SOFTMAX_CLAIM_SIZES)


def _medium() -> Scale:
    lazy = dict(_LAZY, max_steps=1000, batch_size=128, eval_every=100, eval_size=4096)
    linear = dict(_LINEAR, batch_size=128, max_steps=4000, eval_every=200, warmup_steps=200, learning_rate=3e-3)
    context = dict(_CONVERGED, max_steps=5000, batch_size=128, eval_every=200, warmup_steps=200)
    seeds = (0, 1, 2)
    depths = (1, 2, 4, 8, 16, 32, 64, 128)
    pairs = ((0.0, 0.0), (0.5, 0.5))
    return _scale("medium", "hours on a workstation: every table row, depths to 128", [
        _family("linear_easy", 64, 64, 1024, _TABLE2_SPECTRA, depths[:7], seeds, **linear),
        _family("linear_difficult", 64, 64, 512, _unique(_TABLE3_K2_SPECTRA, _TABLE1_SPECTRA), depths[:5], seeds,
                **linear),
        _family("linear_difficult_k16", 64, 64, 512, _TABLE3_K16_SPECTRA, depths[:5], seeds, **linear),
        _family("nonlinear_easy", 64, 64, 256, ((0.0, 0.0), (0.5, 0.5), (1.0, 1.0), (2.0, 1.0)), depths[:3], seeds,
                max_steps=2000, batch_size=128, eval_every=100, **_EASY),
        _family("nonlinear_lazy", 64, 64, 512, _unique(_TABLE1_SPECTRA, _TABLE4_K2_SPECTRA), depths, seeds, **lazy),
        _family("nonlinear_converged", 64, 64, 512, ((0.0, 0.0), (0.0, 0.5), (0.5, 0.0)), depths, seeds,
                max_steps=10000, batch_size=128, eval_every=200, eval_size=4096, warmup_steps=200, **_CONVERGED),
        _family("nonlinear_k16", 64, 64, 512, _TABLE4_K16_SPECTRA, depths, seeds, **lazy),
        _family("single_stream", 32, 32, 128, pairs, depths[:6], seeds, **lazy),
        _family("untied_values", 64, 64, 512, pairs, depths, seeds, **lazy),
        _family("context_updates", 16, 16, 64, ((0.0, 0.0),), depths[:6], seeds, **context),
        _family("context_updates_k16", 16, 16, 64, ((0.0, 0.0),), depths[:6], seeds, **context),
    ], bound_contexts=16384, floor_samples=16384, study=STUDY_SCALES["medium"], softmax_claim_sizes=_SOFTMAX_CLAIM_SIZES)


def _paper() -> Scale:
    # the softmax families at the sizes the paper's nonlinear plateaus imply (``idepth study sizes``: d = 16, P in
    # 32-96; N = 2d), the linear families at the sizes that reproduce Table 3 (d = 128, P = 1024)
    d, N, P = _SOFTMAX
    lazy = dict(_LAZY, max_steps=1000, batch_size=128, eval_every=100, eval_size=4096)
    converged = dict(_CONVERGED, max_steps=20000, batch_size=256, eval_every=500, warmup_steps=500, eval_size=4096)
    linear = dict(_LINEAR, batch_size=128, max_steps=10000, eval_every=500, warmup_steps=500, eval_size=4096,
                  learning_rate=3e-3)
    seeds = (0, 1, 2)
    depths = (1, 2, 4, 8, 16, 32, 64, 128, 256)
    pairs = ((0.0, 0.0), (0.5, 0.5))
    return _scale("paper", "linear families at the paper's Table 3 sizes (d = 128, P = 1024), softmax families at "
                  f"the inferred sizes (d = {d}, N = {N}, P = {P}), depths to 256 (linear: 64, 32): ≈ 365 "
                  "core-hours by the cost model with the regime study, 87 % of them the linear "
                  "families at d = 128, i.e. ≈ 23 h on 16 cores: needs a Dask cluster", [
        # depths to 64: the L = 128 runs alone would cost more than all the rest
        _family("linear_easy", 128, 128, 1024, _TABLE2_SPECTRA, depths[:7], seeds, **linear),
        _family("linear_difficult", 128, 128, 1024, _unique(_TABLE3_K2_SPECTRA, _TABLE1_SPECTRA), depths[:6], seeds,
                **linear),
        _family("linear_difficult_k16", 128, 128, 1024, _TABLE3_K16_SPECTRA, depths[:6], seeds, **linear),
        _family("nonlinear_easy", d, N, P, _unique(_TABLE1_SPECTRA, _TABLE2_SPECTRA), depths[:3], seeds,
                max_steps=5000, batch_size=128, eval_every=250, eval_size=4096, **_EASY),
        _family("nonlinear_lazy", d, N, P, _unique(_TABLE1_SPECTRA, _TABLE4_K2_SPECTRA), depths, seeds, **lazy),
        _family("nonlinear_converged", d, N, P, _TABLE1_SPECTRA, depths, seeds, **converged),
        _family("nonlinear_k16", d, N, P, _TABLE4_K16_SPECTRA, depths, seeds, **lazy),
        _family("single_stream", d, N, P, pairs, depths[:7], seeds, **lazy),
        _family("untied_values", d, N, P, pairs, depths, seeds, **lazy),
        _family("context_updates", d, N, P, ((0.0, 0.0),), depths[:6], seeds, **converged),
        _family("context_updates_k16", d, N, P, ((0.0, 0.0),), depths[:6], seeds, **converged),
    ], bound_contexts=32768, floor_samples=65536, needs_cluster=True, study=STUDY_SCALES["paper"],
        softmax_claim_sizes=_SOFTMAX_CLAIM_SIZES)


#: the shipped scales, smallest first
SCALES: Mapping[str, Scale] = MappingProxyType({s.name: s for s in (_smoke(), _quick(), _medium(), _paper())})


def get_scale(name: str | Scale) -> Scale:
    """The :class:`Scale` called ``name`` (a Scale unchanged; an unknown name is a ValueError).

    Examples
    --------
    >>> get_scale("quick").families["nonlinear_lazy"].depths[-1] >= 32
    True
    >>> get_scale("huge")
    Traceback (most recent call last):
    ...
    ValueError: scale must be one of 'smoke', 'quick', 'medium', 'paper'; got 'huge'
    """
    if isinstance(name, Scale):
        return name
    check_choice("scale", name, SCALES)
    return SCALES[name]
