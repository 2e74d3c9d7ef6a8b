"""``R*_∞``: the infinite-mixture limit of the softmax model, bracketed by fully corrective Frank–Wolfe.

The controlled softmax model of depth ``L`` predicts ``g (1/L) Σ_ℓ u_{D_ℓ}`` (paper eq. 60), with
``u_D = softmax_j(x̂_testᵀ D x̂_j) · y`` one head of form ``D`` (:func:`theory.head_families.form_reads`).
It is the equal-weight ``L``-point measure ``μ_L = (1/L) Σ_ℓ δ_{D_ℓ}`` read through
``g E_μ u_D``. Over all probability measures ``μ`` of general (not only symmetric) ``d × d`` forms,

    ``R*_∞ = inf_{μ, g ≥ 0} E(g E_μ u_D − y*)²``,

a convex problem in ``ν = g μ`` (a non-negative measure) whose value is below every ``R*_L``
(derivation page ``bracket``). This module estimates it from both sides:

* **Frank–Wolfe** on a *fit* set of contexts: each iteration asks a best-response oracle for the form
  ``D`` minimising ``E[r u_D]`` against the residual ``r = g E_μ u − y*`` (a multi-restart, batched
  Adam search: restarts at cosine heads ``τ I``, at random general forms and at perturbed atoms of the
  current measure; the gradient ``∂u_D/∂D = x̂_test (Σ_j p_j (y_j − u_D) x̂_j)ᵀ`` is analytic), then
  re-fits every atom's weight and the gain jointly (non-negative least squares on ``c = g w``, the
  *fully corrective* step) and drops atoms of weight 0. The oracle searches on a *fresh* pool of
  contexts each iteration (the residual is a function of the context, so it is evaluated there) and
  only compares its candidates on the fit set: an oracle run on the fit set itself fits its noise
  (a cold head's ``d²`` entries can flip many near-ties at once). The run starts from the non-negative
  mixture of cosine heads and of the shipped ``U_L``'s deepest model (``warm_start``); an optional
  *sliding* step moves all atoms.
* **Upper estimate**: the fitted mixture is a fixed model of the convex hull, so its loss on an
  independent *report* set estimates a value ``≥ R*_∞`` (up to its standard error, stated).
* **Lower estimate**: the fit-set optimum minus the Frank–Wolfe duality gap ``2 g δ`` with
  ``δ = max(0, −min_D E_fit[r u_D])``. After the fully corrective step ``E_fit[r u_j] = 0`` on every
  atom, so by convexity any measure of mass ``g`` has fit loss ``≥ fit_loss − 2 g δ``. Two caveats, both
  stated wherever the number is shown: the *in-sample* optimum is biased low (the atoms and weights were
  fitted to the same contexts), and ``δ`` is the best the oracle's restarts found, so the gap is a lower
  bound on the true gap only up to the oracle's reach; the bound is for measures of the fitted mass ``g``
  (the gain is re-fitted at every step, so the optimum's mass is the fitted one at convergence).

**The head kernel** ``K(D, D') = E[ũ_D ũ_D']`` with ``ũ_D = u_D − E_μ u`` (centred on the measure's
mean prediction), as the integral operator on ``L²(μ)``: the eigenvalues ``λ_m`` of
``W^{1/2} K W^{1/2}`` (``W = diag(w)``) on the Frank–Wolfe support, computed on the report set. Their
sum is the i.i.d. variance ``V = E Var_μ(u)``: ``L`` i.i.d. heads from ``μ`` at the fixed gain cost
exactly ``g² V / L`` above ``R(μ)`` (α = 1, Maurey). Equal-weight points chosen well (kernel herding,
balanced heads) cost ``g²`` times the squared quadrature error of ``μ`` in ``K``, which for an
eigen-decay ``λ_m ~ m^{-s}`` falls like ``L^{-s}`` for ``1 < s ≤ 2`` and never faster than ``L^{-2}``
with equal weights; a finite effective rank ``r_eff = (Σλ)²/Σλ²`` gives ``L^{-2}`` beyond a crossover
depth of about ``r_eff``. Hence ``alpha_predicted = clip(s, 1, 2)``, with ``s`` fitted on a stated range
of ``m`` and its interval from a jackknife over blocks of report contexts (:func:`kernel_spectrum`).

**Resumable**: :func:`infinite_mixture` with ``checkpoint=path`` writes its state after every iteration
atomically (a temporary sibling, then ``os.replace``) with ``"final": false``; a rerun with the same
options resumes from it (otherwise it restarts), and only the end of the run writes ``"final": true``.
:func:`shipped_infinite_mixture` refuses a file that is not final.

**Where the parts live**: the best-response oracle in :mod:`theory.fw_oracle`, the result record and its
file in :mod:`theory.mixture_result`, what would close the bracket in :mod:`theory.bracket_closure`; their
public names are re-exported here.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import replace
from importlib import resources
from pathlib import Path

import numpy as np

from theory.bracket_closure import bracket_closure, continued_gap  # noqa: F401 (re-exported: closing the bracket)
from theory.fw_oracle import best_response, read_gradient, slide_atoms  # noqa: F401 (read_gradient re-exported)
from theory.head_families import Contexts, draw_contexts, form_reads, mixture_limit
from theory.head_kernel import herding_excess, kernel_spectrum
from theory.mixture_result import InfiniteMixture, load_infinite_mixture
from theory.spectra import as_spectrum
from theory.validation import check_positive_int, check_top_k

__all__ = ["InfiniteMixture", "infinite_mixture", "shipped_infinite_mixture", "read_gradient",
           "load_infinite_mixture", "weights_fit_size", "ORACLE_DEFAULTS", "best_response", "data_file_name",
           "fit_size_curve", "SHIPPED_DIR", "DEFAULT_SIZES", "compute_spectra", "default_out_dir", "confirm_gap",
           "bracket_closure", "continued_gap"]

#: where the shipped results live, inside the ``theory`` package (written by ``idepth bracket compute``)
SHIPPED_DIR = ("data", "mixture_limit")
#: fit and report set sizes of the shipped runs: the largest fit set the per-spectrum CPU budget allows, since the
#: weights' fit-size curve every result ships (``InfiniteMixture.fit_size``) still falls up to it at (0, 0)
DEFAULT_SIZES = {"n_fit": 1 << 16, "n_report": 1 << 16}
#: the oracle's and the sliding step's options (:func:`best_response`; ``pool``: fresh search contexts per
#: iteration; every ``slide_every`` iterations all atoms move ``slide_steps`` Adam steps, 0: never)
ORACLE_DEFAULTS = {"n_random": 8, "n_perturbed": 8, "steps": 64, "batch": 1024, "polish": 3, "polish_steps": 16,
                   "pool": 1 << 15, "slide_every": 0, "slide_steps": 20}
#: fewest contexts in the fit and the report sets
MIN_CONTEXTS = 64


def data_file_name(a: float, b: float, d: int, P: int, k: int) -> str:
    """The shipped file of one setting: ``a{a}_b{b}_d{d}_P{P}_k{k}.json``.

    References
    ----------
    Paper eq. (2) (``a``, ``b``) and eq. (6) (``k``).

    Examples
    --------
    >>> data_file_name(0, 0.25, 16, 64, 2)
    'a0_b0.25_d16_P64_k2.json'
    """
    return f"a{a:g}_b{b:g}_d{d}_P{P}_k{k}.json"


# --------------------------------------------------------------------------- Frank–Wolfe

def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a fsynced temporary sibling and ``os.replace`` (no half-written file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as readable as any file the user creates (mkstemp makes it 0600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _check_spectrum(spectrum):
    try:
        return as_spectrum(spectrum)
    except TypeError as exc:
        raise ValueError(str(exc)) from None


def _compact(contexts: Contexts) -> Contexts:
    """The same contexts with the unit inputs held in float32 (the reads compute in float32 anyway)."""
    return Contexts(contexts.context_unit.astype(np.float32), contexts.test_unit.astype(np.float32),
                    contexts.labels, contexts.target)


def _se(values: np.ndarray) -> float:
    return float(values.std(ddof=1) / np.sqrt(values.size))


def _warm_start_forms(spectrum, P: int, k: int, d: int) -> np.ndarray:
    """Cosine heads ``τ I`` at 24 temperatures ``1 … 1000`` and the distinct forms of ``U_L``'s deepest model."""
    forms = [tau * np.eye(d) for tau in np.geomspace(1.0, 1000.0, 24)]
    if hasattr(spectrum, "a"):
        from theory.expressible import shipped_expressible  # the shipped U_L, read only
        shipped = shipped_expressible(spectrum, P, k)
        if shipped is not None:
            model, _ = shipped.forms(int(shipped.depths[-1]))
            forms += list(np.unique(model, axis=0))
    return np.stack(forms)


