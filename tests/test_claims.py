"""Every claim's status in the verdict of ``REPORT.md`` follows from its own numbers.

For each claim of :func:`numerics.experiments.reproduce.report.evaluate_claims`
the status is recomputed here from the raw runs of the store (``load_results`` /
``load_arrays``, each run found by its config's content hash), exactly as the claim's
criterion text states it: means over seeds per depth, SE over seeds,
``theory.fit_depth_law`` fits, the linear floor of the reproduction's context (a theory
input) and the primitives of :mod:`numerics.experiments.criteria`; the certified study's
claims from its verdicts files, read with the ``json`` module. None of the report's
``_..._claim`` functions or the ``analysis.*_summary`` functions is used.

The thresholds are read once, at import, and each criterion text is checked to state them;
:func:`test_a_wrong_threshold_in_the_report_is_caught_by_the_independent_check` patches one in
the report's module and shows that the check then fails.

The ``smoke`` scale (20 training steps, tiny sizes) is run once per module: most claims
come out 'not reproduced', which is fine -- what is tested is that the status follows
from the numbers.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from numerics.experiments import criteria
from numerics.experiments.criteria import Verdict
from numerics.experiments.reproduce import report as report_module
from numerics.experiments.reproduce.context import ReproductionContext
from numerics.experiments.reproduce.report import evaluate_claims
from numerics.experiments.reproduce.scales import get_scale
from numerics.experiments.store import STORE_FILENAME, load_arrays, load_results
from theory import PowerLawSpectrum, fit_depth_law

SCALE = get_scale("smoke")
CLAIM_IDS = report_module.CLAIM_IDS  # the one registry (report.CLAIMS); each id has an independent check below

# the documented thresholds, read before any test can patch them (each criterion text is checked to state them)
ALPHA_LO, ALPHA_HI = (float(x) for x in criteria.ALPHA_WINDOW)
EASY = float(criteria.EASY_TARGET)
FLOOR = float(criteria.FLOOR_TARGET)
WINDOW = float(criteria.WINDOW_MARGIN)
SETTLE = float(criteria.SETTLING_TOLERANCE)
SIGMAS = float(criteria.AGREEMENT_SIGMAS)
BOUND_SIGMAS = float(criteria.BOUND_SIGMAS)
PARALLEL = float(criteria.PARALLEL_SPREAD)
SEQUENTIAL = float(criteria.SEQUENTIAL_CORRELATION)
GAIN = float(criteria.DEPTH_GAIN_THRESHOLD)  # "depth gain R_1/R_Lmax below 1.1 (saturates)"
MIN_CHECKED = int(criteria.MIN_CHECKED_DEPTHS)  # a certified verdict's fewest depths with a passed doubling check

NOT_TESTED, REPRODUCED, CONTRADICTED, INCONCLUSIVE = (Verdict.NOT_TESTED, Verdict.REPRODUCED, Verdict.CONTRADICTED,
                                                     Verdict.INCONCLUSIVE)


def _verdict(ok: bool, contradicted: bool = False) -> str:
    """Reproduced; else contradicted when the numbers exclude the claim, else inconclusive."""
    return REPRODUCED if ok else (CONTRADICTED if contradicted else INCONCLUSIVE)


#: claim id → its independent check, in the order defined below (which must be the report's order)
CHECKS: dict = {}


def independent_check(check):
    """Register ``check`` as the independent re-computation of the claim that has its name."""
    CHECKS[check.__name__] = check
    return check


# ------------------------------------------------------------------------------------------- raw numbers


class Raw:
    """The finished runs of ``out/store``, read with the store's own loaders only."""

    def __init__(self, out: Path):
        self.store = Path(out) / "store"
        done = load_results(self.store, status="done") if (self.store / STORE_FILENAME).exists() else []
        self.records = {r["hash"]: r for r in done}

    def metric(self, config, name: str) -> float:
        record = self.records.get(config.content_hash())
        if record is None:
            return math.nan
        value = record["metrics"].get(name)
        return math.nan if value is None else float(value)

    def done(self, config) -> bool:
        return config.content_hash() in self.records

    def array(self, config, name: str):
        h = config.content_hash()
        if h not in self.records:
            return None
        value = load_arrays(self.store, h, [name]).get(name)
        return None if value is None else np.asarray(value, dtype=np.float64)

    def table(self, family, a, b, quantity: str) -> tuple[np.ndarray, np.ndarray]:
        """``(depths, values[seed, depth])``; ``A_minus_C`` is ``A_L − C_L`` per run."""
        depths = np.asarray(family.depths, dtype=np.int64)
        values = np.full((len(family.seeds), len(depths)), np.nan)
        for j, depth in enumerate(depths):
            for i, seed in enumerate(family.seeds):
                config = family.config(a, b, int(depth), seed)
                if quantity == "A_minus_C":
                    values[i, j] = self.metric(config, "A_L") - self.metric(config, "C_L")
                else:
                    values[i, j] = self.metric(config, quantity)
        return depths, values


