"""Paired checks of U_L's balanced, refined and quadrature branches on fresh contexts, one spectrum at a time.

For each spectrum: one fresh fit set (2^15) and one fresh evaluation set (2^17 contexts, independent of every set
U_L was fitted, selected or reported on). On the evaluation set, paired (the same contexts for every model):

* the new U_L's model (``ExpressibleLoss.model``) and the previous U_L's model at every depth;
* U_1 against the best single cosine head with a continuous temperature (a 160-point log scan over the grid's range
  on the fit set, then golden-section refinement);
* U_L at L = 8, 16 against the antithetic construction: ``τ (I ± σ S_i)`` in pairs with independent ``S_i``
  (``σ`` in {0.125, 0.25, 0.5}, a continuous ``τ`` for each by golden section, chosen on the fit set);
* U_L at L = 4-32 against the revised certified study's trained winners (``docs/results/certified-revised``:
  the selected candidate of each seed, its weights run through ``numerics.models.nonlinear.forward``;
  the envelope's winner is the seed with the lowest selection loss).

Usage: ``python benchmarks/bench_balanced.py NEW_DIR OLD_DIR OUT_JSON a,b [a,b ...]`` where NEW_DIR / OLD_DIR hold
``theory/data/expressible``-style files (the new and the previous U_L); OUT_JSON is resumable (a spectrum already
in it is skipped) and written atomically. About 3-5 CPU minutes per spectrum.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this work tree's package first

import numpy as np  # noqa: E402

from numerics.models import nonlinear  # noqa: E402
from theory import PowerLawSpectrum  # noqa: E402
from theory.expressible import ExpressibleLoss, _golden, data_file_name  # noqa: E402
from theory.head_families import draw_contexts, form_reads  # noqa: E402

REVISED = Path(__file__).resolve().parents[1] / "docs" / "results" / "certified-revised"
D, P, K = 16, 64, 2


def summed(forms, contexts, block=64):
    out = np.zeros(contexts.n)
    for start in range(0, len(forms), block):
        out += form_reads(forms[start:start + block], contexts).sum(axis=1)
    return out


def fitted(mean_fit, target):
    return float(mean_fit @ target / (mean_fit @ mean_fit))


def errors_of(forms, gain, contexts):
    return (gain * summed(forms, contexts) / len(forms) - contexts.target) ** 2


def paired(first, second):
    diff = first - second
    return {"value": float(diff.mean()), "se": float(diff.std(ddof=1) / np.sqrt(diff.size))}


def loss(err):
    return {"value": float(err.mean()), "se": float(err.std(ddof=1) / np.sqrt(err.size))}


def winners(a, b):
    rows = [r for r in csv.DictReader(line for line in open(REVISED / "certified-study.csv") if not line.startswith("#"))
            if r["selected"] == "True" and float(r["a"]) == a and float(r["b"]) == b]
    out = {}
    for r in rows:
        out.setdefault(int(r["depth"]), []).append(r)
    return out


def winner_errors(row, raw, contexts):
    z = np.load(REVISED / "cells" / f"{row['cell']}.npz")
    params = {key[len("winner_"):]: np.asarray(z[key], dtype=np.float64) for key in z.files if key.startswith("winner_")}
    batch = SimpleNamespace(context_x=raw[:, :P], context_y=contexts.labels, test_x=raw[:, P], target=contexts.target)
    out = np.empty(contexts.n)
    for start in range(0, contexts.n, 8192):
        part = SimpleNamespace(**{k: v[start:start + 8192] for k, v in vars(batch).items()})
        out[start:start + 8192] = nonlinear.forward(params, part).prediction
    return (out - contexts.target) ** 2


def one_spectrum(a, b, new_dir, old_dir, seed):
    t0 = time.process_time()
    spectrum = PowerLawSpectrum(a, b, D)
    name = data_file_name(a, b, D, P, K)
    new = ExpressibleLoss.from_dict(json.loads((Path(new_dir) / name).read_text())["result"])
    old = ExpressibleLoss.from_dict(json.loads((Path(old_dir) / name).read_text())["result"])
    rng = np.random.default_rng([44, seed])
    fit, _ = draw_contexts(spectrum, P, K, 1 << 15, rng, with_inputs=True)
    ev, raw = draw_contexts(spectrum, P, K, 1 << 17, rng, with_inputs=True)
    eye = np.eye(D)
    out = {"a": a, "b": b, "n_fit": fit.n, "n_eval": ev.n, "depths": {}}
    new_err, old_err = {}, {}
    for L in new.depths:
        m = new.model(L)
        new_err[L] = errors_of(m.forms, m.gain, ev)
        forms, gain = old.forms(L)
        old_err[L] = errors_of(forms, gain, ev)
        out["depths"][L] = {"branch": m.branch, "new": loss(new_err[L]), "old": loss(old_err[L]),
                            "new_minus_old": paired(new_err[L], old_err[L])}
    # the best single cosine head with a continuous temperature
    scan = np.geomspace(0.3, 3e4, 160)
    reads = form_reads(scan[:, None, None] * eye, fit)
    values = [float(np.mean((fitted(r, fit.target) * r - fit.target) ** 2)) for r in reads.T]
    j = int(np.argmin(values))

    def fit_loss(log_tau):
        r = form_reads(np.exp(log_tau) * eye[None], fit)[:, 0]
        return float(np.mean((fitted(r, fit.target) * r - fit.target) ** 2))

    log_tau = _golden(fit_loss, np.log(scan[max(j - 1, 0)]), np.log(scan[min(j + 1, scan.size - 1)]), 40)
    tau = float(np.exp(log_tau))
    r = form_reads(tau * eye[None], fit)[:, 0]
    cos_err = errors_of(tau * eye[None], fitted(r, fit.target), ev)
    out["continuous_cosine"] = {"temperature": tau, "loss": loss(cos_err), "U1_minus": paired(new_err[1], cos_err),
                                "old_U1_minus": paired(old_err[1], cos_err)}
    # the antithetic construction at L = 8, 16: the balanced branch's search without balance across pairs
    out["antithetic"] = {}
    for L in (8, 16):
        S = np.random.default_rng([45, seed, L]).standard_normal((L // 2, D, D))
        S = (S + np.swapaxes(S, 1, 2)) / np.sqrt(2.0 * D)
        best = None
        for sigma in (0.125, 0.25, 0.5):
            def anti_loss(log_t, sigma=sigma):
                s = summed(np.exp(log_t) * np.concatenate([eye + sigma * S, eye - sigma * S]), fit) / L
                return float(np.mean((fitted(s, fit.target) * s - fit.target) ** 2))

            log_t = _golden(anti_loss, np.log(tau / 2.0), np.log(tau * 4.0), 10)
            value = anti_loss(log_t)
            if best is None or value < best[0]:
                forms = np.exp(log_t) * np.concatenate([eye + sigma * S, eye - sigma * S])
                best = (value, forms, fitted(summed(forms, fit) / L, fit.target), float(np.exp(log_t)), sigma)
        anti_err = errors_of(best[1], best[2], ev)
        out["antithetic"][L] = {"temperature": best[3], "sigma": best[4], "loss": loss(anti_err),
                                "U_minus": paired(new_err[L], anti_err), "old_U_minus": paired(old_err[L], anti_err)}
    # the revised study's trained winners
    out["winners"] = {}
    for L, rows in sorted(winners(a, b).items()):
        if not 4 <= L <= 32 or L not in new_err:
            continue
        per_seed = []
        for row in rows:
            err = winner_errors(row, raw, ev)
            per_seed.append({"seed": int(row["seed"]), "start": row["start"], "R_select": float(row["R_select"]),
                             "loss": loss(err), "U_minus": paired(new_err[L], err), "old_U_minus": paired(old_err[L], err)})
        envelope = min(per_seed, key=lambda item: item["R_select"])
        out["winners"][L] = {"per_seed": per_seed, "envelope_seed": envelope["seed"],
                             "U_minus": envelope["U_minus"], "old_U_minus": envelope["old_U_minus"]}
    out["cpu_seconds"] = time.process_time() - t0
    return out


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("new_dir", help="directory of the new U_L files")
    parser.add_argument("old_dir", help="directory of the previous U_L files")
    parser.add_argument("out_path", help="JSON written (resumable, atomic)")
    parser.add_argument("spectra", nargs="+", help="a,b pairs")
    args = parser.parse_args(argv)
    new_dir, old_dir, out_path = args.new_dir, args.old_dir, args.out_path
    results = json.loads(Path(out_path).read_text()) if Path(out_path).exists() else {}
    for spec in args.spectra:
        a, b = (float(v) for v in spec.split(","))
        key = f"{a:g},{b:g}"
        if key in results:
            continue
        results[key] = one_spectrum(a, b, new_dir, old_dir, seed=1000 * round(a * 100) + round(b * 100))
        tmp = Path(out_path).with_suffix(".tmp")
        tmp.write_text(json.dumps(results, indent=1))
        tmp.replace(out_path)  # atomic: a half-written file never replaces a good one
        print(f"{key}: done ({results[key]['cpu_seconds']:.0f} s CPU)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