def infinite_mixture(spectrum, P: int, k: int = 2, *, n_fit: int = DEFAULT_SIZES["n_fit"],
                     n_report: int = DEFAULT_SIZES["n_report"], iterations: int = 30, tol: float = 1e-4,
                     seed: int = 0, oracle: dict | None = None, warm_start: bool = True, initial_forms=None,
                     checkpoint=None, progress=None, compare_expressible: bool = True,
                     _target=None, _interrupt_after: int | None = None) -> InfiniteMixture:
    """``R*_∞`` bracketed: fully corrective Frank–Wolfe over measures of forms, with the gain fitted.

    Parameters
    ----------
    spectrum : theory.Spectrum or theory.PowerLawSpectrum
    P, k : int
        Context length and top-k (paper eq. 6).
    n_fit, n_report : int
        Sizes of the fit set (Frank–Wolfe and the oracle) and the independent report set (the upper
        estimate, the kernel spectrum); at least 64 each.
    iterations : int
        Most Frank–Wolfe iterations (oracle calls).
    tol : float
        Stop when the duality gap falls below ``tol``.
    seed : int
        The fit set is drawn from ``seed``, the report set from ``seed + 1``, the oracle from ``seed + 2``.
    oracle : dict, optional
        Options of :func:`best_response` (``n_random``, ``n_perturbed``, ``steps``, ``batch``, ``polish``,
        ``polish_steps``).
    checkpoint : str or os.PathLike, optional
        A JSON file the state is written to after every iteration (``"final": false``) and the result at
        the end (``"final": true``); an unfinished file written with the same options is resumed, any
        other is replaced.
    progress : callable, optional
        Called with one line per iteration (elapsed time and an estimate of the rest).
    warm_start : bool
        Start from the non-negative mixture of cosine heads and the shipped ``U_L``'s deepest model
        (when shipped) instead of the empty measure.
    initial_forms : array_like, shape (m, d, d), optional
        Start from the non-negative mixture of these forms instead (overrides ``warm_start``).
    compare_expressible : bool
        Evaluate the shipped ``U_L`` model at its deepest depth on the report set (paired difference).

    Returns
    -------
    InfiniteMixture

    References
    ----------
    Paper eqs. (59)-(63); derivation page ``bracket``.

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> small = dict(steps=4, polish_steps=2, n_random=1, n_perturbed=1, batch=64)
    >>> mix = infinite_mixture(PowerLawSpectrum(0, 0, 4), 8, 2, n_fit=256, n_report=256, iterations=2,
    ...                        oracle=small, warm_start=False, compare_expressible=False)
    >>> mix.final, mix.lower <= mix.fit_loss, mix.gap >= 0
    (True, True, True)
    """
    spectrum = _check_spectrum(spectrum)
    P = check_positive_int("P", P)
    k = check_top_k(k, P)
    n_fit = check_positive_int("n_fit", n_fit, minimum=MIN_CONTEXTS)
    n_report = check_positive_int("n_report", n_report, minimum=MIN_CONTEXTS)
    iterations = check_positive_int("iterations", iterations)
    seed = check_positive_int("seed", seed, minimum=0)
    if not (isinstance(tol, (int, float)) and tol >= 0):
        raise ValueError(f"tol must be a number >= 0; got {tol!r}")
    options = dict(ORACLE_DEFAULTS)
    if oracle:
        unknown = set(oracle) - set(options)
        if unknown:
            raise ValueError(f"oracle has unknown options {sorted(unknown)}; allowed: {sorted(options)}")
        options.update({key: check_positive_int(f"oracle[{key!r}]", value,
                                                minimum=0 if key in ("n_random", "n_perturbed", "slide_every") else 1)
                        for key, value in oracle.items()})
    search = {key: options[key] for key in ("n_random", "n_perturbed", "steps", "batch", "polish", "polish_steps")}
    d = spectrum.d
    setting = {"a": getattr(spectrum, "a", None), "b": getattr(spectrum, "b", None), "d": d, "P": P, "k": k,
               "n_fit": n_fit, "n_report": n_report, "iterations": iterations, "tol": tol,
               "warm_start": bool(warm_start),
               "seeds": {"fit": seed, "report": seed + 1, "oracle": seed + 2}, "oracle": options}
    path = None if checkpoint is None else Path(checkpoint)

    cpu0 = time.process_time()  # from here: drawing the sets and the warm start count too

    def draw(n: int, rng_or_seed) -> Contexts:
        contexts = _compact(draw_contexts(spectrum, P, k, n, rng_or_seed))
        if _target is not None:  # test hook: a target whose optimal measure is known
            contexts = Contexts(contexts.context_unit, contexts.test_unit, contexts.labels,
                                np.asarray(_target(contexts), dtype=np.float64))
        return contexts

    fit = draw(n_fit, seed)
    report = draw(n_report, seed + 1)
    rng = np.random.default_rng(seed + 2)
    forms = np.zeros((0, d, d))
    coef = np.zeros(0)
    history: list = []
    cpu_before = 0.0
    if path is not None and path.is_file():
        state = json.loads(path.read_text(encoding="utf-8"))
        if not state.get("final") and state.get("setting") == json.loads(json.dumps(setting)):
            forms = np.asarray(state["state"]["forms"], dtype=np.float64).reshape(-1, d, d)
            coef = np.asarray(state["state"]["coef"], dtype=np.float64)
            history = list(state["history"])
            cpu_before = float(state["cpu_seconds"])
            rng.bit_generator.state = state["state"]["rng"]
    if not history and initial_forms is not None:
        forms = np.asarray(initial_forms, dtype=np.float64)
        if forms.ndim != 3 or forms.shape[1:] != (d, d) or forms.shape[0] == 0:
            raise ValueError(f"initial_forms must have shape (m, {d}, {d}) with m >= 1; got {forms.shape}")
    elif not history and warm_start:
        # start from the cosine heads and U_L's deepest model (their non-negative mixture is already below
        # U_L in-sample): Frank–Wolfe from the empty measure spends its first dozens of atoms getting there
        forms = _warm_start_forms(spectrum, P, k, d)
    U_fit = form_reads(forms, fit) if forms.shape[0] else np.zeros((n_fit, 0))
    U_rep = form_reads(forms, report) if forms.shape[0] else np.zeros((n_report, 0))
    if not history and forms.shape[0]:
        lim = mixture_limit(U_fit, fit.target)
        keep = lim.weights > 0
        forms, coef, U_fit, U_rep = forms[keep], lim.weights[keep], U_fit[:, keep], U_rep[:, keep]
    wall0 = time.time()
    resumed_at = len(history)
    y = fit.target

    def save_state(final_result: InfiniteMixture | None) -> None:
        if path is None:
            return
        if final_result is not None:
            _write_atomic(path, json.dumps(final_result.to_dict()))
            return
        state = {"final": False, "setting": setting, "history": history,
                 "cpu_seconds": cpu_before + time.process_time() - cpu0,
                 "state": {"forms": forms.tolist(), "coef": coef.tolist(), "rng": rng.bit_generator.state}}
        _write_atomic(path, json.dumps(state))

    gap = float("inf")
    while True:
        residual = U_fit @ coef - y
        gain = float(coef.sum())
        weights = coef / gain if gain > 0 else coef
        # a fresh search pool each iteration: the oracle never sees the fit set except to choose among its
        # candidates, so the atoms do not chase the fit set's noise
        pool = draw(options["pool"], rng)
        pool_residual = (form_reads(forms, pool) @ coef if coef.size else 0.0) - pool.target
        D, phi = best_response(pool, pool_residual, select=(fit, residual), atoms=forms, weights=weights, rng=rng,
                               **search)
        if gain > 0 and 2 * gain * max(0.0, -phi) <= tol and len(history) < iterations:
            # the oracle is a stochastic search: a call that finds nothing must be confirmed before the run stops
            pool = draw(options["pool"], rng)
            pool_residual = form_reads(forms, pool) @ coef - pool.target
            D2, phi2 = best_response(pool, pool_residual, select=(fit, residual), atoms=forms, weights=weights,
                                     rng=rng, **search)
            if phi2 < phi:
                D, phi = D2, phi2
        delta = max(0.0, -phi)
        # the gap of the current iterate: with E[r u_j] = 0 on the atoms, any measure of mass g has loss >= F − 2gδ;
        # before the first atom (g = 0) the step's own mass is unknown, so the gap is reported as inf
        gap = 2 * gain * delta if gain > 0 else float("inf")
        if history:
            history[-1]["gap"] = gap
        done = len(history) >= iterations or gap <= tol
        if done:
            break
        forms = np.concatenate([forms, D[None]])
        U_fit = np.concatenate([U_fit, form_reads(D[None], fit)], axis=1)
        U_rep = np.concatenate([U_rep, form_reads(D[None], report)], axis=1)
        lim = mixture_limit(U_fit, y)
        keep = lim.weights > 0
        forms, coef, U_fit, U_rep = forms[keep], lim.weights[keep], U_fit[:, keep], U_rep[:, keep]
        if options["slide_every"] and (len(history) + 1) % options["slide_every"] == 0:
            forms = slide_atoms(forms, coef, pool, options["slide_steps"], options["batch"], rng)
            U_fit, U_rep = form_reads(forms, fit), form_reads(forms, report)
            lim = mixture_limit(U_fit, y)
            keep = lim.weights > 0
            forms, coef, U_fit, U_rep = forms[keep], lim.weights[keep], U_fit[:, keep], U_rep[:, keep]
        fit_loss = float(np.mean((U_fit @ coef - y) ** 2))
        report_loss = float(np.mean((U_rep @ coef - report.target) ** 2))
        elapsed = time.time() - wall0
        history.append({"iteration": len(history) + 1, "atoms": int(coef.size), "fit_loss": fit_loss,
                        "report_loss": report_loss, "gap": None, "gain": float(coef.sum()),
                        "oracle_phi": phi, "seconds": round(cpu_before + time.process_time() - cpu0, 2)})
        save_state(None)
        if progress is not None:
            done_now = len(history)
            per = elapsed / max(done_now - resumed_at, 1)
            left = per * (iterations - done_now)
            previous_gap = history[-2]["gap"] if done_now > 1 else float("inf")
            progress(f"iteration {done_now}/{iterations}: {coef.size} atoms, fit {fit_loss:.5f}, "
                     f"report {report_loss:.5f}, previous gap {previous_gap:.2e}, "
                     f"elapsed {elapsed:.0f} s, at most ~{left:.0f} s left")
        if _interrupt_after is not None and len(history) >= _interrupt_after:
            raise KeyboardInterrupt(f"interrupted after iteration {len(history)} (test hook)")

    gain = float(coef.sum())
    weights = coef / gain
    fit_err = U_fit @ coef - y
    fit_loss = float(np.mean(fit_err**2))
    rep_err = (U_rep @ coef - report.target) ** 2
    upper, upper_se = float(rep_err.mean()), _se(rep_err)
    kernel = kernel_spectrum(U_rep, weights) if coef.size >= 1 else None
    depths = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    herding = {"depths": depths, "excess": herding_excess(U_rep, weights, depths, gain).tolist()}
    versus = {}
    if compare_expressible and hasattr(spectrum, "a"):
        from theory.expressible import shipped_expressible
        shipped = shipped_expressible(spectrum, P, k)
        if shipped is not None:
            depth = int(shipped.depths[-1])
            uforms, ugain = shipped.forms(depth)
            u_err = (ugain * form_reads(uforms, report).mean(axis=1) - report.target) ** 2
            versus = {"depth": depth, "loss": float(u_err.mean()), "loss_se": _se(u_err),
                      "upper_minus_expressible": float((rep_err - u_err).mean()),
                      "upper_minus_expressible_se": _se(rep_err - u_err)}
    fit_size = weights_fit_size(U_fit, y, U_rep, report.target)
    result = InfiniteMixture(
        forms=forms, weights=weights, gain=gain, upper=upper, upper_se=upper_se, lower=fit_loss - gap,
        fit_loss=fit_loss, gap=gap, alpha_predicted=kernel.alpha_predicted if kernel else float("nan"),
        alpha_interval=kernel.alpha_interval if kernel else (float("nan"),) * 2, kernel=kernel, herding=herding,
        versus_expressible=versus, fit_size=fit_size, history=tuple(history), setting=setting,
        cpu_seconds=cpu_before + time.process_time() - cpu0, final=True)
    save_state(result)
    return result