def seed_mean(values: np.ndarray) -> np.ndarray:
    """Mean over seeds (rows) of the finite values per depth (NaN where none)."""
    return np.array([values[np.isfinite(values[:, j]), j].mean() if np.isfinite(values[:, j]).any() else np.nan
                     for j in range(values.shape[1])])


def seed_se(values: np.ndarray) -> np.ndarray:
    """SE over seeds (rows): std (ddof 1) / sqrt(n); NaN with fewer than two seeds."""
    out = np.full(values.shape[1], np.nan)
    for j in range(values.shape[1]):
        column = values[np.isfinite(values[:, j]), j]
        if column.size >= 2:
            out[j] = column.std(ddof=1) / math.sqrt(column.size)
    return out


def at(depths, mean, depth) -> float:
    hits = np.flatnonzero(np.asarray(depths) == depth)
    return float(mean[hits[0]]) if hits.size else math.nan


def depth_fit(depths, values, floor=None):
    """``R_L = L0 + c L^-α`` fitted to the seeds with a value at every depth with data (None if no fit)."""
    mean = seed_mean(values)
    keep = np.isfinite(mean)
    depths, values, mean = np.asarray(depths)[keep], values[:, keep], mean[keep]
    if len(np.unique(depths)) < (3 if floor is None else 2):
        return None
    complete = values[np.all(np.isfinite(values), axis=1)]
    try:
        return fit_depth_law(depths, complete if complete.shape[0] else mean[None, :], floor)
    except (ValueError, ArithmeticError, np.linalg.LinAlgError):
        return None


def alpha_in_target(depths, values) -> bool:
    fit = depth_fit(depths, values)
    return fit is not None and ALPHA_LO <= float(fit.alpha) <= ALPHA_HI


# ------------------------------------------------------------------------------------------- each claim


@independent_check
def inverse_depth_certified(raw, ran, ctx):
    """The central claim on the certified envelope, from the verdicts file's numbers read with ``json``."""
    import json

    from numerics.experiments.shipped import shipped_path
    from numerics.experiments.study.certified.page import SHIPPED_VERDICTS

    path = Path(ctx.certified_verdicts or shipped_path(*SHIPPED_VERDICTS))
    if not path.is_file():
        return NOT_TESTED, "no verdicts file"
    record = json.loads(path.read_text())
    grid_lo, grid_hi = record["alpha_grid"]
    spectra = {(float(a), float(b)) for a, b in record["main"]["spectra"]}
    settings = record["settings"]
    revised = path.parent / "certified-revised" / path.name
    if ctx.certified_verdicts is None and revised.is_file():
        # the shipped verdicts: a spectrum the revised study has run at every planned depth takes its verdict
        done = {(float(x["a"]), float(x["b"]), x["P"], x["k"]): x for x in json.loads(revised.read_text())["settings"]
                if x["depths"] == x["planned_depths"]}
        settings = [done.get((float(x["a"]), float(x["b"]), x["P"], x["k"]), x) for x in settings]
    statuses = []
    for x in settings:
        if (float(x["a"]), float(x["b"])) not in spectra or x["P"] != record["main"]["P"] or x["k"] != record["main"]["k"]:
            continue
        checked = set(x["checked_depths"])
        p = x["primary"]
        if x["depths"] != x["planned_depths"] or len(x["depths"]) < 3 or len(checked) < MIN_CHECKED or p is None:
            statuses.append(INCONCLUSIVE)  # budget, or too few depths whose doubling check ran and passed
        elif any(depth in checked for _, depth in x["failed"]):
            statuses.append(INCONCLUSIVE)
        elif p["lo"] <= p["reference"] <= p["hi"]:
            bounded = p["alpha_lo"] > grid_lo and p["alpha_hi"] < grid_hi
            statuses.append(REPRODUCED if bounded else INCONCLUSIVE)
        elif any(v["alpha_lo"] <= 1.0 <= v["alpha_hi"] for v in x["variants"]):
            statuses.append(INCONCLUSIVE)  # an analysis variant keeps α = 1
        else:
            statuses.append(CONTRADICTED)
    if not statuses:
        return NOT_TESTED, "no main setting"
    ok = statuses.count(REPRODUCED) == len(spectra)
    return _verdict(ok, CONTRADICTED in statuses), f"per spectrum {statuses}"


