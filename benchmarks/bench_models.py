"""Benchmark of the models' fast engines against the dense reference (plain script).

Run (single-threaded BLAS is set below, before numpy is imported)::

    python benchmarks/bench_models.py            # ~10-15 min on one core
    python benchmarks/bench_models.py --quick    # fewer repeats, no dense point at L = 64

What is measured (median over repeats of one training step, ``loss_and_grad``):

1. the machine's matmul peak: a large float64 and float32 GEMM (n = 1024), GFLOP/s;
2. nonlinear model, d = N = 32, B = 128: step time vs P (64, 256, 1024) at L = 16 and vs
   L (1, 8, 64) at P = 256, for the fast engine and for a *dense-reference step*: the
   literal (P+1)x(P+1) forward of ``reference_forward`` plus a hand-written reverse pass
   through the same dense graph (:func:`dense_nonlinear_step`, checked against the fast
   gradients at the start; it recomputes each layer's attention in the reverse pass and
   runs in chunks of contexts to bound memory, so it does ~4/3 of the minimal dense
   work); the fast engine's achieved GFLOP/s from an analytic count of its matmul flops.
   The two most expensive dense points (P = 1024, L = 64) are timed once, without warm-up;
3. linear model, d = N = 32, B = 128, L = 16: step time vs P, and the cost of forming
   ``S = UUᵀ/P`` alone (the only P-dependent part);
4. the other softmax models at P = 256, L = 16 (context_updates is O(P² N) per layer by
   construction: its context block is dense);
5. the sampler: one batch of the difficult task (P = 256, B = 128, d = 32) with Haar
   rotations (a = b = 1) and without (flat spectra), against one nonlinear step.

Both wall-clock and process CPU time are reported; on a shared machine the CPU time is
the more stable of the two.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from numerics.models import get_model  # noqa: E402
from numerics.models._common import layer_norm, layer_norm_backward, softmax_backward  # noqa: E402
from numerics.models.reference import allowed_positions, attention_mask, dense_inputs, masked_softmax  # noqa: E402
from numerics.tasks import sample  # noqa: E402
from theory import PowerLawSpectrum  # noqa: E402


# ----------------------------------------------------------------------------- timing
def timed(fn, repeats: int, warm_up: bool = True) -> tuple[float, float]:
    """Median wall and CPU seconds of ``fn()`` over ``repeats`` calls (after one warm-up call)."""
    if warm_up:
        fn()
    wall, cpu = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return float(np.median(wall)), float(np.median(cpu))


def matmul_peak(dtype, n: int = 1024, repeats: int = 5) -> float:
    """GFLOP/s of an n x n x n GEMM (CPU time)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    _, cpu = timed(lambda: a @ b, repeats)
    return 2 * n**3 / cpu / 1e9


# ----------------------------------------------------------------------------- dense reference step
#: at most this many entries in one (contexts x (P+1) x (P+1)) attention array of the dense step
DENSE_MAX_ENTRIES = 1 << 22


