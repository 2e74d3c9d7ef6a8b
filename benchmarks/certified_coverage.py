"""Coverage of the certified study's α interval, in a world built from the study's own envelope.

Not a speed benchmark. The certified study's verdict on the paper's law (eq. 16, α = 1) rests on a profile
interval of α: the GLS fit of the gains ``R*_1 − R*_L`` with their joint-bootstrap covariance (contexts and
seeds), and the threshold ``Δχ² ≤ t²`` with ``seeds − 1`` degrees of freedom
(:func:`numerics.experiments.study.certified.statistics.summarise`). This script asks how often that interval
covers a known α, against two thinner thresholds one might be tempted by: the Satterthwaite degrees of freedom of
the deepest gain (its context and seed parts) and the normal quantile. A false CONTRADICTED verdict is a miss at
α = 1, so the miss rate at ``--alpha 1`` is the verdict's false-contradiction rate.

The world, per setting: the envelope's report-set errors ``E[L, s, i]`` (depths × seeds × contexts) of the
exported cells, split into depth means, seed deviations and context residuals. A simulated study has depth means
on the law ``c (1 − L^-α)`` (``c`` such that the deepest gain is the observed one), fresh Gaussian seed effects
with the observed between-seed covariance of the depth means times ``--multipliers`` (the covariance of three
seeds is itself uncertain: larger multipliers ask what happens if the seeds vary more than they seemed to), and
contexts resampled from the report set. Each simulated study is analysed exactly as the study analyses its own.

Run::

    python benchmarks/certified_coverage.py --nsim 200 --json coverage.json

About 0.4 s of one core per simulated study (``--bootstrap 300``); the default grid (7 settings × 3 multipliers ×
200) takes about 30 minutes loaded.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
from scipy.stats import t as student_t

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from numerics.experiments.study.plan import Plan  # noqa: E402
from numerics.experiments.study.certified.bootstrap import replicates  # noqa: E402
from numerics.experiments.study.certified.statistics import gain_law_gls  # noqa: E402
from numerics.experiments.study.certified.table import collect  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: the thresholds compared: the study's, and two thinner ones
RULES = ("t(seeds-1)", "satterthwaite", "normal")


def envelope_cube(rows, errors, setting: tuple, depths: tuple) -> np.ndarray:
    """The envelope's report-set errors of ``setting`` = (a, b, k, P): (depths, seeds, contexts), float64."""
    index = {id(r): i for i, r in enumerate(errors.rows)}
    a, b, k, P = setting
    chosen = {(r.depth, r.seed): r for r in rows if r.selected and (r.a, r.b, r.k, r.P) == (a, b, k, P)}
    seeds = sorted({s for _, s in chosen})
    missing = [(L, s) for L in depths for s in seeds if (L, s) not in chosen]
    if not seeds or missing:
        raise ValueError(f"setting {setting} lacks cells {missing[:4]}: every depth and seed must be exported")
    return np.array([[errors.values[index[id(chosen[L, s])]] for s in seeds] for L in depths], dtype=np.float64)


def satterthwaite_dof(cube: np.ndarray) -> float:
    """Degrees of freedom of the deepest gain's variance: its context part (n − 1 dof) and seed part (S − 1)."""
    _, seeds, contexts = cube.shape
    per_seed = cube[0].mean(axis=1) - cube[-1].mean(axis=1)
    v_seed = per_seed.var(ddof=1) / seeds
    v_context = (cube[0] - cube[-1]).mean(axis=0).var(ddof=1) / contexts
    return float((v_context + v_seed) ** 2 / (v_context**2 / (contexts - 1) + v_seed**2 / (seeds - 1)))


def coverage(cube: np.ndarray, depths: tuple, alpha: float, multiplier: float, nsim: int, n_bootstrap: int,
             rng: np.random.Generator, seeds: int | None = None) -> dict:
    """Per rule of :data:`RULES`, the share of ``nsim`` simulated studies whose α interval holds ``alpha``
    (``coverage``) and the share whose interval excludes α = 1 (``excludes_1``: the power of a CONTRADICTED verdict,
    or at ``alpha = 1`` its false-alarm rate).

    ``seeds``: how many seeds a simulated study has (default the envelope's); seed ``j`` reuses the context
    residuals of the envelope's seed ``j mod S``, so beyond ``S`` only the seed effects are new.
    """
    n_depths, real_seeds, contexts = cube.shape
    seeds = real_seeds if seeds is None else int(seeds)
    cell_means = cube.mean(axis=2)
    residuals = cube - cell_means[:, :, None]
    deviations = cell_means - cell_means.mean(axis=1, keepdims=True)
    values, vectors = np.linalg.eigh(deviations @ deviations.T / (real_seeds - 1))
    seed_root = vectors * np.sqrt(np.clip(values, 0.0, None) * multiplier)
    L = np.asarray(depths, dtype=np.float64)
    observed = cell_means.mean(axis=1)
    # the law through the observed deepest gain: g_L = g_Lmax (1 − L^-α) / (1 − Lmax^-α)
    truth = observed[0] - max(observed[0] - observed[-1], 1e-3) * (1.0 - L**-alpha) / (1.0 - L[-1] ** -alpha)
    hits, excludes = dict.fromkeys(RULES, 0), dict.fromkeys(RULES, 0)
    dofs = []
    residual_seed = np.arange(seeds) % real_seeds
    for _ in range(nsim):
        contexts_drawn = rng.integers(contexts, size=contexts)
        study = (truth[:, None, None] + (seed_root @ rng.standard_normal((n_depths, seeds)))[:, :, None]
                 + residuals[:, residual_seed][:, :, contexts_drawn])
        dofs.append(satterthwaite_dof(study))
        for rule, (_, lo, hi) in intervals(study, depths, n_bootstrap, rng).items():
            hits[rule] += lo <= alpha <= hi
            excludes[rule] += not lo <= 1.0 <= hi
    return {"coverage": {rule: hits[rule] / nsim for rule in RULES},
            "excludes_1": {rule: excludes[rule] / nsim for rule in RULES}, "median_dof": float(np.median(dofs))}