@independent_check
def inverse_depth(raw, ran, ctx):
    """The cold Adam 1e-3 recipe's finding, from the certified verdicts file read with ``json`` (independent of the
    families run): its law fits (χ²/dof within the rule), its gain is resolved and its α interval meets the window."""
    import json

    from numerics.experiments.shipped import results_dir
    from theory.paper import paper_table

    if ctx.envelopes is None:
        return NOT_TESTED, "no certified study"
    wanted = ({(float(r["a"]), float(r["b"]), 2) for r in paper_table("table1")}
              | {(float(r["a"]), float(r["b"]), int(r["k"])) for r in paper_table("table4")})
    records = {}
    # the study's record alone (the first study's beside it is data no code reads)
    record = json.loads((results_dir() / "certified-revised/certified-study.verdicts.json").read_text())
    for x in record["settings"]:
        key = (float(x["a"]), float(x["b"]), int(x["k"]))
        if x["P"] == record["main"]["P"] and key in wanted:
            records[key] = next((r for r in x["recipes"] if r["name"] == "cold lr=0.001"), None)
    found = {key: r for key, r in records.items() if r is not None}
    if not found:
        return NOT_TESTED, "no setting"
    passing, excluded = [], []
    for key, r in found.items():
        fits = r["dof"] > 0 and r["chi2"] / r["dof"] <= criteria.GAIN_LAW_MAX_CHI2_DOF
        resolved = r["gain"] > SIGMAS * r["gain_se"]
        meets = r["alpha_lo"] <= ALPHA_HI and r["alpha_hi"] >= ALPHA_LO
        if fits and resolved:
            (passing if meets else excluded).append(key)
    ok = len(passing) == len(found) == len(wanted)
    return _verdict(ok, bool(excluded)), f"passing {passing}, excluded {excluded}"


@independent_check
def lazy_contrast(raw, ran, ctx):
    if "nonlinear_lazy" not in ran:
        return NOT_TESTED, "not run"
    family = SCALE.families["nonlinear_lazy"]
    passing, measured, excluded = [], 0, []
    for a, b in family.spectra:
        depths, R = raw.table(family, a, b, "R_L")
        if not np.isfinite(seed_mean(R)).any():
            continue
        measured += 1
        C = seed_mean(raw.table(family, a, b, "C_L")[1])
        gap = seed_mean(raw.table(family, a, b, "A_minus_C")[1])
        c_change = criteria.last_doubling(depths, C)[2]
        g_change = criteria.last_doubling(depths, gap)[2]
        settled = c_change < SETTLE and g_change < SETTLE
        if alpha_in_target(depths, R) and settled:
            passing.append((a, b))
        fit = depth_fit(depths, R)
        if settled and fit is not None:
            alpha, se = float(fit.alpha), float(fit.standard_errors["alpha"])
            # outside [lo, hi] by more than two SE
            if math.isfinite(se) and (alpha + SIGMAS * se < ALPHA_LO or alpha - SIGMAS * se > ALPHA_HI):
                excluded.append((a, b))
    if not measured:
        return NOT_TESTED, "no finished runs"
    ok = (len(passing) >= 3 and (0.0, 0.0) in passing and any(a > 0 for a, _ in passing)
          and any(b > 0 for _, b in passing))
    return _verdict(ok, bool(excluded)), f"passing spectra {passing}, excluded {excluded}"


@independent_check
def shipped_rerun(raw, ran, ctx):
    """Each re-trained shipped candidate within its own SE of the shipped selection-set loss."""
    if not ctx.certified_checks:
        return NOT_TESTED, "no spot checks"
    diffs = [(raw.metric(cfg, "R_L") - row["R_select"], row["R_select_se"]) for row, cfg in ctx.certified_checks
             if raw.done(cfg)]
    if not diffs:
        return NOT_TESTED, "no finished runs"
    ok = all(abs(d) <= se for d, se in diffs) and len(diffs) == len(ctx.certified_checks)
    return _verdict(ok, any(abs(d) > se for d, se in diffs)), f"differences {diffs}"


