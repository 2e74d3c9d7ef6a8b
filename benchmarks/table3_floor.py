"""Paper Table 3: the linear-attention floor on the top-k task, theory vs this package.

For every Table 3 row ((k, a, b) with ``PowerLawSpectrum(a, b, d=128)``,
``c_λ = c_ω = 1``) and every context size P given (the paper does not state
P), it prints in Markdown:

1. the paper's theory floor ± its MC error; the Monte Carlo floor of eq. (54)
   (:func:`theory.floor.linear_floor_monte_carlo`, cosine ranking as in the
   task, control variates, ``--queries`` queries per sampled context) ± its
   standard error, the relative difference and the difference in combined
   standard errors; the deterministic semi-analytic floor with inner-product
   ranking (:func:`theory.floor.linear_floor_semi_analytic`), and for the
   isotropic rows (a = 0) the exact cosine-ranking floor;
2. a per-P summary (χ² of MC vs paper over the rows, largest |Δ|), to say
   which P fits best;
3. the floor as a function of the polynomial degree L (first P only), to say
   which L the paper's column corresponds to.

Run::

    python benchmarks/table3_floor.py                       # P = 1024 1536 2048, 512 contexts x 64 queries
    python benchmarks/table3_floor.py --P 1024 --samples 128

Costs about ``rows x len(P) x samples x P/1024 x 2.5 ms`` of one core.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from theory.floor import linear_floor_monte_carlo, linear_floor_semi_analytic  # noqa: E402
from theory.paper import paper_table  # noqa: E402
from theory.spectra import PowerLawSpectrum  # noqa: E402

DEGREES_SHOWN = (1, 2, 3, 4, 8)


def _pct(value: float, reference: float) -> str:
    return f"{100 * (value - reference) / reference:+.2f} %"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=512, help="sampled contexts per row and P (default 512)")
    parser.add_argument("--queries", type=int, default=64, help="queries per sampled context (default 64)")
    parser.add_argument("--P", type=int, nargs="+", default=[1024, 1536, 2048], help="context sizes (default 1024 1536 2048)")
    parser.add_argument("--depth", type=int, default=16, help="polynomial degree L of the floor (default 16)")
    parser.add_argument("--d", type=int, default=128, help="input dimension (default 128)")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)

    rows = paper_table("table3")
    started = time.perf_counter()
    print(f"# Table 3: linear-attention floor, d = {args.d}, c_λ = c_ω = 1, L = {args.depth}, "
          f"{args.samples} contexts x {args.queries} queries per row (cosine ranking, control variates)\n")
    summary = []
    curves = []
    for P in args.P:
        print(f"## P = {P}\n")
        print("| k | a | b | paper theory | MC floor (eq. 54) | MC vs paper | z | semi-analytic, inner product | vs paper | exact cosine (a = 0) |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        chi2, worst = 0.0, 0.0
        for index, row in enumerate(rows):
            k, a, b = int(row["k"]), row["a"], row["b"]
            spec = PowerLawSpectrum(a, b, d=args.d)
            mc = linear_floor_monte_carlo(
                spec, P, k, args.depth, args.samples, np.random.default_rng([args.seed, P, index]),
                queries_per_context=args.queries, variance_reduction="control_variates",
            )
            semi = linear_floor_semi_analytic(spec, P, k, args.depth)
            paper, paper_err = row["theory_floor"], row["theory_mc_error"]
            z = (mc.estimate - paper) / math.hypot(mc.standard_error, paper_err)
            chi2 += z * z
            worst = max(worst, abs(mc.estimate - paper) / paper)
            cosine = "–"
            if a == 0:
                cosine_exact = linear_floor_semi_analytic(spec, P, k, args.depth, ranking="cosine").estimate
                cosine = f"{cosine_exact:.4f} ({_pct(cosine_exact, paper)})"
            print(f"| {k} | {a:g} | {b:g} | {paper:.4f} ± {paper_err:.4f} | {mc.estimate:.4f} ± {mc.standard_error:.4f} "
                  f"| {_pct(mc.estimate, paper)} | {z:+.2f} | {semi.estimate:.4f} | {_pct(semi.estimate, paper)} | {cosine} |")
            if P == args.P[0]:
                curves.append((k, a, b, mc))
            sys.stdout.flush()
        summary.append((P, chi2, len(rows), worst))
        print()

    print("## Which P fits\n")
    print("| P | χ² (MC vs paper, combined SE) | rows | largest |MC - paper| / paper |")
    print("|---|---|---|---|")
    for P, chi2, n, worst in summary:
        print(f"| {P} | {chi2:.1f} | {n} | {100 * worst:.2f} % |")

    shown = [L for L in DEGREES_SHOWN if L < args.depth] + [args.depth]
    print(f"\n## Floor vs polynomial degree L (P = {args.P[0]}, MC; the SE is common to all L)\n")
    print("| k | a | b | " + " | ".join(f"L = {L}" for L in shown) + " | SE |")
    print("|---|---|---|" + "---|" * (len(shown) + 1))
    for k, a, b, mc in curves:
        values = " | ".join(f"{mc.floor_by_degree[L - 1]:.4f}" for L in shown)
        print(f"| {k} | {a:g} | {b:g} | {values} | {mc.standard_error:.4f} |")
    print(f"\nwall time {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