def weights_fit_size(fit_reads, fit_target, report_reads, report_target, sizes=None) -> dict:
    """The non-negative mixture of fixed heads re-fitted on the first ``n`` fit contexts, for each ``n``.

    Returns in-sample loss, report-set loss and its SE per size (the report set is common to all sizes,
    so differences between sizes are paired); the default sizes are the powers of two from 256 up to
    the fit set's size.

    References
    ----------
    Paper eq. (60).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> U = rng.standard_normal((1024, 3)); y = U @ [1.0, 0.5, 0.0] + rng.standard_normal(1024)
    >>> V = rng.standard_normal((4096, 3)); t = V @ [1.0, 0.5, 0.0] + rng.standard_normal(4096)
    >>> out = weights_fit_size(U, y, V, t, sizes=[256, 1024])
    >>> out["sizes"], bool(out["report_loss"][1] < 1.05)
    ([256, 1024], True)
    """
    U, y = np.asarray(fit_reads, dtype=np.float64), np.asarray(fit_target, dtype=np.float64)
    R, t = np.asarray(report_reads, dtype=np.float64), np.asarray(report_target, dtype=np.float64)
    if sizes is None:
        sizes = [1 << e for e in range(8, 40) if (1 << e) <= y.size]
    out = {"sizes": [], "fit_loss": [], "report_loss": [], "report_loss_se": []}
    for n in sizes:
        n = check_positive_int("sizes", int(n))
        if n > y.size:
            raise ValueError(f"sizes must be at most the fit set's {y.size} contexts; got {n}")
        c = mixture_limit(U[:n], y[:n]).weights
        err = (R @ c - t) ** 2
        out["sizes"].append(n)
        out["fit_loss"].append(float(np.mean((U[:n] @ c - y[:n]) ** 2)))
        out["report_loss"].append(float(err.mean()))
        out["report_loss_se"].append(_se(err))
    return out