@independent_check
def linear_easy(raw, ran, ctx):
    if "linear_easy" not in ran:
        return NOT_TESTED, "not run"
    family = SCALE.families["linear_easy"]
    verdicts = []
    for a, b in family.spectra:
        upper = PowerLawSpectrum(a, b, family.d).condition_number / WINDOW  # L <= (λ_1/λ_d)/10
        if sum(1 for L in family.depths if L <= upper) < 3:
            continue  # not resolvable at this d
        depths, R = raw.table(family, a, b, "R_L")
        keep = depths <= upper
        fit = depth_fit(depths[keep], R[:, keep], floor=0.0)
        if fit is None:
            continue
        zeta = (a + b - 1) / a
        alpha, se = float(fit.alpha), float(fit.standard_errors["alpha"])
        verdicts.append(zeta > 0 and criteria.between(alpha, se, zeta, 2 * zeta, SIGMAS) is True)
    if not verdicts:
        return NOT_TESTED, "no resolvable spectrum with a fit"
    return _verdict(all(verdicts), not all(verdicts)), f"alpha in [ζ, 2ζ] per tested spectrum: {verdicts}"


@independent_check
def linear_floor(raw, ran, ctx):
    names = [n for n in ("linear_difficult", "linear_difficult_k16") if n in ran]
    if not names:
        return NOT_TESTED, "not run"
    deviations, passes = [], []
    for name in names:
        family = SCALE.families[name]
        for a, b in family.spectra:
            depths, R = raw.table(family, a, b, "R_L")
            mean = seed_mean(R)
            if not np.isfinite(mean).any():
                continue
            deepest = int(depths[np.isfinite(mean)].max())
            floor, _ = ctx.floor_at(family, a, b, deepest)
            plateau = at(depths, mean, deepest)
            se = at(depths, seed_se(R), deepest)
            if not math.isfinite(se):  # one seed: the held-out SE of that run
                done = [family.config(a, b, deepest, seed) for seed in family.seeds
                        if raw.done(family.config(a, b, deepest, seed))]
                se = raw.metric(done[0], "R_L_se")
            floor_se = ctx.floor_at(family, a, b, deepest)[1]
            deviation = criteria.relative_deviation(plateau, floor)
            # within the tolerance and not more than two SE below the floor: a finite-P explanation is no reproduction
            deviations.append(deviation)
            passes.append(deviation < FLOOR and not plateau < floor - SIGMAS * math.hypot(se, floor_se))
    if not deviations:
        return NOT_TESTED, "no finished runs"
    return _verdict(all(passes)), f"relative deviations {deviations}, passing {passes}"


@independent_check
def easy_softmax(raw, ran, ctx):
    if "nonlinear_easy" not in ran:
        return NOT_TESTED, "not run"
    family = SCALE.families["nonlinear_easy"]
    ratios = []
    for a, b in family.spectra:
        runs = [family.config(a, b, 1, seed) for seed in family.seeds]
        runs = [c for c in runs if raw.done(c)]
        if not runs:
            continue
        ratio = np.mean([raw.metric(c, "R_L") for c in runs]) / np.mean([raw.metric(c, "initial_eval_loss") for c in runs])
        if np.isfinite(ratio):
            ratios.append(float(ratio))
    if not ratios:
        return NOT_TESTED, "no finished runs"
    return _verdict(all(r < EASY for r in ratios)), f"final/initial at L = 1: {ratios}"


@independent_check
def selection_tail(raw, ran, ctx):
    if "nonlinear_lazy" not in ran:
        return NOT_TESTED, "not run"
    family = SCALE.families["nonlinear_lazy"]
    verdicts, worse = [], []
    for a, b in family.spectra:
        stats = []
        for depth in (min(family.depths), max(family.depths)):
            q = [np.quantile(e, 0.99) for e in (raw.array(family.config(a, b, depth, s), "selection_error")
                                                for s in family.seeds) if e is not None]
            q = np.asarray(q, dtype=np.float64)[:, None]
            stats.append((float(seed_mean(q)[0]) if len(q) else math.nan, float(seed_se(q)[0]) if len(q) else math.nan))
        (q1, se1), (qL, seL) = stats
        if not (math.isfinite(q1) and math.isfinite(qL)):
            continue
        combined = math.hypot(np.nan_to_num(se1), np.nan_to_num(seL))
        verdicts.append(q1 - qL > SIGMAS * combined)
        worse.append(q1 - qL < -SIGMAS * combined)
    if not verdicts:
        return NOT_TESTED, "no finished runs"
    return _verdict(all(verdicts), any(worse)), f"ΔQ(0.99) beyond two SE per spectrum: {verdicts}"


def _mode_matrix(raw, family, a, b) -> np.ndarray:
    rows = []
    for depth in family.depths:
        stack = [raw.array(family.config(a, b, depth, s), "modewise_loss_normalised") for s in family.seeds]
        stack = [x for x in stack if x is not None]
        rows.append(np.mean(stack, axis=0) if stack else np.full(family.d, np.nan))
    return np.vstack(rows)