def intervals(cube: np.ndarray, depths: tuple, n_bootstrap: int, rng: np.random.Generator) -> dict:
    """α and its interval under each rule of :data:`RULES`, fitted as the study fits: ``{rule: (α, lo, hi)}``."""
    seeds = cube.shape[1]
    means = cube.mean(axis=(1, 2))
    boot = replicates(cube, rng, n_bootstrap)
    covariance = np.cov((boot[:, [0]] - boot[:, 1:]).T, ddof=1)
    quantiles = {"t(seeds-1)": student_t.ppf(0.975, seeds - 1),
                 "satterthwaite": student_t.ppf(0.975, satterthwaite_dof(cube)),
                 "normal": student_t.ppf(0.975, math.inf)}
    L = np.asarray(depths, dtype=np.float64)
    return {rule: gain_law_gls(L[1:], means[0] - means[1:], covariance, q**2)[:3] for rule, q in quantiles.items()}


def _settings(text: str | None, plan: Plan) -> list[tuple]:
    if text is None:
        return [(float(a), float(b), plan.k, plan.P) for a, b in plan.spectra]
    try:
        return [tuple(float(x) for x in part.split(",")) + (plan.k, plan.P) for part in text.split(";")]
    except ValueError:
        raise SystemExit(f"--settings must read 'a,b;a,b'; got {text!r}") from None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", default=str(ROOT / "docs/results/certified/cells"), help="exported cells")
    parser.add_argument("--settings", help="'a,b;a,b' (default: the main plan's spectra, P = 64, top-2)")
    parser.add_argument("--alpha", default="1", help="the true α of the simulated studies: a number (default 1: "
                        "coverage at the paper's law) or 'fit' (each envelope's own α: the power to exclude 1)")
    parser.add_argument("--sim-seeds", type=int, help="seeds per simulated study (default: the envelope's)")
    parser.add_argument("--multipliers", default="1,4,16", help="seed-covariance multipliers (default 1,4,16)")
    parser.add_argument("--nsim", type=int, default=200, help="simulated studies per setting and multiplier")
    parser.add_argument("--bootstrap", type=int, default=300, help="bootstrap replicates per simulated study")
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    try:
        alpha = None if args.alpha == "fit" else float(args.alpha)
    except ValueError:
        parser.error(f"--alpha must be a number or 'fit'; got {args.alpha!r}")
    if args.nsim < 10 or args.bootstrap < 50 or (alpha is not None and alpha <= 0):
        parser.error("--nsim must be >= 10, --bootstrap >= 50 and --alpha > 0")
    if args.sim_seeds is not None and args.sim_seeds < 2:
        parser.error("--sim-seeds must be >= 2")
    multipliers = [float(m) for m in args.multipliers.split(",")]
    plan = Plan()
    rows, errors = collect(args.cells)
    settings = _settings(args.settings, plan)
    cubes = [envelope_cube(rows, errors, setting, plan.depths) for setting in settings]
    shipped = [intervals(cube, plan.depths, 2000, np.random.default_rng([args.seed, i]))
               for i, cube in enumerate(cubes)]
    seed_sequence = np.random.SeedSequence(args.seed)
    results = []
    print(f"true α = {args.alpha}; {args.sim_seeds or 'the envelope’s'} seeds; {args.nsim} simulated studies each: "
          "coverage ± its binomial SE / the share whose interval excludes α = 1\n")
    print("| setting | true α | seed variance × | " + " | ".join(RULES) + " | median Satterthwaite dof |")
    print("|---|---|---|" + "---|" * (len(RULES) + 1))
    for setting, cube, fits in zip(settings, cubes, shipped):
        truth = fits["t(seeds-1)"][0] if alpha is None else alpha
        for multiplier, child in zip(multipliers, seed_sequence.spawn(len(multipliers))):
            out = coverage(cube, plan.depths, truth, multiplier, args.nsim, args.bootstrap,
                           np.random.default_rng(child), seeds=args.sim_seeds)
            cells = [f"{c:.3f} ± {math.sqrt(c * (1 - c) / args.nsim):.3f} / {out['excludes_1'][rule]:.3f}"
                     for rule, c in out["coverage"].items()]
            print(f"| ({setting[0]:g}, {setting[1]:g}) | {truth:.2f} | {multiplier:g} | " + " | ".join(cells)
                  + f" | {out['median_dof']:.0f} |", flush=True)
            results.append({"setting": list(setting), "alpha": truth, "multiplier": multiplier, **out})
    print("\nOn the envelope itself (α and its interval; * where the interval excludes α = 1):\n")
    print("| setting | " + " | ".join(RULES) + " |")
    print("|---|" + "---|" * len(RULES))
    for setting, fits in zip(settings, shipped):
        cells = [f"{a:.2f} [{lo:.2f}, {hi:.2f}]{' *' if not lo <= 1.0 <= hi else ''}" for a, lo, hi in fits.values()]
        print(f"| ({setting[0]:g}, {setting[1]:g}) | " + " | ".join(cells) + " |", flush=True)
    if args.json:
        record = {"alpha": args.alpha, "sim_seeds": args.sim_seeds, "nsim": args.nsim, "bootstrap": args.bootstrap,
                  "seed": args.seed, "results": results,
                  "shipped": [{"setting": list(st), **{r: list(f) for r, f in fits.items()}}
                              for st, fits in zip(settings, shipped)]}
        Path(args.json).write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