def fit_size_curve(spectrum, P: int, k: int = 2, *, sizes=(1 << 12, 1 << 13, 1 << 14), n_report: int = 1 << 15,
                   iterations: int = 24, seed: int = 0, oracle: dict | None = None, progress=None) -> dict:
    """Fit-set size against in-sample and report-set loss, iteration by iteration (the overfitting curve).

    Each size runs :func:`infinite_mixture` on its own fit set (seed ``seed``), all reported on the
    same report set (seed ``seed + 1``), so their report losses are paired.

    Returns
    -------
    dict
        ``{"sizes": [...], "n_report": ..., "runs": [{"n_fit", "history", "upper", "upper_se", "gap",
        "cpu_seconds"}, ...]}``.

    References
    ----------
    Paper eqs. (59)-(63).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> small = dict(steps=3, polish_steps=1, n_random=1, n_perturbed=0, batch=64)
    >>> out = fit_size_curve(PowerLawSpectrum(0, 0, 4), 8, sizes=(128,), n_report=128, iterations=1, oracle=small)
    >>> len(out["runs"][0]["history"])
    1
    """
    runs = []
    for n_fit in sizes:
        mix = infinite_mixture(spectrum, P, k, n_fit=n_fit, n_report=n_report, iterations=iterations, tol=0.0,
                               seed=seed, oracle=oracle, progress=progress, compare_expressible=False)
        runs.append({"n_fit": int(n_fit), "history": list(mix.history), "upper": mix.upper,
                     "upper_se": mix.upper_se, "fit_loss": mix.fit_loss, "gap": mix.gap,
                     "cpu_seconds": mix.cpu_seconds})
    return {"sizes": [int(s) for s in sizes], "n_report": int(n_report), "iterations": int(iterations),
            "runs": runs}