def dense_nonlinear_step(params: dict, batch) -> tuple[float, dict]:
    """Loss and gradients of the nonlinear model through the dense (P+1)x(P+1) graph.

    Forward = ``numerics.models.nonlinear.reference_forward`` (eqs. 7-10, 12); reverse pass
    written by hand through the full masked attention (no use of the parallel structure).
    To bound memory, the batch is processed in chunks of contexts (at most
    :data:`DENSE_MAX_ENTRIES` attention entries at once) and the reverse pass recomputes
    each layer's ``Q, K`` and softmax from ``Ĥ_x`` instead of storing them (one extra
    evaluation of the logits per layer; the label states ``H_y^ℓ`` are stored).
    """
    context_x, context_y = np.asarray(batch.context_x), np.asarray(batch.context_y)
    test_x, target = np.asarray(batch.test_x), np.asarray(batch.target)
    B, P = context_y.shape
    size = max(1, DENSE_MAX_ENTRIES // (P + 1) ** 2)
    loss, grads = 0.0, None
    for start in range(0, B, size):
        part = slice(start, start + size)
        weight = context_y[part].shape[0] / B
        part_loss, part_grads = _dense_chunk(params, context_x[part], context_y[part], test_x[part], target[part])
        loss += weight * part_loss
        grads = {k: weight * v for k, v in part_grads.items()} if grads is None else {k: grads[k] + weight * v for k, v in part_grads.items()}
    return loss, grads


def _dense_chunk(params, context_x, context_y, test_x, target):
    W_x, W_y, W_q, W_k, W_v, W_o = (params[k] for k in ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o"))
    L = W_q.shape[0]
    X, y_in = dense_inputs(context_x, context_y, test_x)
    P = X.shape[2] - 1
    H_x = W_x @ X
    H_hat_rows, inv_std = layer_norm(np.swapaxes(H_x, 1, 2))  # tokens as rows for the norm
    H_hat = np.swapaxes(H_hat_rows, 1, 2)
    M = attention_mask(P, 0.0)
    allowed = allowed_positions(P, "M(0)")

    def attention(ell):
        Q = W_q[ell] @ H_hat
        K = W_k[ell] @ H_hat
        soft = masked_softmax(np.swapaxes(Q, 1, 2) @ K, allowed)
        return Q, K, soft, M * soft

    H_y = W_y @ y_in
    states = []
    for ell in range(L):
        _, _, _, A = attention(ell)
        states.append(H_y)
        H_y = H_y + ((W_v @ H_y) @ np.swapaxes(A, 1, 2)) / L
    prediction = (W_o @ H_y[:, :, -1:])[:, 0, 0]
    B = prediction.shape[0]
    residual = prediction - target
    loss = float(np.mean(residual**2))
    grad_out = (2.0 / B) * residual
    grad_W_o = (grad_out @ H_y[:, :, -1])[None, :]
    grad_H_y = np.zeros_like(H_y)
    grad_H_y[:, :, -1] = grad_out[:, None] * W_o[0]
    grad_W_q, grad_W_k, grad_W_v = np.zeros_like(W_q), np.zeros_like(W_k), np.zeros_like(W_v)
    grad_H_hat = np.zeros_like(H_hat)
    for ell in range(L - 1, -1, -1):
        Q, K, soft, A = attention(ell)
        H_prev = states[ell]
        V = W_v @ H_prev
        grad_V = grad_H_y @ A / L
        grad_A = np.swapaxes(grad_H_y, 1, 2) @ V / L
        grad_S = softmax_backward(soft, M * grad_A)
        grad_Q = K @ np.swapaxes(grad_S, 1, 2)
        grad_K = Q @ grad_S
        grad_W_q[ell] = np.sum(grad_Q @ np.swapaxes(H_hat, 1, 2), axis=0)
        grad_W_k[ell] = np.sum(grad_K @ np.swapaxes(H_hat, 1, 2), axis=0)
        grad_H_hat += W_q[ell].T @ grad_Q + W_k[ell].T @ grad_K
        grad_W_v += np.sum(grad_V @ np.swapaxes(H_prev, 1, 2), axis=0)
        grad_H_y = grad_H_y + W_v.T @ grad_V
    grad_W_y = np.sum(grad_H_y @ np.swapaxes(y_in, 1, 2), axis=0)
    grad_H_x = np.swapaxes(layer_norm_backward(H_hat_rows, inv_std, np.swapaxes(grad_H_hat, 1, 2)), 1, 2)
    grad_W_x = np.sum(grad_H_x @ np.swapaxes(X, 1, 2), axis=0)
    return loss, {"W_x": grad_W_x, "W_y": grad_W_y, "W_q": grad_W_q, "W_k": grad_W_k, "W_v": grad_W_v, "W_o": grad_W_o}


def nonlinear_fast_flops(B: int, P: int, N: int, d: int, L: int) -> float:
    """Matmul flops of one fast nonlinear step (forward + reverse), elementwise work not counted."""
    embed = 2 * B * (P + 1) * N * d  # W_x X, and the same for dW_x
    per_layer = 2 * B * P * N * 3 + 2 * B * N * N * 3 + 2 * N**3 * 3  # logits, dlogits·Ĥ, dĤ; ĥC, dC, dĥ; C, dW_q, dW_k
    return 2 * embed + L * per_layer


def linear_fast_flops(B: int, P: int, N: int, d: int, L: int) -> float:
    """Matmul flops of one fast linear step: S and c, then per layer the forward (done twice:
    once, and again from the checkpoints) and the reverse pass."""
    forward_layer = 2 * B * N * N * d + 2 * 2 * B * N * d * d  # W_v Y, (·) B_ℓ, (·) S
    reverse_layer = 2 * 2 * B * d**3 + 2 * 2 * B * N * d * d + 3 * 2 * B * N * N * d
    return 2 * B * P * d * d + L * (2 * forward_layer + reverse_layer)


def dense_flops(B: int, P: int, N: int, L: int) -> float:
    """Matmul flops of the dense reference step (forward + reverse ≈ 3 x forward)."""
    T = P + 1
    forward = L * (3 * 2 * B * T * N * N + 2 * 2 * B * T * T * N)
    return 3 * forward


# ----------------------------------------------------------------------------- main
def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats; skip the most expensive dense points")
    args = parser.parse_args(argv)
    repeats = 3 if args.quick else 5
    dense_repeats = 1 if args.quick else 3
    d = N = 32
    B = 128
    rng = np.random.default_rng(0)
    flat = PowerLawSpectrum(0, 0, d)
    rotated = PowerLawSpectrum(1.0, 1.0, d)

    peak64 = matmul_peak(np.float64)
    peak32 = matmul_peak(np.float32)
    print(f"matmul peak (n=1024, 1 thread, CPU time): float64 {peak64:.1f} GFLOP/s, float32 {peak32:.1f} GFLOP/s")
    print(f"load average at start: {os.getloadavg()[0]:.2f}")

    nonlinear = get_model("nonlinear")
    # correctness of the dense reverse pass used as the baseline
    small = sample("difficult", flat, 16, 8, rng)
    small_params = nonlinear.init_params(d, N, 3, rng, qk_init="gaussian", qk_scale=2.0, value_init="gaussian")
    loss_fast, grads_fast = nonlinear.loss_and_grad(small_params, small)
    loss_dense, grads_dense = dense_nonlinear_step(small_params, small)
    worst = max(np.linalg.norm(grads_dense[k] - grads_fast[k]) / np.linalg.norm(grads_fast[k]) for k in grads_fast)
    print(f"dense reverse pass vs fast gradients: loss rel diff {abs(loss_dense - loss_fast) / loss_fast:.1e}, worst grad rel diff {worst:.1e}")

    print("\nnonlinear model, d = N = 32, B = 128, float64 (median step = loss_and_grad)")
    print(f"{'P':>6} {'L':>4} | {'fast wall ms':>12} {'fast cpu ms':>11} {'GFLOP/s':>8} {'% peak':>6} | {'dense cpu ms':>12} {'speed-up':>8}")
    grid = [(64, 16), (256, 16), (1024, 16), (256, 1), (256, 8), (256, 64)]
    dense_points = {(64, 16), (256, 16), (256, 1), (256, 8)} | (set() if args.quick else {(1024, 16), (256, 64)})
    for P, L in grid:
        batch = sample("difficult", flat, P, B, rng)
        params = nonlinear.init_params(d, N, L, rng)
        wall, cpu = timed(lambda: nonlinear.loss_and_grad(params, batch), repeats)
        gflops = nonlinear_fast_flops(B, P, N, d, L) / cpu / 1e9
        line = f"{P:>6} {L:>4} | {wall * 1e3:>12.1f} {cpu * 1e3:>11.1f} {gflops:>8.2f} {100 * gflops / peak64:>5.1f}% |"
        if (P, L) in dense_points:
            expensive = P * P * L > 256 * 256 * 16
            _, dense_cpu = timed(lambda: dense_nonlinear_step(params, batch), 1 if expensive else dense_repeats, warm_up=not expensive)
            line += f" {dense_cpu * 1e3:>12.0f} {dense_cpu / cpu:>7.0f}x"
        else:
            line += f" {'-':>12} {'-':>8}"
        print(line, flush=True)

    print("\nnonlinear, P = 256, L = 16, float32")
    batch = sample("difficult", flat, 256, B, rng, dtype=np.float32)
    params = nonlinear.init_params(d, N, 16, rng, dtype=np.float32)
    wall, cpu = timed(lambda: nonlinear.loss_and_grad(params, batch), repeats)
    gflops = nonlinear_fast_flops(B, 256, N, d, 16) / cpu / 1e9
    print(f"  fast step: wall {wall * 1e3:.1f} ms, cpu {cpu * 1e3:.1f} ms, {gflops:.2f} GFLOP/s ({100 * gflops / peak32:.1f}% of float32 peak)")

    print("\nlinear model, d = N = 32, B = 128, L = 16, float64")
    linear = get_model("linear")
    params = linear.init_params(d, N, 16, rng)
    print(f"{'P':>6} | {'step cpu ms':>11} {'form S cpu ms':>13} {'step - S':>9} {'GFLOP/s':>8} {'% peak':>6}")
    for P in (64, 256, 1024):
        batch = sample("difficult", flat, P, B, rng)
        _, cpu = timed(lambda: linear.loss_and_grad(params, batch), repeats)
        U = np.asarray(batch.context_x)
        _, s_cpu = timed(lambda: np.swapaxes(U, 1, 2) @ U / P, repeats)
        gflops = linear_fast_flops(B, P, N, d, 16) / cpu / 1e9
        print(
            f"{P:>6} | {cpu * 1e3:>11.1f} {s_cpu * 1e3:>13.1f} {(cpu - s_cpu) * 1e3:>9.1f} {gflops:>8.2f} {100 * gflops / peak64:>5.1f}%",
            flush=True,
        )

    print("\nother models, d = N = 32, B = 128, P = 256, L = 16, float64 (fast step, cpu ms)")
    batch = sample("difficult", flat, 256, B, rng)
    for name in ("single_stream", "untied_values", "context_updates"):
        model = get_model(name)
        params = model.init_params(d, N, 16, rng)
        _, cpu = timed(lambda: model.loss_and_grad(params, batch), 1 if name == "context_updates" else repeats)
        print(f"  {name:<16} {cpu * 1e3:10.1f}", flush=True)

    print("\nsampler, difficult task, P = 256, B = 128, d = 32 (cpu ms per batch)")
    step_params = nonlinear.init_params(d, N, 16, rng)
    step_batch = sample("difficult", flat, 256, B, rng)
    _, step_cpu = timed(lambda: nonlinear.loss_and_grad(step_params, step_batch), repeats)
    for label, spectrum in (("with Haar rotations (a=b=1)", rotated), ("flat spectra, no rotation", flat)):
        _, cpu = timed(lambda: sample("difficult", spectrum, 256, B, rng), repeats)
        print(f"  {label:<30} {cpu * 1e3:8.1f}   ({cpu / step_cpu:.2f} x one nonlinear step at L = 16: {step_cpu * 1e3:.1f} ms)")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
