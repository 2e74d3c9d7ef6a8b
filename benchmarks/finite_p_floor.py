"""The finite-P linear floor (polynomial in the EMPIRICAL S) against the population floor and trained plateaus.

For the quick reproduction's linear top-k runs (top-2: d = 32, P = 128, L = 8;
top-16: d = 16, P = 128, L = 4) it prints, in Markdown:

1. the population floor T − hᵀG†h (eqs. 47-53) as the reproduction computed it
   (its ``tables/table3.json``), the finite-P floor
   :func:`theory.floor.linear_floor_finite_p` (fitted on one set of contexts,
   scored on another, ± SE over seeds), and the paired gain population − finite-P
   (the same contexts through both classes, ``covariance='population'``);
2. with the reproduction's store, a paired comparison on the trained runs' own
   held-out set (``eval_seed``, 1024 contexts, regenerated with
   :func:`numerics.train.evaluation_batch`): the trained model's loss, the loss of the
   fitted finite-P and population predictors on the same contexts and teachers,
   and trained − finite-P with a per-context paired SE. The eval-set noise,
   which is common to all three, cancels in the differences;
3. with ``--paper``, the finite-P floor at the paper's Table 3 sizes for the k = 16
   rows (d = 128, P = 1024, L = 8, 8 seeds x 256 contexts x 8 queries; the population floor
   converges by L ≈ 4).

Run::

    OMP_NUM_THREADS=1 python benchmarks/finite_p_floor.py --reproduction /tmp/fresh2/reproduction
    OMP_NUM_THREADS=1 python benchmarks/finite_p_floor.py --reproduction /tmp/fresh2/reproduction --paper

About 3 minutes of one core for part 1-2, 4 more with ``--paper``; ``--diagonal`` adds the
L = 1 predictors ``S D q`` and ``M S q`` with D, M diagonal in Σ's eigenbasis (not expressible
by the trained model under per-context rotations; for scale only), about 1 minute.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from theory.floor import linear_floor_finite_p  # noqa: E402
from theory.floor._finite_p import _fit_seed, _operator  # noqa: E402
from theory.spectra import PowerLawSpectrum  # noqa: E402

#: (k, d, P, depth, (a, b)) of the quick reproduction's linear difficult-task families
CASES = [
    (2, 32, 128, 8, (0.0, 0.0)),
    (2, 32, 128, 8, (0.0, 0.5)),
    (2, 32, 128, 8, (0.5, 0.0)),
    (2, 32, 128, 8, (0.5, 0.5)),
    (2, 32, 128, 8, (1.0, 1.0)),
    (16, 16, 128, 4, (0.5, 0.5)),
    (16, 16, 128, 4, (1.0, 0.0)),
]
#: the paper's Table 3 k = 16 rows: (a, b) -> (theory ± MC error, measured)
PAPER_K16 = {(0.5, 0.5): (0.3218, 0.0042, 0.3083), (1.0, 0.0): (0.4481, 0.0086, 0.4452),
             (1.0, 0.25): (0.3186, 0.0085, 0.3222), (1.25, 0.0): (0.3595, 0.0090, 0.3659)}


def paired_floors(spectrum, P, k, depth, seed, n_contexts, n_seeds, queries):
    """Per-seed held-out losses of both classes on identical contexts: (empirical (n_seeds,), population, fits)."""
    lam, omega = spectrum.eigenvalues, spectrum.teacher_eigenvalues
    out = {}
    for covariance in ("empirical", "population"):
        fits = [_fit_seed(r, lam, omega, P, k, depth, n_contexts, queries, 32, "cosine", covariance)
                for r in np.random.default_rng(seed).spawn(n_seeds)]
        out[covariance] = fits
    emp = np.array([f.held_out[-1] for f in out["empirical"]])
    pop = np.array([f.held_out[-1] for f in out["population"]])
    return emp, pop, out


def diagonal_class_depth_one(spectrum, P, k, seed, n_contexts, n_seeds, queries):
    """Held-out loss of L = 1 predictors with a matrix diagonal in Σ's eigenbasis: S D q (eq. 24's S B) and M S q.

    Not expressible by the trained model when every context has its own Haar rotation
    (eq. 3; a fixed B cannot follow Σ's eigenbasis); an optimistic class, for scale only.
    Returns ((S D q mean, SE), (M S q mean, SE)) over seeds.
    """
    from theory.floor._finite_p import _sample

    lam, omega = spectrum.eigenvalues, spectrum.teacher_eigenvalues
    right, left = [], []
    for seed_rng in np.random.default_rng(seed).spawn(n_seeds):
        sets = []
        for rng in seed_rng.spawn(2):  # fitting set, evaluation set
            q, x, t = _sample(rng, lam, P, k, n_contexts, queries, "cosine")
            S = np.matmul(np.swapaxes(x, -1, -2), x) / P  # (n, d, d)
            features = S[:, None, :, :] * q[:, :, None, :]  # [n, Q, i, j] = S_ij q_j
            sets.append((features.reshape(-1, lam.size, lam.size), t.reshape(-1, lam.size)))
        (F, t), (F_eval, t_eval) = sets
        w = np.sqrt(omega)[None, :, None]
        D = np.linalg.lstsq((w * F).reshape(-1, lam.size), (w[..., 0] * t).reshape(-1), rcond=None)[0]
        right.append(np.mean(np.sum(omega * (t_eval - F_eval @ D) ** 2, axis=-1)))
        Sq, Sq_eval = F.sum(axis=-1), F_eval.sum(axis=-1)
        M = np.sum(t * Sq, axis=0) / np.sum(Sq * Sq, axis=0)  # per coordinate
        left.append(np.mean(np.sum(omega * (t_eval - M * Sq_eval) ** 2, axis=-1)))
    return mean_se(right), mean_se(left)


def mean_se(values):
    values = np.asarray(values, dtype=np.float64)
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(values.size))


def trained_comparison(store, k, d, P, depth, a, b, fits):
    """Trained model of ``depth`` vs the fitted degree-``depth`` predictors on its own held-out set (per-context paired)."""
    from numerics.experiments.store import load_arrays, load_results
    from numerics.train import TrainConfig, evaluation_batch

    runs = [r for r in load_results(store) if r["config"]["model"] == "linear" and r["config"]["task"] == "difficult"
            and (r["config"]["k"], r["config"]["d"], r["config"]["P"], r["config"]["depth"]) == (k, d, P, depth)
            and (r["config"]["a"], r["config"]["b"]) == (a, b) and r["status"] == "done"]
    if not runs:
        return None
    run = runs[0]
    fields = set(TrainConfig.__dataclass_fields__)
    config = TrainConfig(**{key: value for key, value in run["config"].items() if key in fields})
    batch = evaluation_batch(config)
    trained = np.asarray(load_arrays(store, run["hash"], ["eval_prediction"])["eval_prediction"], dtype=np.float64)
    target = np.asarray(batch.target, dtype=np.float64)
    x = np.asarray(batch.context_x, dtype=np.float64)
    q = np.asarray(batch.test_x, dtype=np.float64)[:, None, :]
    beta = np.asarray(batch.teacher, dtype=np.float64)
    rotation = np.asarray(batch.rotation, dtype=np.float64)
    lam = config.spectrum().eigenvalues

    def population(v):  # Σ v = O (λ ⊙ Oᵀ v) in the rotated frame of eq. (3)
        return np.matmul(lam * np.matmul(v, rotation), np.swapaxes(rotation, -1, -2))

    losses = {"trained": (trained - target) ** 2}
    for covariance, apply in (("empirical", _operator(x, lam, "empirical")), ("population", population)):
        per_seed = [np.einsum("bd,bd->b", beta, f.predict_direction(q, apply, depth)[:, 0, :])
                    for f in fits[covariance]]
        losses[covariance] = (np.mean(per_seed, axis=0) - target) ** 2  # coefficients averaged over seeds
    reported = run["metrics"]["R_L"]
    return losses, reported


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reproduction", type=Path, default=None, help="reproduction directory (tables/, store/)")
    parser.add_argument("--contexts", type=int, default=8192, help="contexts per fitting / evaluation set")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--queries", type=int, default=4)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--paper", action="store_true", help="also the paper's Table 3 k = 16 rows at d = 128, P = 1024")
    parser.add_argument("--diagonal", action="store_true", help="also the L = 1 eigenbasis-diagonal classes")
    args = parser.parse_args(argv)

    floors = {}
    if args.reproduction is not None:
        for row in json.loads((args.reproduction / "tables" / "table3.json").read_text())["rows"]:
            values = row["_values"]
            if "floor" in values:
                floors[(values["k"], float(values["a"]), float(values["b"]))] = values
    store = None if args.reproduction is None else args.reproduction / "store"

    print("| k | d | P | L | (a, b) | population floor (reproduction) | population, same least squares | "
          "finite-P floor | paired gain pop − finite-P | trained plateau (reported) | trained − finite-P (same eval set) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    extra = []
    for k, d, P, depth, (a, b) in CASES:
        start = time.process_time()
        spec = PowerLawSpectrum(a, b, d)
        emp, pop, fits = paired_floors(spec, P, k, depth, args.seed, args.contexts, args.seeds, args.queries)
        e, e_se = mean_se(emp)
        p, p_se = mean_se(pop)
        g, g_se = mean_se(pop - emp)
        ref = floors.get((k, a, b))
        ref_text = "—" if ref is None else f"{ref['floor']:.4f} ± {ref['floor_se']:.4f}"
        trained_text, paired_text = "—", "—"
        if store is not None:
            result = trained_comparison(store, k, d, P, depth, a, b, fits)
            if result is not None:
                losses, reported = result
                tr, tr_se = mean_se(losses["trained"])
                diff, diff_se = mean_se(losses["trained"] - losses["empirical"])
                dpop, dpop_se = mean_se(losses["trained"] - losses["population"])
                trained_text = f"{reported:.4f} ± {tr_se:.4f}"
                one = trained_comparison(store, k, d, P, 1, a, b, fits)
                if one is not None:  # at L = 1 the scalar class is the model's whole class (Haar rotations)
                    d1, d1_se = mean_se(one[0]["trained"] - one[0]["empirical"])
                    extra.append(f"- top-{k} ({a:g}, {b:g}): L = 1 trained {one[1]:.4f}, finite-P L = 1 predictor "
                                 f"{one[0]['empirical'].mean():.4f} on the same eval set; trained − finite-P "
                                 f"{d1:+.4f} ± {d1_se:.4f} ({d1 / d1_se:+.1f} SE)")
                paired_text = f"{diff:+.4f} ± {diff_se:.4f} ({diff / diff_se:+.1f} SE)"
                extra.append(f"- top-{k} ({a:g}, {b:g}): on the eval set trained {tr:.4f}, finite-P predictor "
                             f"{losses['empirical'].mean():.4f}, population predictor {losses['population'].mean():.4f}; "
                             f"trained − population {dpop:+.4f} ± {dpop_se:.4f} ({dpop / dpop_se:+.1f} SE)")
        print(f"| {k} | {d} | {P} | {depth} | ({a:g}, {b:g}) | {ref_text} | {p:.4f} ± {p_se:.4f} | "
              f"{e:.4f} ± {e_se:.4f} | {g:+.4f} ± {g_se:.4f} ({100 * g / p:.1f} %) | {trained_text} | {paired_text} |")
        extra.append(f"- top-{k} ({a:g}, {b:g}): finite-P by degree "
                     + ", ".join(f"{v:.4f}" for v in np.mean([f.held_out for f in fits['empirical']], axis=0))
                     + f" (CPU {time.process_time() - start:.0f} s)")
        sys.stdout.flush()
    print()
    print("\n".join(extra))

    if args.diagonal:
        print()
        print("| k | (a, b) | finite-P L = 1 (scalar B) | S D q, D diagonal in Σ's eigenbasis | M S q, M diagonal |")
        print("|---|---|---|---|---|")
        for k, d, P, depth, (a, b) in CASES:
            spec = PowerLawSpectrum(a, b, d)
            scalar = linear_floor_finite_p(spec, P, k, 1, rng=args.seed, n_contexts=args.contexts // 4,
                                           n_seeds=args.seeds, queries_per_context=args.queries)
            (r, r_se), (m, m_se) = diagonal_class_depth_one(spec, P, k, args.seed, args.contexts // 4, args.seeds,
                                                              args.queries)
            print(f"| {k} | ({a:g}, {b:g}) | {scalar.estimate:.4f} ± {scalar.standard_error:.4f} | "
                  f"{r:.4f} ± {r_se:.4f} | {m:.4f} ± {m_se:.4f} |")
            sys.stdout.flush()

    if args.paper:
        print()
        print("| (a, b) | paper theory | paper measured | population, same least squares | finite-P floor | "
              "paired gain pop − finite-P | CPU s |")
        print("|---|---|---|---|---|---|---|")
        for (a, b), (theory, theory_se, measured) in PAPER_K16.items():
            start = time.process_time()
            emp, pop, _ = paired_floors(PowerLawSpectrum(a, b, 128), 1024, 16, 8, args.seed, 256, 8, 8)
            (e, e_se), (p, p_se), (g, g_se) = mean_se(emp), mean_se(pop), mean_se(pop - emp)
            print(f"| ({a:g}, {b:g}) | {theory:.4f} ± {theory_se:.4f} | {measured:.4f} | {p:.4f} ± {p_se:.4f} | "
                  f"{e:.4f} ± {e_se:.4f} | {g:+.4f} ± {g_se:.4f} ({100 * g / p:.1f} %) | "
                  f"{time.process_time() - start:.0f} |")
            sys.stdout.flush()

if __name__ == "__main__":
    main()