def confirm_gap(path, *, checks: int = 3, progress=None) -> InfiniteMixture:
    """Re-run the oracle ``checks`` more times at a final result's measure and keep the largest gap found.

    The duality gap of :func:`infinite_mixture` comes from the one oracle call at its last iterate; the
    oracle is a stochastic search, and a call that finds nothing reads a gap of 0. This runs ``checks``
    further calls (fresh search pools, candidates compared on the same fit set, their own seed), sets
    ``gap`` to the largest of all, ``lower = fit_loss − gap``, records the calls in
    ``setting["gap_checks"]`` and rewrites the file atomically. A file already confirmed with at least
    ``checks`` calls is returned unchanged.

    Parameters
    ----------
    path : str or os.PathLike
        A final result file of :func:`infinite_mixture` (power-law spectrum).
    checks : int
        Further oracle calls.
    progress : callable, optional

    Returns
    -------
    InfiniteMixture

    References
    ----------
    Paper eqs. (59)-(63); derivation page ``bracket``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from theory import PowerLawSpectrum
    >>> small = dict(steps=2, polish_steps=1, n_random=1, n_perturbed=0, batch=64, pool=128)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = pathlib.Path(tmp) / "r.json"
    ...     m = infinite_mixture(PowerLawSpectrum(0, 0, 4), 8, 2, n_fit=128, n_report=128, iterations=1,
    ...                          oracle=small, warm_start=False, compare_expressible=False, checkpoint=p)
    ...     c = confirm_gap(p, checks=1)
    ...     c.gap >= m.gap, c.lower <= m.lower, c.setting["gap_checks"]["checks"]
    (True, True, 1)
    """
    from theory.spectra import PowerLawSpectrum

    checks = check_positive_int("checks", checks)
    path = Path(path)
    mix = load_infinite_mixture(path)
    setting = dict(mix.setting)
    if setting.get("gap_checks", {}).get("checks", 0) >= checks:
        return mix
    if setting.get("a") is None:
        raise ValueError(f"path {path.name} is not a power-law result; confirm_gap rebuilds its contexts from (a, b)")
    spectrum = PowerLawSpectrum(setting["a"], setting["b"], setting["d"])
    P, k, seeds, options = setting["P"], setting["k"], setting["seeds"], setting["oracle"]
    search = {key: options[key] for key in ("n_random", "n_perturbed", "steps", "batch", "polish", "polish_steps")}
    fit = _compact(draw_contexts(spectrum, P, k, setting["n_fit"], seeds["fit"]))
    coef = mix.weights * mix.gain
    residual = form_reads(mix.forms, fit) @ coef - fit.target
    rng = np.random.default_rng(seeds["oracle"] + 1000)
    cpu0 = time.process_time()
    phis = []
    for i in range(checks):
        pool = _compact(draw_contexts(spectrum, P, k, options["pool"], rng))
        pool_residual = form_reads(mix.forms, pool) @ coef - pool.target
        _, phi = best_response(pool, pool_residual, select=(fit, residual), atoms=mix.forms, weights=mix.weights,
                               rng=rng, **search)
        phis.append(phi)
        if progress is not None:
            progress(f"gap check {i + 1}/{checks}: 2 g δ = {2 * mix.gain * max(0.0, -phi):.4f}")
    gap = max(mix.gap, 2 * mix.gain * max(0.0, -min(phis)))
    setting["gap_checks"] = {"checks": checks, "oracle_phi": phis, "last_iterate_gap": mix.gap}
    confirmed = replace(mix, gap=gap, lower=mix.fit_loss - gap, setting=setting,
                        cpu_seconds=mix.cpu_seconds + time.process_time() - cpu0)
    _write_atomic(path, json.dumps(confirmed.to_dict()))
    return confirmed