@independent_check
def modewise(raw, ran, ctx):
    if not ("nonlinear_lazy" in ran and "linear_easy" in ran):
        return NOT_TESTED, "not run"
    softmax, linear = SCALE.families["nonlinear_lazy"], SCALE.families["linear_easy"]
    soft_spectra = [s for s in softmax.spectra if s[0] > 0]
    linear_spectra = [s for s in linear.spectra if s[0] > 0]
    if not (soft_spectra and linear_spectra):
        return NOT_TESTED, "no spectrum with a > 0"
    soft = _mode_matrix(raw, softmax, *soft_spectra[0])
    lin = _mode_matrix(raw, linear, *linear_spectra[0])
    if soft.shape[0] < 3 or not np.all(np.isfinite(soft)) or not np.all(np.isfinite(lin)):
        return NOT_TESTED, "no finished runs"
    # softmax: normalised reducible loss (M_L − M_Lmax)/(M_1 − M_Lmax) at every intermediate depth, std over modes
    with np.errstate(invalid="ignore", divide="ignore"):
        reducible = (soft[1:-1] - soft[-1]) / (soft[0] - soft[-1])
    spreads = [float(np.nanstd(row)) for row in reducible]
    parallel = all(s < PARALLEL for s in spreads)
    # linear: Spearman(mode index, normalised mode loss) at every depth > 1
    modes = np.arange(1, lin.shape[1] + 1)
    rhos = [float(spearmanr(modes, row).statistic) for L, row in zip(linear.depths, lin) if L > 1]
    sequential = all(r > SEQUENTIAL for r in rhos)
    return _verdict(parallel and sequential), f"spreads {spreads}, Spearman {rhos}"


@independent_check
def context_updates(raw, ran, ctx):
    if not ("context_updates" in ran and "context_updates_k16" in ran):
        return NOT_TESTED, "not run"
    top2, top16 = SCALE.families["context_updates"], SCALE.families["context_updates_k16"]
    d2, R2 = raw.table(top2, *top2.spectra[0], "R_L")
    d16, R16 = raw.table(top16, *top16.spectra[0], "R_L")
    mean16 = seed_mean(R16)
    if not (np.isfinite(seed_mean(R2)).any() and np.isfinite(mean16).any()):
        return NOT_TESTED, "no finished runs"
    r1, rmax = at(d16, mean16, min(top16.depths)), at(d16, mean16, int(d16[np.isfinite(mean16)].max()))
    gain = criteria.depth_gain(r1, rmax)[0] if (math.isfinite(r1) and math.isfinite(rmax) and rmax > 0) else math.nan
    m_depths, m = raw.table(top16, *top16.spectra[0], "m")
    m16 = at(m_depths, seed_mean(m), max(top16.depths))  # the learned m at the deepest model
    ok = alpha_in_target(d2, R2) and gain < GAIN and m16 < 0
    return _verdict(ok), f"top-2 alpha in target {alpha_in_target(d2, R2)}, top-16 gain {gain}, m {m16}"


@independent_check
def paper_plateaus(consistency):
    if consistency is None:
        return NOT_TESTED, "consistency not run", []
    rows = list(consistency.rows)
    if not rows:
        return NOT_TESTED, "no consistency rows", []
    # below the bound: more than BOUND_SIGMAS of the bound's SEs under the best mixture
    below = [float(r.paper_value) < r.mixture - BOUND_SIGMAS * float(np.nan_to_num(r.mixture_se)) for r in rows]
    return _verdict(not any(below)), f"{sum(below)} of {len(rows)} below", below


#: what the report's evidence says when a claim is not tested for the given reason
NOT_TESTED_EVIDENCE = {"not run": ("not run", "needs "), "no finished runs": ("no finished runs", "did not finish"),
                       "no certified study": ("no certified study",), "no spot checks": ("no spot checks",),
                       "no resolvable spectrum with a fit": ("no fit",), "no spectrum with a > 0": ("a > 0",),
                       "consistency not run": ("was not run",), "no consistency rows": ("no consistency rows",),
                       "no verdicts file": ("no certified-study verdicts",),
                       "no main setting": ("no setting with every seed at depth 1",)}


def independent_statuses(out: Path, ran, ctx, consistency) -> dict:
    """``{claim id: (status, why)}`` recomputed from the raw store of ``out``."""
    raw = Raw(out)
    return {name: paper_plateaus(consistency)[:2] if check is paper_plateaus else check(raw, tuple(ran), ctx)
            for name, check in CHECKS.items()}


