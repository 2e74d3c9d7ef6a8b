"""The run schedule of a reproduction.

:func:`make_plan` turns a scale and a choice of artefacts (:data:`.artefacts.ARTEFACTS`, re-exported here)
into a :class:`Schedule`: the distinct training runs and the cost model's estimate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Sequence

from numerics.models import get_model
from numerics.models.cost import StepCost

from ..study.plan import Plan
from .artefacts import ARTEFACTS, Artefact, parse_only
from .scales import Scale, get_scale

__all__ = ["Artefact", "ARTEFACTS", "CONSISTENCY_SIZES", "Schedule", "parse_only", "make_plan", "estimate_run_seconds", "step_milliseconds",
           "study_seconds", "analysis_seconds", "duration_text"]


#: context lengths at d = 128 at which each scale checks the paper's plateaus (Table 3), and the quick scale's
#: Monte-Carlo contexts there: at 1024 contexts every paper plateau already lies 7-15 SE below the bound
#: (3 SE decide), where the scale's 8192 took most of the quick reproduction's post-training time
CONSISTENCY_SIZES = {
    "smoke": dict(d=16, P_values=(64,)),  # exercises the section only; sizes are not the paper's
    "quick": dict(P_values=(1024,), paper_size_contexts=1024),
    "medium": dict(P_values=(1024, 2048)),
    "paper": dict(P_values=(1024, 2048)),
}


#: an anisotropic spectrum's Haar rotation: CPU ms per B·P·d² (rotating the inputs) and per
#: B·d³ (its QR), fitted to benchmarks/bench_sampler.py
_ROTATION_COST = (2.2e-8, 1.5e-7)


def _step_cost(model: str) -> StepCost:
    """The ``STEP_COST`` of ``model`` (a ValueError if it declares none)."""
    cost = getattr(get_model(model), "STEP_COST", None)
    if not isinstance(cost, StepCost):
        raise ValueError(f"model {model!r} declares no STEP_COST (a numerics.models.cost.StepCost), "
                         "so the run-time estimate has no cost for its steps")
    return cost


def _step_and_sample_ms(config) -> tuple:
    """(one training step, drawing its batch) in CPU ms."""
    cost = _step_cost(config.model)
    B, P, N, d, L = config.batch_size, config.P, config.N, config.d, config.depth
    sample_ms = cost.per_input * B * P * d
    if (config.a, config.b) != (0.0, 0.0):
        sample_ms += _ROTATION_COST[0] * B * P * d * d + _ROTATION_COST[1] * B * d**3
    per_layer = cost.per_layer + cost.per_layer_per_Bd * B * d
    step_ms = (cost.fixed + sample_ms + cost.per_gram * B * P * d * d
               + L * (per_layer + cost.per_layer_size * cost.layer_size_of(B, P, N, d, L)))
    return step_ms, sample_ms


def step_milliseconds(config) -> float:
    """Estimated CPU ms of one training step of ``config`` (the model's ``STEP_COST``).

    Examples
    --------
    >>> from numerics.train import TrainConfig
    >>> round(step_milliseconds(TrainConfig(model="nonlinear", task="difficult", d=16, N=32, P=64, depth=16,
    ...                                     batch_size=256)), 1)
    2.8
    """
    return _step_and_sample_ms(config)[0]


def estimate_run_seconds(config) -> float:
    """Estimated wall time (s, one core) of one training run of ``config``.

    Steps, the held-out set drawn once, evaluations (≈ 1/3 of a step per
    batch), the final diagnostics (≈ 3 evaluations) and a fixed 1 s.

    Examples
    --------
    >>> from numerics.train import TrainConfig
    >>> cheap = estimate_run_seconds(TrainConfig(model="nonlinear", d=8, N=8, P=32, depth=1, max_steps=100))
    >>> dear = estimate_run_seconds(TrainConfig(model="nonlinear", d=32, N=32, P=128, depth=32, max_steps=100))
    >>> 0 < cheap < dear
    True
    """
    step_ms, sample_ms = _step_and_sample_ms(config)
    B = config.batch_size
    eval_batches = config.eval_size / B
    n_evals = config.max_steps // config.eval_every + 1
    eval_ms = eval_batches * sample_ms + n_evals * eval_batches * (step_ms - sample_ms) / 3.0  # drawn once
    final_ms = 3 * eval_batches * (step_ms - sample_ms) / 3.0
    return 1.0 + (config.max_steps * step_ms + eval_ms + final_ms) / 1000.0


@dataclass(frozen=True)
class Schedule:
    """What a reproduction will run, and what it will cost (the study's plans are
    :class:`~numerics.experiments.study.plan.Plan` values; this is the run list and the estimate).

    Attributes
    ----------
    configs : tuple of numerics.train.TrainConfig
        The distinct training runs of the ``families`` the ``artefacts`` need.
    estimated_seconds : float
        The sum of their :func:`estimate_run_seconds`.
    study_seconds : mapping of str to float
        The same for the studies besides (:func:`study_seconds`).

    Examples
    --------
    >>> plan = make_plan("smoke", "fig6c")
    >>> plan.families, len(plan.configs) == get_scale("smoke").families["nonlinear_lazy"].n_runs
    (('nonlinear_lazy',), True)
    """

    scale: Scale
    artefacts: tuple
    families: tuple
    configs: tuple
    estimated_seconds: float
    study_seconds: Mapping = field(default_factory=lambda: MappingProxyType({}))

    @property
    def total_seconds(self) -> float:
        return self.estimated_seconds + sum(self.study_seconds.values())

    @property
    def n_runs(self) -> int:
        return len(self.configs)

    def family(self, name: str) -> Plan:
        return self.scale.families[name]

    def format(self, workers: int | None = None, *, backend: str = "local") -> str:
        """The plan as printed before a reproduction starts.

        Examples
        --------
        >>> "runs" in make_plan("smoke", "table2").format(2)
        True
        """
        lines = [f"idepth reproduce: scale {self.scale.name!r} ({self.scale.description})",
                 f"  artefacts: {', '.join(self.artefacts)}"]
        for name in self.families:
            family = self.scale.families[name]
            lines.append(f"  {name}: {family.n_runs} runs — {family.describe()}")
        from .scales import measured_run_time

        measured = measured_run_time(self.scale.name)
        whole = measured is not None and set(self.artefacts) == set(ARTEFACTS)  # the measured figure, not a second one

        def on_workers(seconds: float) -> str:
            return f" (≈ {duration_text(seconds / workers)} on {workers} {backend} worker(s))" if workers else ""

        if whole:
            line = f"  total: {self.n_runs} distinct training runs; whole reproduction measured: {measured.text()}"
        else:
            line = (f"  total: {self.n_runs} distinct training runs, cost-model estimate ≈ "
                    f"{duration_text(self.estimated_seconds)} of one core" + on_workers(self.estimated_seconds))
        lines.append(line + "; the store is reused, so a re-run only trains what is missing")
        if self.study_seconds and not whole:
            parts = ", ".join(f"{name} ≈ {duration_text(value)}" for name, value in self.study_seconds.items())
            lines.append(f"  studies (skipped with --no-study): {parts}; all together ≈ "
                         f"{duration_text(self.total_seconds)} of one core" + on_workers(self.total_seconds))
        if self.scale.needs_cluster:
            lines.append(f"  scale {self.scale.name!r} needs a Dask cluster: run with --backend dask "
                         "--scheduler tcp://HOST:8786")
        return "\n".join(lines)


def duration_text(seconds: float) -> str:
    """A duration as the plan and the estimate print it: seconds below 2 min, minutes below 2 h, else hours.

    Examples
    --------
    >>> duration_text(42.4), duration_text(185), duration_text(9000)
    ('42 s', '3.1 min', '2 h')
    """
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:,.0f} h"


def make_plan(scale: str | Scale, only: str | Sequence[str] | None = None) -> Schedule:
    """The runs needed for the artefacts ``only`` (default: all) at ``scale``.

    Raises
    ------
    ValueError
        Unknown scale or artefact ID.

    Examples
    --------
    >>> plan = make_plan("smoke")
    >>> len(plan.artefacts), plan.n_runs <= plan.scale.n_runs
    (26, True)
    """
    scale = get_scale(scale)
    ids = parse_only(only)
    needed = {family for artefact_id in ids for family in ARTEFACTS[artefact_id].families}
    ordered = tuple(name for name in scale.families if name in needed)
    unique: dict = {}  # identical configs of two families run once
    for name in ordered:
        for config in scale.families[name].configs():
            unique.setdefault(config.content_hash(), config)
    configs = tuple(unique.values())
    studies = MappingProxyType(study_seconds(scale) if only is None else {})
    return Schedule(scale=scale, artefacts=ids, families=ordered, configs=configs,
                estimated_seconds=sum(estimate_run_seconds(c) for c in configs), study_seconds=studies)


def study_seconds(scale: str | Scale) -> dict:
    """Estimates (s, one core) of the studies a whole reproduction runs too.

    The regime study (the certified study is read from the shipped results, never trained here).

    Examples
    --------
    >>> list(study_seconds("quick"))
    ['regime study']
    """
    from ..study.regimes import trained_configs

    scale = get_scale(scale)
    return {"regime study": sum(estimate_run_seconds(c) for c in trained_configs(scale.study).values())}


#: CPU seconds of the analysis after training on the cost model's reference machine, fitted to the profile of a
#: quick reproduction (benchmarks/bench_reproduce.py): an oracle bound per context x token (the softmax reads over
#: its temperature grid) and per context x token x dimension (drawing the tokens); a finite-P linear floor and a
#: Monte-Carlo floor per context x token x dimension (x seed); a frozen-heads control per context x token x
#: dimension x layer; one artefact (a figure's PNG and PDF, or a table); and the rest of a whole reproduction
#: (imports, reading the store, the regime study's figures and pages, the report)
_ANALYSIS_COST = MappingProxyType(dict(
    bound_per_token=2.1e-7, bound_per_entry=2.35e-9, finite_p_per_entry=2.0e-8, floor_per_entry=9e-9,
    frozen_per_entry=6.4e-10, artefact=0.37, fixed=5.0,
))


def _bound_seconds(d: int, P: int, n_contexts: int) -> float:
    cost = _ANALYSIS_COST
    return n_contexts * P * (cost["bound_per_token"] + cost["bound_per_entry"] * d)


def analysis_seconds(scale: str | Scale, artefacts: Sequence[str] | None = None, *, study: bool = True) -> dict:
    """Estimated CPU seconds (reference machine) of a reproduction's work after training.

    ``{"parallel": s, "serial": s}``: the oracle bounds (regime study, consistency check, plotted
    softmax families) and the linear floors are computed by the local pool (``parallel``,
    :meth:`numerics.experiments.reproduce.context.ReproductionContext.prefetch`); the frozen-heads controls, the figures, tables and report
    by the main process (``serial``). Bounds shared between sections are priced once.

    References
    ----------
    Paper eqs. (47)-(54) (floors), (60) (bounds).

    Examples
    --------
    >>> cost = analysis_seconds("quick")
    >>> sorted(cost), 0 < cost["parallel"] and 0 < cost["serial"]
    (['parallel', 'serial'], True)
    >>> analysis_seconds("quick", ["table2"], study=False)["parallel"]
    0.0
    """
    from ..study.plateaus import paper_plateaus
    from .context import FINITE_P_SEEDS
    from .tables import PAPER_D

    scale = get_scale(scale)
    ids = parse_only(artefacts)
    needed = {family for artefact_id in ids for family in ARTEFACTS[artefact_id].families}
    families = [scale.families[name] for name in scale.families if name in needed]
    cost = _ANALYSIS_COST
    pooled: dict = {}  # (a, b, d, P, k, similarity, contexts) -> seconds
    serial = cost["fixed"] + cost["artefact"] * len(ids)
    if study:
        s = scale.study
        for d, P, N in s.sizes:
            for a, b in s.all_spectra:
                for similarity in ("cosine", "prenorm"):
                    pooled[(a, b, d, P, s.k, similarity, s.bound_contexts)] = _bound_seconds(d, P, s.bound_contexts)
            frozen = len(s.spectra_of("frozen_heads")) * len(s.seeds)
            serial += frozen * cost["frozen_per_entry"] * (s.fit_size + s.eval_size) * P * d * max(s.depths)
        sizes = CONSISTENCY_SIZES.get(scale.name, {})
        d_paper = sizes.get("d", PAPER_D)  # paper_consistency's default: the sizes of the paper's Table 3
        contexts = {(d_paper, P): sizes.get("paper_size_contexts", s.bound_contexts) for P in sizes.get("P_values", ())}
        for d, P, _ in s.sizes:
            contexts.setdefault((d, P), s.bound_contexts)
        plateaus = paper_plateaus()
        for (d, P), n in contexts.items():
            for row in plateaus:
                if row["k"] <= P:
                    pooled[(row["a"], row["b"], d, P, row["k"], "cosine", n)] = _bound_seconds(d, P, n)
    floors = 0.0
    for family in (f for f in families if f.task == "difficult"):
        for a, b in family.spectra:
            if family.model == "linear":
                entries = scale.floor_samples * family.P * family.d
                floors += cost["finite_p_per_entry"] * FINITE_P_SEEDS * entries + (cost["floor_per_entry"] * entries
                                                                                   if a else 0.0)
            else:
                pooled[(a, b, family.d, family.P, family.k, "cosine", scale.bound_contexts)] = _bound_seconds(
                    family.d, family.P, scale.bound_contexts)
    return {"parallel": float(sum(pooled.values()) + floors), "serial": float(serial)}