def default_out_dir() -> Path:
    """``theory/data/mixture_limit`` of this install (what :func:`shipped_infinite_mixture` reads).

    References
    ----------
    Paper eqs. (59)-(63) (the limit whose brackets the files hold).

    Examples
    --------
    >>> default_out_dir().name
    'mixture_limit'
    """
    return Path(str(resources.files("theory").joinpath(*SHIPPED_DIR)))


def compute_spectra(spectra, out_dir=None, *, d: int = 16, P: int = 64, k: int = 2, recompute: bool = False,
                    gap_checks: int = 3, progress=None, **options) -> list[Path]:
    """Run :func:`infinite_mixture` for each ``(a, b)`` and write ``out_dir/<name>.json`` (resumable).

    A spectrum whose final file exists is not recomputed unless ``recompute``; an unfinished file
    (``"final": false``) is resumed when its options match, else restarted. Every result then gets
    ``gap_checks`` further oracle calls (:func:`confirm_gap`, skipped when already done). ``options``
    go to :func:`infinite_mixture`.

    Parameters
    ----------
    spectra : sequence of (float, float)
        Power-law exponents ``(a, b)`` (paper eq. 2), unit scales.
    out_dir : str or os.PathLike, optional
        Default: :func:`default_out_dir`.
    d, P, k : int
    recompute : bool
    gap_checks : int
        Further oracle calls at each final measure (:func:`confirm_gap`).
    progress : callable, optional

    Returns
    -------
    list of Path
        The final files, in the order of ``spectra``.

    References
    ----------
    Paper eqs. (2), (59)-(63).

    Examples
    --------
    >>> import tempfile
    >>> small = dict(steps=2, polish_steps=1, n_random=1, n_perturbed=0, batch=64, pool=128)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     paths = compute_spectra([(0, 0)], tmp, d=4, P=8, n_fit=128, n_report=128, iterations=1, oracle=small,
    ...                             gap_checks=1, warm_start=False, compare_expressible=False)
    ...     [p.name for p in paths], load_infinite_mixture(paths[0]).final
    (['a0_b0_d4_P8_k2.json'], True)
    """
    from theory.spectra import PowerLawSpectrum

    gap_checks = check_positive_int("gap_checks", gap_checks)
    out = default_out_dir() if out_dir is None else Path(out_dir)
    written = []
    for a, b in spectra:
        spectrum = PowerLawSpectrum(a, b, d)
        path = out / data_file_name(a, b, d, P, k)
        say = None if progress is None else (lambda line, a=a, b=b: progress(f"({a:g}, {b:g}) {line}"))
        if path.is_file() and recompute:
            path.unlink()
        if path.is_file() and json.loads(path.read_text(encoding="utf-8")).get("final"):
            if progress is not None:
                progress(f"({a:g}, {b:g}): final file exists, Frank–Wolfe skipped ({path})")
        else:
            if progress is not None:
                progress(f"({a:g}, {b:g}): Frank–Wolfe into {path}")
            infinite_mixture(spectrum, P, k, checkpoint=path, progress=say, **options)
        mix = confirm_gap(path, checks=gap_checks, progress=say)
        if progress is not None:
            progress(f"({a:g}, {b:g}): upper {mix.upper:.5f} ± {mix.upper_se:.5f}, fit {mix.fit_loss:.5f}, "
                     f"gap {mix.gap:.4f}, lower {mix.lower:.5f}, α predicted {mix.alpha_predicted:.2f}, "
                     f"{mix.cpu_seconds:.0f} CPU s")
        written.append(path)
    return written


def shipped_infinite_mixture(spectrum, P: int, k: int = 2) -> "InfiniteMixture | None":
    """The shipped final ``R*_∞`` bracket of a power-law spectrum at ``(d, P, k)``, or None if there is none.

    Raises
    ------
    ValueError
        If the shipped file exists but is not final (an interrupted run).

    References
    ----------
    Paper eqs. (59)-(63); derivation page ``bracket``.

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> shipped_infinite_mixture(PowerLawSpectrum(0, 0, 16), 65) is None
    True
    """
    spectrum = _check_spectrum(spectrum)
    P = check_positive_int("P", P)
    k = check_top_k(k, P)
    if not (hasattr(spectrum, "a") and spectrum.c_lambda == 1.0 and spectrum.c_omega == 1.0):
        return None
    entry = resources.files("theory").joinpath(*SHIPPED_DIR, data_file_name(spectrum.a, spectrum.b, spectrum.d, P, k))
    if not entry.is_file():
        return None
    return load_infinite_mixture(entry)