def disagreements(claims, statuses) -> list[str]:
    """Claims whose measured status differs from the independent one (or is 'not tested' for another reason).

    The measured status: at the smoke scale every claim is reported "not judged", and what its numbers say
    is kept in ``measured_status``; that is what is recomputed here."""
    wrong = []
    for claim in claims:
        status, why = statuses[claim.id]
        if claim.measured_status != status or (status == NOT_TESTED and not any(
                s in claim.evidence for s in NOT_TESTED_EVIDENCE[why])):
            wrong.append(claim.id)
    return wrong


def _explain(claims, statuses) -> str:
    return "\n".join(f"{c.id}: report {c.measured_status!r}, independent {statuses[c.id][0]!r} ({statuses[c.id][1]}); "
                     f"evidence: {c.evidence[:200]}" for c in claims)


# ------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def smoke(smoke_reproduction, tmp_path_factory):
    """The session's smoke reproduction (tests/conftest.py) and its consistency report recomputed with
    reproduce's arguments."""
    from numerics.experiments.reproduce.plan import CONSISTENCY_SIZES as _CONSISTENCY_SIZES
    from numerics.experiments.execution import Execution
    from numerics.experiments.study import run_regime_study

    base = tmp_path_factory.mktemp("claims")
    result = smoke_reproduction
    out = result.out_dir
    # the study's runs and bounds are in the shared store and cache: nothing is trained or sampled again
    execution = Execution(workers=2, progress=False, store_dir=out / "store", cache_dir=out / "cache")
    consistency = run_regime_study(SCALE.study, base / "study-again", execution=execution,
                                   consistency=_CONSISTENCY_SIZES[SCALE.name]).consistency
    return result, consistency


def _context(out, families=(), *, table=True, scale=SCALE):
    """A fresh context like reproduce's: the shipped certified study unless ``table`` is False."""
    from numerics.experiments.reproduce.envelope import load_envelopes

    return ReproductionContext.open(scale, out, families=families, envelopes=load_envelopes() if table else None,
                                    envelopes_error="" if table else "not loaded",
                                    certified_verdicts=None if table else Path(out) / "no-certified-verdicts.json")


# ------------------------------------------------------------------------------------------- tests


def test_every_claims_status_follows_from_its_own_numbers(smoke):
    result, consistency = smoke
    ctx = _context(result.out_dir, result.plan.families)
    claims = evaluate_claims(ctx, consistency)
    assert tuple(c.id for c in claims) == tuple(c.id for c in result.claims) == CLAIM_IDS
    assert [c.measured_status for c in claims] == [c.measured_status for c in result.claims], \
        "the verdict is not reproducible"
    statuses = independent_statuses(result.out_dir, result.plan.families, ctx, consistency)
    assert disagreements(result.claims, statuses) == [], _explain(result.claims, statuses)
    assert disagreements(claims, statuses) == [], _explain(claims, statuses)
    # not vacuous: at smoke scale some claims pass and some fail
    assert {s for s, _ in statuses.values()} >= {REPRODUCED, INCONCLUSIVE}


def test_every_registered_claim_has_an_independent_check_and_contrasts_say_they_are_not_the_papers(smoke):
    result, _ = smoke
    assert tuple(CHECKS) == CLAIM_IDS  # the same claims in the same order (each check is written independently)
    for claim in result.claims:
        says_contrast = "not a claim of the paper" in claim.paper.lower()
        assert (claim.kind == "contrast") == says_contrast, (claim.id, claim.kind, claim.paper)
    assert {c.kind for c in result.claims} == {"paper", "contrast"}
    assert set(report_module.CENTRAL_CLAIMS) <= {c.id for c in result.claims if c.kind == "paper"}


def test_every_paper_plateau_is_below_the_bound_only_by_more_than_three_bound_SEs(smoke):
    _, consistency = smoke
    _, _, below = paper_plateaus(consistency)
    assert below == [r.below_bound for r in consistency.rows]
    assert len(below) > 0


@pytest.mark.parametrize("families", [("linear_easy",), ("nonlinear_lazy", "linear_easy", "linear_difficult")],
                         ids=["linear_easy-only", "three-families"])
def test_a_claim_whose_families_were_not_run_is_not_tested_and_the_rest_follow_their_numbers(smoke, families):
    result, _ = smoke
    ctx = _context(result.out_dir, families)
    claims = evaluate_claims(ctx, None)
    statuses = independent_statuses(result.out_dir, families, ctx, None)
    assert disagreements(claims, statuses) == [], _explain(claims, statuses)
    assert statuses["context_updates"] == (NOT_TESTED, "not run")
    assert statuses["paper_plateaus"][0] == NOT_TESTED


def test_a_claim_with_no_finished_runs_is_not_tested(tmp_path):
    ctx = _context(tmp_path, table=False)  # every family planned, nothing in the store, no certified study
    claims = evaluate_claims(ctx, None)
    statuses = independent_statuses(tmp_path, tuple(SCALE.families), ctx, None)
    assert disagreements(claims, statuses) == [], _explain(claims, statuses)
    assert {s for s, _ in statuses.values()} == {NOT_TESTED}


def test_every_criterion_text_states_the_threshold_the_check_uses(smoke):
    result, _ = smoke
    text = {c.id: c.criterion for c in result.claims}
    for claim_id in ("inverse_depth", "lazy_contrast", "context_updates"):
        assert f"[{ALPHA_LO}, {ALPHA_HI}]" in text[claim_id], claim_id
    assert f"< {100 * SETTLE:.0f} %" in text["lazy_contrast"]
    assert "two paired SE" in text["inverse_depth"] and SIGMAS == 2
    assert f"χ²/dof ≤ {criteria.GAIN_LAW_MAX_CHI2_DOF:g}" in text["inverse_depth"]
    assert f"below {100 * EASY:g} %" in text["easy_softmax"]
    assert f"within {100 * FLOOR:.0f} %" in text["linear_floor"] and "finite-P floor" in text["linear_floor"]
    assert "two SE" in text["linear_floor"]
    assert "(λ_1/λ_d)/10" in text["linear_easy"] and WINDOW == 10 and "two SE" in text["linear_easy"]
    assert "two SE" in text["selection_tail"] and SIGMAS == 2
    assert f"below {PARALLEL:g}" in text["modewise"] and f"above {SEQUENTIAL:g}" in text["modewise"]
    assert f"below {GAIN:g}" in text["context_updates"] and GAIN == 1.1
    assert f"more than {BOUND_SIGMAS:.0f} SE" in text["paper_plateaus"]
    assert f"at least {MIN_CHECKED}" in text["inverse_depth_certified"]
    assert "not more than two SE below it" in text["linear_floor"]


# the threshold patched in criteria, the claims that use it, and a value that flips them either way
PATCHES = {
    "EASY_TARGET": (("easy_softmax",), lambda reproduced: 0.0 if reproduced else 1e9),
    "FLOOR_TARGET": (("linear_floor",), lambda reproduced: 0.0 if reproduced else 1e9),
    "ALPHA_WINDOW": (("inverse_depth", "lazy_contrast", "context_updates"),
                     lambda reproduced: (2.0, 1.0) if reproduced else (-math.inf, math.inf)),
    # no checked depth required: the shipped (0, 0) verdict, resting on 4 checked depths, would be decided
    "MIN_CHECKED_DEPTHS": (("inverse_depth_certified",), lambda reproduced: 10**6 if reproduced else 0),
}


def _recipe_law_fitting(tmp_path) -> Path:
    """A copy of the shipped certified verdicts (and the tables they are checked against) in which the cold
    recipe's gain law fits at every setting (χ² = dof): the shipped law fits nowhere, so α's window decides
    nothing there, and the mutation below needs a study where it does."""
    import json

    from _checkout import ROOT

    source, target = ROOT / "docs" / "results", tmp_path / "results"
    for name in ("certified-study.verdicts.json", "certified-study.csv", "certified-revised/certified-study.verdicts.json",
                 "certified-revised/certified-study.csv", "certified-revised/certified-revised.json"):
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        text = (source / name).read_text()
        if name.endswith("verdicts.json"):
            record = json.loads(text)
            for setting in record["settings"]:
                for recipe in setting["recipes"]:
                    if recipe["name"] == "cold lr=0.001" and recipe["dof"] > 0:
                        recipe["chi2"], recipe["fit_reported"] = float(recipe["dof"]), True
            text = json.dumps(record)
        (target / name).write_text(text)
    return target


@pytest.mark.parametrize("constant", list(PATCHES))
def test_a_wrong_threshold_in_the_report_is_caught_by_the_independent_check(smoke, monkeypatch, tmp_path, constant):
    result, consistency = smoke
    users, flip = PATCHES[constant]
    if constant == "ALPHA_WINDOW":
        monkeypatch.setenv("IDEPTH_RESULTS", str(_recipe_law_fitting(tmp_path)))
    ctx = _context(result.out_dir, result.plan.families)
    statuses = independent_statuses(result.out_dir, result.plan.families, ctx, consistency)
    target = "inverse_depth" if constant == "ALPHA_WINDOW" else users[0]  # a tested claim that this constant decides
    assert statuses[target][0] != NOT_TESTED
    original = getattr(criteria, constant)
    monkeypatch.setattr(criteria, constant, flip(statuses[target][0] == REPRODUCED))
    patched = evaluate_claims(_context(result.out_dir, result.plan.families), consistency)  # fresh memo
    wrong = disagreements(patched, statuses)
    assert target in wrong, _explain(patched, statuses)
    assert set(wrong) <= set(users), wrong
    monkeypatch.setattr(criteria, constant, original)
    assert disagreements(evaluate_claims(_context(result.out_dir, result.plan.families), consistency), statuses) == []


# ------------------------------------------------------------------------------------------- three outcomes
def test_three_outcome_verdict_rules():
    """Reproduced; contradicted only when the numbers exclude the claim; otherwise inconclusive with its reason."""
    from types import SimpleNamespace

    from numerics.experiments.reproduce._registry import verdict as _verdict
    from numerics.experiments.reproduce._verdicts import _alpha_excluded

    assert _verdict(None) == {"status": NOT_TESTED}
    assert _verdict(True, contradicted=True) == {"status": REPRODUCED}
    assert _verdict(False, contradicted=True, reason="x") == {"status": CONTRADICTED, "reason": "x"}
    assert _verdict(False, reason="budget: y") == {"status": INCONCLUSIVE, "reason": "budget: y"}

    def summary(alpha, se, settled=True, ok=True):
        fit = SimpleNamespace(ok=ok, value=lambda name: alpha, se=lambda name: se)
        return SimpleNamespace(fit=fit, C_settles=settled, gap_settles=settled)

    assert _alpha_excluded(summary(0.5, 0.1), 0.85, 1.15)  # 0.5 + 2·0.1 < 0.85
    assert not _alpha_excluded(summary(0.7, 0.1), 0.85, 1.15)  # within two SE of the band
    assert not _alpha_excluded(summary(1.0, 0.1), 0.85, 1.15)  # inside
    assert _alpha_excluded(summary(1.5, 0.1), 0.85, 1.15)
    assert not _alpha_excluded(summary(0.5, 0.1, settled=False), 0.85, 1.15)  # not settled: not adequately powered
    assert not _alpha_excluded(summary(0.5, float("nan")), 0.85, 1.15)  # no SE: cannot exclude
    assert not _alpha_excluded(summary(0.5, 0.1, ok=False), 0.85, 1.15)


# ------------------------------------------------------------------------------------------- one registry
def test_a_claim_registered_once_appears_in_every_list_the_report_reads(tmp_path, monkeypatch):
    """The report's claim list, ids, figures and central claims are views of one registry: a claim registered in it
    once appears in the verdict, its counts, the opening paragraph and report.json."""
    from numerics.experiments.reproduce.plotting import Figure
    from numerics.experiments.reproduce._registry import REGISTRY, verdict

    assert report_module.CLAIMS == REGISTRY.specs and CLAIM_IDS == REGISTRY.ids == tuple(s.id for s in REGISTRY.specs)
    assert report_module.CLAIM_FIGURES == REGISTRY.figures == {s.id: s.figures for s in REGISTRY.specs}
    assert report_module.CENTRAL_CLAIMS == REGISTRY.central == {s.id: s.topic for s in REGISTRY.specs if s.topic}
    monkeypatch.setattr(REGISTRY, "_specs", dict(REGISTRY._specs))  # the probe is gone after the test

    @REGISTRY.claim("probe", paper="A probe.", figures=("fig7b",), families=("linear_easy",), topic="The probe")
    def _probe(ctx, consistency):
        return dict(criterion="always met", evidence="one number", summary="1 of 1", **verdict(True))

    import dataclasses

    judged = dataclasses.replace(SCALE, judges_claims=True)  # at the smoke scale itself every claim is not judged
    claims = evaluate_claims(_context(tmp_path, table=False, scale=judged), None)
    assert tuple(c.id for c in claims) == CLAIM_IDS + ("probe",) == REGISTRY.ids
    probe = claims[-1]
    assert (probe.paper, probe.kind, probe.status, probe.families) == ("A probe.", "paper", REPRODUCED, ("linear_easy",))
    assert "probe" in report_module.verdict_counts(claims)["paper"][REPRODUCED]
    assert "**The probe: REPRODUCED** — its criterion is met by the numbers: 1 of 1." in report_module.conclusions(claims)
    data = report_module.report_data([Figure("fig7b", (Path("f.png"), Path("f.pdf")), "caption")], claims)
    assert "probe" in data["figures"]["fig7b"]["verdicts"] and data["claims"][-1]["figures"] == ["fig7b"]
    with pytest.raises(ValueError, match="registered twice"):
        REGISTRY.claim("probe", paper="again")(_probe)
