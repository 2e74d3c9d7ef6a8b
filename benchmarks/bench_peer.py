"""Peer benchmark: the package's trainer against a plain PyTorch-CPU loop and a jitted JAX loop of the same model.

The model is the controlled softmax model ``numerics.models.nonlinear`` (paper eqs. (7)-(10),
(12), mask M(0)); the task is top-2 aggregation (eq. 6) on flat spectra (a = b = 0), fresh
data every step, float32, one BLAS/torch/XLA thread. The package draws its batches with
sampler stream 2 by default (``TrainConfig(stream=2)``, what the certified study uses;
``--stream 1`` for the original sampler). Run::

    pip install -e '.[bench]'                       # torch and jax; the package itself never imports them
    python benchmarks/bench_peer.py                 # the four default sizes, 5 repeats
    python benchmarks/bench_peer.py --sizes 16,32,64,16,256 --repeats 3 --steps 10 --json out.json

What is timed, per size (d, N, P, L, batch), in interleaved repeats (package, torch, package
pieces, torch with the package's sampler, then again), each repeat ``--steps`` steps after one
untimed warm-up run of every variant:

* **package (train)** -- ``numerics.train.train`` of a ``TrainConfig(model="nonlinear",
  task="difficult", k=2, a=0, b=0, ..., dtype="float32", warmup_steps=0, max_steps=S,
  eval_every=S, eval_size=64)``. Its ``callback`` fires after the evaluation at step 0 and
  after the one at step S, so the time between the two calls is S training steps plus one
  evaluation; the evaluation's time (measured alone, median) is subtracted. **The table's
  ratio uses this number.**
* **package (pieces)** -- the same per-step work called directly, as the trainer's loop calls
  it: ``numerics.tasks.sample``, ``loss_and_grad``, the finiteness checks,
  ``clip_by_global_norm(grads, None)``, ``learning_rate_at`` and ``adam_update``. The time of
  the ``sample`` calls alone gives the **sampler fraction** of a step.
* **torch** -- a straightforward PyTorch loop (:class:`TorchSoftmaxModel`: autograd,
  ``torch.optim.Adam`` at the package's default lr 1e-3 with its ``warmup_cosine`` schedule
  through ``LambdaLR``), drawing its data with torch (:func:`torch_top2_batch`).
* **torch + package sampler** -- the same loop taking its data from ``numerics.tasks.sample``
  (zero-copy ``torch.from_numpy``), which separates the samplers' costs.
* **jax** (if jax is installed) -- one jitted step (:func:`jax_train_step`: sample + loss +
  grad + Adam, the state donated): the batch drawn inside the jit with ``jax.random``
  (:func:`jax_top_k_batch`: the package's law, Haar rotations by QR with the sign fix where the
  spectrum is not flat, ``lax.top_k`` of the cosine ranking), ``jax.value_and_grad`` of the
  same dense model as the torch module (:func:`jax_forward`), hand-written Adam
  (:func:`jax_adam`) with the ``warmup_cosine`` schedule computed inside the step. Compiled
  once per size in the warm-up (the step cap is an argument); the loop blocks once, at its end.
  **jax sampler** -- the jitted sampler alone, per batch (its share of the jax step).

Wall time (``perf_counter``) is the table's number; process CPU time is reported beside it
(steadier when other jobs share the machine).

Yardsticks (best of several calls, one thread): a bare ``np.exp`` over ``B·L·P`` float32
values (``out=`` a preallocated buffer: the exp alone, the issue's "bare-exp" time) and the
float32 matmul peak (a 1024^2 sgemm). The step's **bare-exp fraction** is exp time / step
time; its **matmul-peak fraction** is (matmul flops of the package's engine per step, an
analytic count: :func:`engine_flops`) / step time / peak.

Before timing, a check that it is the same model (for torch, and the same for jax:
``jax.value_and_grad`` and :func:`jax_adam` on the same batch and weights): the package's initial float32 parameters are
copied into the torch module and, on one batch of the package's sampler, the predictions,
the loss, the gradients and the parameters after one Adam step are compared (max abs
differences printed; for the Adam step over the entries whose gradient is above float32
round-off, since a first Adam step is ±lr·sign(g); the run stops if the forward differs
beyond float32 tolerance). The two samplers' target variances are compared too (same law);
the jax sampler's against the package's stream 2 on the flat spectrum and on a = b = 1 (the
rotated path).

Threads: OMP/OPENBLAS/MKL/BLIS_NUM_THREADS=1 and ``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1`` are set below, before numpy and jax are imported, and
``torch.set_num_threads(1)``; threadpoolctl (if installed) shows the thread counts in force.
The CPU's SIMD extensions are printed and stored (numpy's ``show_runtime()`` lists: baseline,
found, not found; torch's CPU capability). ``--json OUT`` writes every number, the versions,
the SIMD level and the BLAS (atomically: a temporary file in the same folder, then ``os.replace``).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"
# one XLA thread (before jax is imported): no Eigen thread pool, one intra-op thread
_XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _XLA_ONE_THREAD).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import argparse  # noqa: E402
import functools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from numerics.models import get_model  # noqa: E402
from numerics.models._common import LAYER_NORM_EPS  # noqa: E402
from numerics.optim import schedule_value  # noqa: E402
from numerics.tasks import sample  # noqa: E402
from numerics.train import (  # noqa: E402
    TrainConfig,
    adam_init,
    adam_update,
    clip_by_global_norm,
    evaluate,
    evaluation_batch,
    learning_rate_at,
    train,
)

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - reported to the user in main()
    torch = None

try:
    import jax
    import jax.numpy as jnp
    from jax import lax
except ImportError:  # pragma: no cover - the jax peer is skipped, said in main()
    jax = None

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sampler import cpu_model, simd_extensions  # noqa: E402  (the one home of the machine report)

#: the sizes (d, N, P, L, batch) of the speed table plus its large point
DEFAULT_SIZES = ((16, 32, 64, 16, 256), (16, 32, 64, 128, 256), (32, 64, 128, 32, 256), (128, 128, 1024, 16, 128))
EVAL_SIZE = 64
#: float32 tolerance of the same-model check (max abs difference of predictions of order 1)
FORWARD_TOL = 1e-4


# ----------------------------------------------------------------------------- the torch model
if torch is not None:

    class TorchSoftmaxModel(torch.nn.Module):
        """The controlled softmax model (paper eqs. (7)-(10), (12)) as a PyTorch user writes it.

        Same parameters as ``numerics.models.nonlinear``: ``W_x (N,d)``, ``W_y (N,1)``,
        ``W_q, W_k (L,N,N)``, shared ``W_v (N,N)``, ``W_o (1,N)``. Pre-norm LayerNorm over the N
        features, no gain/bias, eps 1e-5, on the input stream ``H_x = W_x X``. With the mask M(0)
        only the test token attends (to the P context tokens) and the context tokens receive
        nothing, so every layer's attention depends on the fixed ``Ĥ_x`` alone and all L
        layers are computed at once; the query-key product is contracted through the test
        token, ``logits_ℓj = ((W_q^ℓ ĥ_test)ᵀ W_k^ℓ) ĥ_j``. The label stream of the test token
        starts at 0 and gets ``(1/L) W_v H_y,ctx p_ℓ`` per layer with the frozen context labels
        ``H_y,ctx = W_y yᵀ``, so ``h_y,test^L = W_v W_y (mean_ℓ p_ℓ)·y`` and ``ŷ = W_o h_y,test^L``.
        """

        def __init__(self, params: dict):
            super().__init__()
            for name, value in params.items():
                self.register_parameter(name, torch.nn.Parameter(torch.as_tensor(np.array(value))))

        def forward(self, context_x, context_y, test_x):
            N = self.W_x.shape[0]
            H_ctx = F.layer_norm(context_x @ self.W_x.T, (N,), eps=LAYER_NORM_EPS)  # (B, P, N)
            h_test = F.layer_norm(test_x @ self.W_x.T, (N,), eps=LAYER_NORM_EPS)  # (B, N)
            q = h_test @ self.W_q.transpose(1, 2)  # W_q^ℓ ĥ_test, (L, B, N)
            u = q @ self.W_k  # through the test token, (L, B, N)
            logits = u.transpose(0, 1) @ H_ctx.transpose(1, 2)  # (B, L, P)
            p_bar = torch.softmax(logits, dim=-1).mean(dim=1)  # (1/L) Σ_ℓ p_ℓ, (B, P)
            read = (p_bar * context_y).sum(dim=-1, keepdim=True)  # (mean_ℓ p_ℓ)·y, (B, 1)
            h_y_test = read * (self.W_v @ self.W_y).T  # (B, N)
            return (h_y_test @ self.W_o.T).squeeze(-1)  # (B,)


def torch_init(d: int, N: int, L: int, gen) -> dict:
    """The package's default initialisation recipe, drawn with torch (``numerics.models._common.init_shared``).

    Orthonormal ``W_x`` (QR with the sign fix), ``W_q^ℓ, W_k^ℓ = I + 0.1 G/sqrt(N)``, ``W_v = I``,
    ``W_y`` a random unit vector, ``W_o = W_yᵀ`` (so ``g = W_o W_v W_y = 1``).
    """
    q, r = torch.linalg.qr(torch.randn(N, d, generator=gen, dtype=torch.float64))
    W_x = q * torch.where(torch.diagonal(r) < 0, -1.0, 1.0)
    eye = torch.eye(N, dtype=torch.float64)
    W_q = eye + 0.1 * torch.randn(L, N, N, generator=gen, dtype=torch.float64) / math.sqrt(N)
    W_k = eye + 0.1 * torch.randn(L, N, N, generator=gen, dtype=torch.float64) / math.sqrt(N)
    W_y = torch.randn(N, 1, generator=gen, dtype=torch.float64)
    W_y = W_y / W_y.norm()
    params = {"W_x": W_x, "W_y": W_y, "W_q": W_q, "W_k": W_k, "W_v": eye.clone(), "W_o": W_y.T.clone()}
    return {k: v.to(torch.float32).numpy() for k, v in params.items()}


def torch_top2_batch(B: int, P: int, d: int, gen):
    """Top-2 task on flat spectra in torch: x, x_test, β ~ N(0, I); y = βᵀx; target = mean of the
    two labels of largest cosine similarity to x_test (paper eqs. (1)-(6), a = b = 0: no rotation)."""
    context_x = torch.randn(B, P, d, generator=gen)
    test_x = torch.randn(B, d, generator=gen)
    teacher = torch.randn(B, d, generator=gen)
    context_y = (context_x @ teacher.unsqueeze(-1)).squeeze(-1)  # (B, P)
    # cosine up to the factor 1/|x_test|, which does not change the ranking within a context
    scores = (context_x @ test_x.unsqueeze(-1)).squeeze(-1) / context_x.norm(dim=-1)
    top = scores.topk(2, dim=-1).indices
    target = context_y.gather(1, top).mean(dim=1)
    return context_x, context_y, test_x, target


def package_batch_as_torch(batch):
    """Zero-copy torch views of a ``numerics.tasks.Batch`` (its arrays are read-only; torch only reads them)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "The given NumPy array is not writable"
        return tuple(torch.from_numpy(getattr(batch, k)) for k in ("context_x", "context_y", "test_x", "target"))


# ----------------------------------------------------------------------------- the jax peer
if jax is not None:

    def jax_layer_norm(h):
        """LayerNorm over the last (N) axis without gain or bias, eps as the package's."""
        centred = h - h.mean(axis=-1, keepdims=True)
        return centred * lax.rsqrt((centred * centred).mean(axis=-1, keepdims=True) + LAYER_NORM_EPS)

    def jax_forward(params, context_x, context_y, test_x):
        """The controlled softmax model (paper eqs. (7)-(10), (12)) in jax, the same dense form as
        :class:`TorchSoftmaxModel`: pre-norm ``Ĥ_x = LN(W_x X)``, logits through the test token
        ``((W_q^ℓ ĥ_test)ᵀ W_k^ℓ) ĥ_j``, ``ŷ = W_o W_v W_y (mean_ℓ p_ℓ)·y``."""
        H_ctx = jax_layer_norm(context_x @ params["W_x"].T)  # (B, P, N)
        h_test = jax_layer_norm(test_x @ params["W_x"].T)  # (B, N)
        q = jnp.einsum("bn,lmn->blm", h_test, params["W_q"])  # W_q^ℓ ĥ_test, (B, L, N)
        u = jnp.einsum("blm,lmn->bln", q, params["W_k"])  # (W_q^ℓ ĥ_test)ᵀ W_k^ℓ, (B, L, N)
        logits = jnp.einsum("bln,bpn->blp", u, H_ctx)  # (B, L, P)
        p_bar = jax.nn.softmax(logits, axis=-1).mean(axis=1)  # (1/L) Σ_ℓ p_ℓ, (B, P)
        read = (p_bar * context_y).sum(axis=-1)  # (B,)
        gain = (params["W_o"] @ params["W_v"] @ params["W_y"])[0, 0]  # g = W_o W_v W_y
        return read * gain

    def jax_loss(params, context_x, context_y, test_x, target):
        """Mean squared error of eq. (12)."""
        return jnp.mean((jax_forward(params, context_x, context_y, test_x) - target) ** 2)

    def jax_top_k_batch(key, B: int, P: int, d: int, k: int, sqrt_lambda, sqrt_omega, rotate: bool):
        """One batch of the top-k task drawn with ``jax.random`` (paper eqs. (1)-(6), the package's law).

        ``x = O (√λ ⊙ z)``, ``β = O (√ω ⊙ w)``, ``x_test = O (√λ ⊙ z_test)`` with ``O`` Haar per context
        (QR of a Gaussian matrix with the sign fix, as ``theory.data_law.haar_rotations``; no rotation
        on flat spectra, where the law is rotation invariant, as the package); ``y = βᵀx``; target
        the mean label of the k largest cosines to ``x_test`` (``lax.top_k`` of ``x·x_test/|x|``,
        the cosine times ``|x_test|``, the same ranking).
        """
        k_rot, k_x, k_teacher, k_test = jax.random.split(key, 4)
        z = jax.random.normal(k_x, (B, P, d), jnp.float32)
        w = jax.random.normal(k_teacher, (B, d), jnp.float32)
        z_test = jax.random.normal(k_test, (B, d), jnp.float32)
        if rotate:
            q, r = jnp.linalg.qr(jax.random.normal(k_rot, (B, d, d), jnp.float32))
            O = q * jnp.where(jnp.diagonal(r, axis1=1, axis2=2) < 0, -1.0, 1.0)[:, None, :]
            input_map, teacher_map = O * sqrt_lambda, O * sqrt_omega  # O diag √λ, O diag √ω
            context_x = jnp.einsum("bpe,bde->bpd", z, input_map)
            teacher = jnp.einsum("be,bde->bd", w, teacher_map)
            test_x = jnp.einsum("be,bde->bd", z_test, input_map)
        else:
            context_x, teacher, test_x = z * sqrt_lambda, w * sqrt_omega, z_test * sqrt_lambda
        context_y = jnp.einsum("bpd,bd->bp", context_x, teacher)  # y = βᵀx, eq. (1)
        scores = jnp.einsum("bpd,bd->bp", context_x, test_x) * lax.rsqrt(jnp.sum(context_x * context_x, axis=-1))
        _, top = lax.top_k(scores, k)
        target = jnp.take_along_axis(context_y, top, axis=1).mean(axis=1)  # eq. (6)
        return context_x, context_y, test_x, target

    def jax_adam(params, grads, m, v, t, learning_rate, beta1, beta2, eps):
        """Adam as ``numerics.optim.adam_update`` (bias-corrected, eps outside the root), step ``t`` 0-based."""
        t1 = (t + 1).astype(jnp.float32)
        c1, c2 = 1.0 - beta1**t1, 1.0 - beta2**t1
        m = jax.tree_util.tree_map(lambda m_, g: beta1 * m_ + (1.0 - beta1) * g, m, grads)
        v = jax.tree_util.tree_map(lambda v_, g: beta2 * v_ + (1.0 - beta2) * (g * g), v, grads)
        params = jax.tree_util.tree_map(lambda p, m_, v_: p - (learning_rate / c1) * m_ / (jnp.sqrt(v_ / c2) + eps),
                                        params, m, v)
        return params, m, v

    def jax_warmup_cosine(t, peak, warmup_steps: int, max_steps):
        """``numerics.optim.schedule_value('warmup_cosine', ...)`` in jax (t traced)."""
        t = t.astype(jnp.float32)
        span = jnp.maximum(max_steps - warmup_steps, 1).astype(jnp.float32)
        progress = jnp.clip((t - warmup_steps) / span, 0.0, 1.0)
        cosine = peak * 0.5 * (1.0 + jnp.cos(jnp.pi * progress))
        if warmup_steps == 0:
            return cosine
        return jnp.where(t < warmup_steps, peak * (t + 1.0) / warmup_steps, cosine)

    _JAX_STEPS: dict = {}

    def jax_train_step(config: TrainConfig):
        """One jitted training step for the config's sizes: sample + loss + grad + Adam, compiled once per size.

        ``step((params, m, v, t, key), max_steps) -> ((params, m, v, t + 1, key'), loss)``; the
        state is donated (updated in place).
        """
        spectrum = config.spectrum()
        cache_key = (config.d, config.N, config.P, config.depth, config.batch_size, config.k, config.a, config.b,
                     config.c_lambda, config.c_omega, config.learning_rate, config.warmup_steps,
                     config.beta1, config.beta2, config.eps)
        if cache_key in _JAX_STEPS:
            return _JAX_STEPS[cache_key]
        sqrt_lambda = jnp.asarray(np.sqrt(spectrum.eigenvalues), jnp.float32)
        sqrt_omega = jnp.asarray(np.sqrt(spectrum.teacher_eigenvalues), jnp.float32)
        rotate = not spectrum.is_isotropic
        B, P, d, k = config.batch_size, config.P, config.d, config.k
        peak, warmup = config.learning_rate, config.warmup_steps
        beta1, beta2, eps = config.beta1, config.beta2, config.eps
        value_and_grad = jax.value_and_grad(jax_loss)

        def step(state, max_steps):
            params, m, v, t, key = state
            key, sub = jax.random.split(key)
            batch = jax_top_k_batch(sub, B, P, d, k, sqrt_lambda, sqrt_omega, rotate)
            loss, grads = value_and_grad(params, *batch)
            lr = jax_warmup_cosine(t, peak, warmup, max_steps)
            params, m, v = jax_adam(params, grads, m, v, t, lr, beta1, beta2, eps)
            return (params, m, v, t + 1, key), loss

        def sample_only(key):
            return jax_top_k_batch(key, B, P, d, k, sqrt_lambda, sqrt_omega, rotate)

        _JAX_STEPS[cache_key] = (jax.jit(step, donate_argnums=0), jax.jit(sample_only))
        return _JAX_STEPS[cache_key]


def run_jax(config: TrainConfig, seed: int = 0) -> tuple[float, float, float]:
    """Wall and CPU seconds per step of the jitted jax loop (sampler share: nan, timed apart by :func:`run_jax_sampler`)."""
    step, _ = jax_train_step(config)
    params = get_model("nonlinear").init_params(config.d, config.N, config.depth, np.random.default_rng(seed),
                                               dtype=np.float32)
    params = {name: jnp.asarray(value) for name, value in params.items()}
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = (params, zeros, jax.tree_util.tree_map(jnp.zeros_like, params), jnp.int32(0), jax.random.key(seed))
    max_steps = jnp.int32(config.max_steps)
    jax.block_until_ready(state)
    losses = []
    start, cpu_start = time.perf_counter(), time.process_time()
    for _ in range(config.max_steps):
        state, loss = step(state, max_steps)
        losses.append(loss)
    jax.block_until_ready((state, losses))
    total, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    if not bool(np.all(np.isfinite(np.asarray(losses)))):
        raise RuntimeError("jax run diverged")
    return total / config.max_steps, cpu / config.max_steps, math.nan


def run_jax_sampler(config: TrainConfig, seed: int = 0) -> tuple[float, float, float]:
    """Wall and CPU seconds per batch of the jitted jax sampler alone (the third number: the same wall time)."""
    _, sample_only = jax_train_step(config)
    key = jax.random.key(seed)
    split = jax.random.split(key, config.max_steps)
    keys = [split[i] for i in range(config.max_steps)]
    jax.block_until_ready(keys)
    out = []
    start, cpu_start = time.perf_counter(), time.process_time()
    for each in keys:
        out.append(sample_only(each))
    jax.block_until_ready(out)
    total, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return total / config.max_steps, cpu / config.max_steps, total / config.max_steps


# ----------------------------------------------------------------------------- the loops
def config_for(size, steps: int, stream: int = 2) -> TrainConfig:
    d, N, P, L, B = size
    return TrainConfig(
        model="nonlinear", task="difficult", k=2, a=0.0, b=0.0, d=d, N=N, P=P, depth=L, batch_size=B,
        max_steps=steps, eval_every=steps, eval_size=EVAL_SIZE, dtype="float32", warmup_steps=0, stream=stream,
    )


def run_package_train(config: TrainConfig, eval_seconds: tuple[float, float]) -> tuple[float, float]:
    """Wall and CPU seconds per step of ``numerics.train.train``: time between the step-0 and
    step-S callbacks, minus one evaluation (``eval_seconds``: its wall and CPU time)."""
    stamps = []
    train(config, callback=lambda info: stamps.append((time.perf_counter(), time.process_time())))
    assert len(stamps) == 2, stamps
    (w0, c0), (w1, c1) = stamps
    return (w1 - w0 - eval_seconds[0]) / config.max_steps, (c1 - c0 - eval_seconds[1]) / config.max_steps


def evaluation_seconds(config: TrainConfig, repeats: int = 7) -> tuple[float, float]:
    """Median wall and CPU time of one ``numerics.train.evaluate`` of the held-out set (what ``train`` does at an evaluation)."""
    model = get_model(config.model)
    params = model.init_params(config.d, config.N, config.depth, np.random.default_rng(0), dtype=np.float32)
    batch = evaluation_batch(config)
    wall, cpu = [], []
    for _ in range(repeats + 1):
        w0, c0 = time.perf_counter(), time.process_time()
        with np.errstate(over="ignore", invalid="ignore"):
            evaluate(model, params, batch)
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall[1:]), statistics.median(cpu[1:])


def run_package_pieces(config: TrainConfig) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and sampler wall seconds per step of the trainer's loop body, called directly."""
    model = get_model(config.model)
    spectrum = config.spectrum()
    rng_init = np.random.default_rng(np.random.SeedSequence(config.seed, spawn_key=(0,)))
    rng = np.random.default_rng(np.random.SeedSequence(config.seed, spawn_key=(1,)))
    params = model.init_params(config.d, config.N, config.depth, rng_init, dtype=np.float32, **config.init_options)
    state = adam_init(params)
    losses = np.full(config.max_steps, np.nan)
    sampler = 0.0
    start, cpu_start = time.perf_counter(), time.process_time()
    for step in range(config.max_steps):
        t0 = time.perf_counter()
        batch = sample(config.task, spectrum, config.P, config.batch_size, rng, k=config.k, dtype=np.float32,
                       stream=config.stream)
        sampler += time.perf_counter() - t0
        with np.errstate(over="ignore", invalid="ignore"):
            loss, grads = model.loss_and_grad(params, batch)
        loss = float(loss)
        if not math.isfinite(loss) or not all(bool(np.all(np.isfinite(g))) for g in grads.values()):
            raise RuntimeError(f"package run diverged at step {step}")
        losses[step] = loss
        grads, _ = clip_by_global_norm(grads, config.grad_clip)
        params, state = adam_update(params, grads, state, learning_rate_at(step, config), config.beta1, config.beta2, config.eps)
    total, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return total / config.max_steps, cpu / config.max_steps, sampler / config.max_steps


def run_torch(config: TrainConfig, *, package_sampler: bool, seed: int = 0) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and sampler wall seconds per step of the plain PyTorch loop."""
    d, N, P, L, B, S = config.d, config.N, config.P, config.depth, config.batch_size, config.max_steps
    gen = torch.Generator().manual_seed(seed)
    model = TorchSoftmaxModel(torch_init(d, N, L, gen))
    optimizer = torch.optim.Adam(model.parameters(), lr=config.learning_rate, betas=(config.beta1, config.beta2), eps=config.eps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda t: schedule_value("warmup_cosine", t, 1.0, config.warmup_steps, S)
    )
    rng, spectrum = np.random.default_rng(seed), config.spectrum()
    losses = []
    sampler = 0.0
    start, cpu_start = time.perf_counter(), time.process_time()
    for _ in range(S):
        t0 = time.perf_counter()
        if package_sampler:
            batch = sample("difficult", spectrum, P, B, rng, k=2, dtype=np.float32, stream=config.stream)
            context_x, context_y, test_x, target = package_batch_as_torch(batch)
        else:
            context_x, context_y, test_x, target = torch_top2_batch(B, P, d, gen)
        sampler += time.perf_counter() - t0
        optimizer.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(context_x, context_y, test_x), target)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    total, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    if not all(math.isfinite(v) for v in losses):
        raise RuntimeError("torch run diverged")
    return total / S, cpu / S, sampler / S


# ----------------------------------------------------------------------------- same-model check
def same_model_check(size, seed: int = 0) -> dict:
    """Copy the package's initial float32 params into torch; compare forward, loss, gradients, one Adam step."""
    d, N, P, L, B = size
    model = get_model("nonlinear")
    rng = np.random.default_rng(seed)
    params = model.init_params(d, N, L, rng, dtype=np.float32)
    batch = sample("difficult", TrainConfig(d=d, N=N, P=P).spectrum(), P, min(B, 64), rng, k=2, dtype=np.float32)
    net = TorchSoftmaxModel(params)
    context_x, context_y, test_x, target = package_batch_as_torch(batch)
    prediction = net(context_x, context_y, test_x)
    loss_torch = F.mse_loss(prediction, target)
    loss_torch.backward()
    package_prediction = model.forward(params, batch).prediction
    loss_package, grads = model.loss_and_grad(params, batch)
    grad_diff = max(float(np.max(np.abs(getattr(net, k).grad.numpy() - g))) for k, g in grads.items())
    grad_scale = max(float(np.max(np.abs(g))) for g in grads.values())
    lr = get_model("nonlinear").TRAIN_DEFAULTS["learning_rate"]
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    optimizer.step()
    stepped, _ = adam_update(params, grads, adam_init(params), lr)
    # Adam's first step is ±lr·sign(g): an entry whose gradient is zero up to float32 round-off may
    # flip sign between the two implementations (a difference of 2·lr); compare the others
    step_diff, resolved_diff, unresolved = 0.0, 0.0, 0
    for k, v in stepped.items():
        diff = np.abs(getattr(net, k).detach().numpy() - v)
        resolved = np.abs(grads[k]) > 1e-4 * grad_scale
        step_diff = max(step_diff, float(diff.max()))
        resolved_diff = max(resolved_diff, float(diff[resolved].max(initial=0.0)))
        unresolved += int(np.count_nonzero(~resolved))
    return {
        "forward_max_abs_diff": float(np.max(np.abs(prediction.detach().numpy() - package_prediction))),
        "prediction_max_abs": float(np.max(np.abs(package_prediction))),
        "loss_abs_diff": abs(loss_torch.item() - float(loss_package)),
        "loss": float(loss_package),
        "grad_max_abs_diff": grad_diff,
        "grad_max_abs": grad_scale,
        "adam_step_params_max_abs_diff": step_diff,
        "adam_step_params_max_abs_diff_resolved": resolved_diff,
        "adam_step_unresolved_entries": unresolved,
        "adam_lr": lr,
    }


def sampler_law_check(size) -> dict:
    """Mean and variance of the top-2 target from both samplers, with the z-score of their
    difference in variance (same law: |z| of order 1). At most 2^24 input values per sampler."""
    d, P = size[0], size[2]
    contexts = max(256, min(16384, (1 << 24) // (P * d)))
    gen = torch.Generator().manual_seed(1)
    t = torch_top2_batch(contexts, P, d, gen)[3].numpy().astype(np.float64)
    n = sample("difficult", TrainConfig(d=d, N=d, P=P).spectrum(), P, contexts, np.random.default_rng(1), k=2,
               dtype=np.float32).target.astype(np.float64)

    def var_se(v):  # standard error of the sample variance
        c = v - v.mean()
        return math.sqrt(max(float(np.mean(c**4)) - float(np.mean(c**2)) ** 2, 0.0) / v.size)

    z = (t.var() - n.var()) / math.hypot(var_se(t), var_se(n))
    return {"torch_target_var": float(t.var()), "package_target_var": float(n.var()), "var_diff_z": float(z),
            "torch_target_mean": float(t.mean()), "package_target_mean": float(n.mean()), "contexts": contexts}


def jax_same_model_check(size, seed: int = 0) -> dict:
    """The torch check for the jax peer: the package's initial float32 params and one batch of its
    sampler; compare forward, loss, gradients (``jax.grad`` of the MSE) and one Adam step (:func:`jax_adam`)."""
    d, N, P, L, B = size
    model = get_model("nonlinear")
    rng = np.random.default_rng(seed)
    params = model.init_params(d, N, L, rng, dtype=np.float32)
    batch = sample("difficult", TrainConfig(d=d, N=N, P=P).spectrum(), P, min(B, 64), rng, k=2, dtype=np.float32)
    jparams = {name: jnp.asarray(value) for name, value in params.items()}
    arrays = tuple(jnp.asarray(getattr(batch, k)) for k in ("context_x", "context_y", "test_x", "target"))
    prediction = np.asarray(jax.jit(jax_forward)(jparams, *arrays[:3]))
    loss_jax, jgrads = jax.jit(jax.value_and_grad(jax_loss))(jparams, *arrays)
    package_prediction = model.forward(params, batch).prediction
    loss_package, grads = model.loss_and_grad(params, batch)
    grad_diff = max(float(np.max(np.abs(np.asarray(jgrads[k]) - g))) for k, g in grads.items())
    grad_scale = max(float(np.max(np.abs(g))) for g in grads.values())
    lr = model.TRAIN_DEFAULTS["learning_rate"]
    zeros = jax.tree_util.tree_map(jnp.zeros_like, jparams)
    jstepped, _, _ = jax_adam(jparams, jgrads, zeros, zeros, jnp.int32(0), lr, 0.9, 0.999, 1e-8)
    stepped, _ = adam_update(params, grads, adam_init(params), lr)
    step_diff, resolved_diff, unresolved = 0.0, 0.0, 0
    for k, v in stepped.items():  # as in same_model_check: entries whose gradient is at round-off may flip sign
        diff = np.abs(np.asarray(jstepped[k]) - v)
        resolved = np.abs(grads[k]) > 1e-4 * grad_scale
        step_diff = max(step_diff, float(diff.max()))
        resolved_diff = max(resolved_diff, float(diff[resolved].max(initial=0.0)))
        unresolved += int(np.count_nonzero(~resolved))
    return {
        "forward_max_abs_diff": float(np.max(np.abs(prediction - package_prediction))),
        "prediction_max_abs": float(np.max(np.abs(package_prediction))),
        "loss_abs_diff": abs(float(loss_jax) - float(loss_package)),
        "loss": float(loss_package),
        "grad_max_abs_diff": grad_diff,
        "grad_max_abs": grad_scale,
        "adam_step_params_max_abs_diff": step_diff,
        "adam_step_params_max_abs_diff_resolved": resolved_diff,
        "adam_step_unresolved_entries": unresolved,
        "adam_lr": lr,
    }


def jax_sampler_law_check(size, spectra=((0.0, 0.0), (1.0, 1.0))) -> dict:
    """Mean and variance of the top-2 target from the jax sampler and the package's (stream 2), with the
    z-score of the variance difference, on the flat spectrum and on a = b = 1 (the rotated path)."""
    d, P = size[0], size[2]
    contexts = max(256, min(16384, (1 << 24) // (P * d)))
    out = {}
    for a, b in spectra:
        config = TrainConfig(d=d, N=d, P=P, a=a, b=b)
        spectrum = config.spectrum()
        args = (jnp.asarray(np.sqrt(spectrum.eigenvalues), jnp.float32),
                jnp.asarray(np.sqrt(spectrum.teacher_eigenvalues), jnp.float32), not spectrum.is_isotropic)
        draw = jax.jit(functools.partial(_jax_targets, contexts=contexts, P=P, d=d, args=args))
        t = np.asarray(draw(jax.random.key(1)), dtype=np.float64)
        n = sample("difficult", spectrum, P, contexts, np.random.default_rng(1), k=2, dtype=np.float32,
                   stream=2).target.astype(np.float64)
        out[f"a={a:g},b={b:g}"] = _variance_comparison(t, n, contexts)
    return out


def _jax_targets(key, *, contexts, P, d, args):
    return jax_top_k_batch(key, contexts, P, d, 2, *args)[3]


def _variance_comparison(peer: np.ndarray, package: np.ndarray, contexts: int) -> dict:
    def var_se(v):  # standard error of the sample variance
        c = v - v.mean()
        return math.sqrt(max(float(np.mean(c**4)) - float(np.mean(c**2)) ** 2, 0.0) / v.size)

    z = (peer.var() - package.var()) / math.hypot(var_se(peer), var_se(package))
    return {"peer_target_var": float(peer.var()), "package_target_var": float(package.var()), "var_diff_z": float(z),
            "peer_target_mean": float(peer.mean()), "package_target_mean": float(package.mean()), "contexts": contexts}


# ----------------------------------------------------------------------------- yardsticks
def bare_exp_seconds(count: int, repeats: int = 15) -> float:
    """Best time of ``np.exp`` over ``count`` float32 values into a preallocated output."""
    x = np.random.default_rng(0).standard_normal(count, dtype=np.float32)
    out = np.empty_like(x)
    np.exp(x, out=out)
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.exp(x, out=out)
        best = min(best, time.perf_counter() - t0)
    return best


def sgemm_peak_gflops(n: int = 1024, repeats: int = 7) -> float:
    """Best float32 GFLOP/s of an n x n x n matmul (one thread)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = np.empty((n, n), dtype=np.float32)
    np.matmul(a, b, out=c)
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.matmul(a, b, out=c)
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best / 1e9


def engine_flops(size) -> int:
    """Matmul flops of one ``loss_and_grad`` of the package's nonlinear engine (forward + reverse).

    Forward: ``X W_xᵀ`` (2BPdN + 2BdN), ``C = W_qᵀW_k`` (2LN³), ``u = ĥ_test C`` (2LBN²),
    logits (2BLPN), ``p·y`` (2BLP). Reverse: ``∂u`` and ``∂Ĥ_ctx`` (2·2BLPN), ``∂C`` and
    ``∂ĥ_test`` (2·2LBN²), ``∂W_q, ∂W_k`` (2·2LN³), ``∂W_x`` (2BPNd + 2BNd). Elementwise work
    (norms, softmax, Adam) is not counted.
    """
    d, N, P, L, B = size
    forward = 2 * B * P * d * N + 2 * B * d * N + 2 * L * N**3 + 2 * L * B * N**2 + 2 * B * L * P * N + 2 * B * L * P
    reverse = 4 * B * L * P * N + 4 * L * B * N**2 + 4 * L * N**3 + 2 * B * P * N * d + 2 * B * N * d
    return forward + reverse


# ----------------------------------------------------------------------------- environment
def environment() -> dict:
    info = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "torch_num_threads": torch.get_num_threads(),
        "torch_num_interop_threads": torch.get_num_interop_threads(),
        "machine": platform.machine(),
        "processor": cpu_model(),
        "cpu_count": os.cpu_count(),
        "thread_env": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS")},
        "numpy_simd": simd_extensions(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "jax": None if jax is None else jax.__version__,
        "jaxlib": None if jax is None else _jaxlib_version(),
        "jax_devices": None if jax is None else [str(device) for device in jax.devices()],
    }
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        info["numpy_blas"] = {k: blas.get(k) for k in ("name", "version", "openblas configuration")}
    except (TypeError, KeyError) as error:  # numpy < 1.25 has no mode="dicts"
        info["numpy_blas"] = f"unavailable ({error})"
    torch_config = torch.__config__.show()
    found = re.search(r"BLAS_INFO=([^,\s]+)", torch_config)
    info["torch_blas"] = found.group(1) if found else "unknown"
    info["torch_parallel"] = torch.__config__.parallel_info().strip().splitlines()
    try:
        from threadpoolctl import threadpool_info

        info["threadpools"] = [
            {k: pool.get(k) for k in ("user_api", "internal_api", "num_threads", "version", "architecture", "filepath")}
            for pool in threadpool_info()
        ]
    except ImportError:
        info["threadpools"] = "threadpoolctl not installed"
    return info


def _jaxlib_version() -> str:
    import jaxlib

    return getattr(jaxlib, "__version__", "unknown")


def write_json_atomically(path: str, data: dict) -> None:
    target = Path(path).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle, indent=2, allow_nan=False)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ----------------------------------------------------------------------------- main
def parse_size(text: str) -> tuple[int, ...]:
    try:
        size = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a size is five integers d,N,P,L,batch; got {text!r}") from None
    if len(size) != 5 or min(size) < 1:
        raise argparse.ArgumentTypeError(f"a size is five positive integers d,N,P,L,batch; got {text!r}")
    d, N, P = size[:3]
    if N < d or P < 2:
        raise argparse.ArgumentTypeError(f"need N >= d and P >= 2 (top-2 task); got {text!r}")
    return size


def summarise(values: list[float]) -> dict:
    return {"median_ms": 1e3 * statistics.median(values), "min_ms": 1e3 * min(values), "all_ms": [1e3 * v for v in values]}


def bench_size(size, steps: int, repeats: int, exp_cache: dict, stream: int = 2) -> dict:
    _, _, P, L, B = size
    config = config_for(size, steps, stream)
    check = same_model_check(size)
    rel = check["forward_max_abs_diff"] / max(1.0, check["prediction_max_abs"])
    if rel > FORWARD_TOL:
        raise SystemExit(f"size {size}: torch forward differs from the package's by {check['forward_max_abs_diff']:.3g}: not the same model")
    law = sampler_law_check(size)
    jax_check = jax_law = None
    if jax is not None:
        jax_check = jax_same_model_check(size)
        if jax_check["forward_max_abs_diff"] / max(1.0, jax_check["prediction_max_abs"]) > FORWARD_TOL:
            raise SystemExit(f"size {size}: jax forward differs from the package's by "
                             f"{jax_check['forward_max_abs_diff']:.3g}: not the same model")
        jax_law = jax_sampler_law_check(size)
    eval_s = evaluation_seconds(config)
    # one untimed warm-up of every variant (imports, allocator, first-call overheads, jax's compilation)
    warm = config_for(size, 2, stream)
    run_package_train(warm, (0.0, 0.0))
    run_package_pieces(warm)
    run_torch(warm, package_sampler=False)
    run_torch(warm, package_sampler=True)
    variants = {
        "package_train": lambda: run_package_train(config, eval_s) + (math.nan,),
        "torch": lambda: run_torch(config, package_sampler=False),
        "package_pieces": lambda: run_package_pieces(config),
        "torch_package_sampler": lambda: run_torch(config, package_sampler=True),
    }
    if jax is not None:
        run_jax(warm)  # compiles: the step is jitted once per size (max_steps is an argument)
        run_jax_sampler(warm)
        variants["jax"] = lambda: run_jax(config)
        variants["jax_sampler"] = lambda: run_jax_sampler(config)
    times = {k: [] for k in variants}
    cpu_times = {k: [] for k in variants}
    samplers = {k: [] for k in variants if k not in ("package_train", "jax", "jax_sampler")}
    for _ in range(repeats):  # interleaved: package, torch, package pieces, torch + sampler, jax, ..., then again
        for name, run in variants.items():
            wall, cpu, samp = run()
            times[name].append(wall)
            cpu_times[name].append(cpu)
            if name in samplers:
                samplers[name].append(samp)
    count = B * L * P
    if count not in exp_cache:
        exp_cache[count] = bare_exp_seconds(count)
    exp_s = exp_cache[count]
    result = {"size": dict(zip(("d", "N", "P", "L", "batch"), size)), "steps": steps, "repeats": repeats,
              "package_stream": stream,
              "evaluation_ms_subtracted": {"wall": 1e3 * eval_s[0], "cpu": 1e3 * eval_s[1]}, "same_model_check": check, "sampler_law_check": law,
              "jax_same_model_check": jax_check, "jax_sampler_law_check": jax_law,
              "bare_exp_ms": 1e3 * exp_s, "bare_exp_values": count, "engine_matmul_flops": engine_flops(size)}
    result["timings"] = {k: summarise(v) for k, v in times.items()}
    result["cpu_timings"] = {k: summarise(v) for k, v in cpu_times.items()}
    result["ratio_torch_over_package_train_cpu"] = statistics.median(cpu_times["torch"]) / statistics.median(cpu_times["package_train"])
    med = {k: statistics.median(v) for k, v in times.items()}
    result["ratio_torch_over_package_train"] = med["torch"] / med["package_train"]
    result["ratio_torch_over_package_pieces"] = med["torch"] / med["package_pieces"]
    result["ratio_torch_package_sampler_over_package_train"] = med["torch_package_sampler"] / med["package_train"]
    if jax is not None:
        result["ratio_jax_over_package_train"] = med["jax"] / med["package_train"]
        result["ratio_jax_over_package_train_cpu"] = (statistics.median(cpu_times["jax"])
                                                      / statistics.median(cpu_times["package_train"]))
        result["ratio_jax_over_torch"] = med["jax"] / med["torch"]
        result["jax_sampler_fraction"] = med["jax_sampler"] / med["jax"]  # a sampler alone against the whole step
    result["sampler_fraction"] = {k: statistics.median(s) / med[k] for k, s in samplers.items()}
    result["sampler_ms"] = {k: 1e3 * statistics.median(s) for k, s in samplers.items()}
    result["bare_exp_fraction"] = {k: exp_s / med[k] for k in ("package_train", "torch", "jax") if k in med}
    return result


def _cell(timings: dict, key: str) -> str:
    return f"{timings[key]['median_ms']:.1f} / {timings[key]['min_ms']:.1f}"


def print_peer_table(results: list[dict]) -> None:
    """The three peers side by side: wall ms per step (median), ratios to the package (train) in the same run."""
    has_jax = all("jax" in r["timings"] for r in results)
    print("\npeers, wall ms per step (median over interleaved repeats); ratio = peer / package (train), same run")
    head = f"{'d,N,P,L,batch':<20}{'package':>9}{'torch':>9}" + (f"{'jax':>9}" if has_jax else "") + f"{'torch/pkg':>11}"
    if has_jax:
        head += f"{'jax/pkg':>9}{'jax/torch':>11}{'jax smp ms':>11}{'jax smp %':>10}"
    print(head)
    for r in results:
        t = r["timings"]
        size = ",".join(str(v) for v in r["size"].values())
        line = f"{size:<20}{t['package_train']['median_ms']:>9.2f}{t['torch']['median_ms']:>9.2f}"
        if has_jax:
            line += f"{t['jax']['median_ms']:>9.2f}"
        line += f"{r['ratio_torch_over_package_train']:>11.2f}"
        if has_jax:
            line += (f"{r['ratio_jax_over_package_train']:>9.2f}{r['ratio_jax_over_torch']:>11.2f}"
                     f"{t['jax_sampler']['median_ms']:>11.2f}{100 * r['jax_sampler_fraction']:>9.1f}%")
        print(line)


def print_tables(results: list[dict], peak: float) -> None:
    print("\nper step, process CPU ms (median / min; on a loaded machine steadier than wall)")
    print(f"{'d,N,P,L,batch':<20}{'package train':>16}{'package pieces':>16}{'torch':>16}{'torch+np sampler':>18}{'ratio':>7}")
    for r in results:
        t = r["cpu_timings"]
        size = ",".join(str(v) for v in r["size"].values())
        print(f"{size:<20}{_cell(t, 'package_train'):>16}{_cell(t, 'package_pieces'):>16}{_cell(t, 'torch'):>16}"
              f"{_cell(t, 'torch_package_sampler'):>18}{r['ratio_torch_over_package_train_cpu']:>7.2f}")
    print("\nper step, wall ms (median / min over repeats); ratio = torch median / package (train) median")
    head = (f"{'d,N,P,L,batch':<20}{'package train':>16}{'package pieces':>16}{'torch':>16}{'torch+np sampler':>18}"
            f"{'ratio':>7}{'ratio np-s':>11}")
    print(head)
    for r in results:
        t = r["timings"]
        size = ",".join(str(v) for v in r["size"].values())
        print(f"{size:<20}{_cell(t, 'package_train'):>16}{_cell(t, 'package_pieces'):>16}{_cell(t, 'torch'):>16}"
              f"{_cell(t, 'torch_package_sampler'):>18}{r['ratio_torch_over_package_train']:>7.2f}"
              f"{r['ratio_torch_package_sampler_over_package_train']:>11.2f}")
    print(f"\nfractions (step = package train median; sampler % from the pieces loop; matmul peak {peak:.1f} GFLOP/s)")
    print(f"{'d,N,P,L,batch':<20}{'sampler %':>10}{'torch smp %':>12}{'exp ms':>8}{'exp frac':>9}{'torch exp':>10}"
          f"{'GFLOP/s':>9}{'peak frac':>10}{'fwd |diff|':>12}")
    for r in results:
        size = ",".join(str(v) for v in r["size"].values())
        gflops = r["matmul_gflops_package_train"]
        print(f"{size:<20}{100 * r['sampler_fraction']['package_pieces']:>9.1f}%{100 * r['sampler_fraction']['torch']:>11.1f}%"
              f"{r['bare_exp_ms']:>8.2f}{r['bare_exp_fraction']['package_train']:>9.3f}{r['bare_exp_fraction']['torch']:>10.3f}"
              f"{gflops:>9.2f}{r['matmul_peak_fraction_package_train']:>10.3f}{r['same_model_check']['forward_max_abs_diff']:>12.2e}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench_peer.py",
        description="Time numerics.train.train (nonlinear model, top-2 task, float32, 1 thread) per step against "
        "a plain PyTorch-CPU training loop of the same model, in interleaved repeats; print median and min ms per "
        "step, the ratio torch/package, the sampler's share of a step, and the step's fraction of a bare np.exp over "
        "the logits and of the 1-thread sgemm peak. Needs torch: pip install -e '.[bench]'.",
        epilog="Example: python benchmarks/bench_peer.py --sizes 16,32,64,16,256 --repeats 3 --steps 10 --json peer.json",
    )
    parser.add_argument("--sizes", nargs="+", type=parse_size, default=list(DEFAULT_SIZES), metavar="d,N,P,L,batch",
                        help="sizes to time (default: the four of the speed table: %(default)s)")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats per variant (default %(default)s)")
    parser.add_argument("--steps", type=int, default=20, help="training steps per repeat (default %(default)s)")
    parser.add_argument("--stream", type=int, choices=(1, 2, 3), default=2,
                        help="the package's sampler stream (TrainConfig.stream; default %(default)s, the long study's)")
    parser.add_argument("--json", metavar="OUT", help="write all results to OUT (atomically)")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.steps < 2:
        parser.error("--repeats must be >= 1 and --steps >= 2")
    if torch is None:
        print("bench_peer.py needs torch: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    env = environment()
    load_before = os.getloadavg()
    print(f"numpy {env['numpy']} ({env['numpy_blas']}), torch {env['torch']} ({env['torch_blas']}), "
          f"torch threads {env['torch_num_threads']}, python {env['python']}, {env['processor']}")
    simd = env["numpy_simd"]
    print(f"SIMD (numpy): baseline {simd['baseline'][-1] if simd['baseline'] else '-'}, found {', '.join(simd['found'])}, "
          f"not found {', '.join(simd['not_found']) or '-'}; torch CPU capability {env['torch_cpu_capability']}")
    if jax is None:
        print("jax not installed: the jax peer is skipped (pip install -e '.[bench]')")
    else:
        print(f"jax {env['jax']} (jaxlib {env['jaxlib']}, {', '.join(env['jax_devices'])}), XLA_FLAGS={os.environ['XLA_FLAGS']!r}")
    print(f"package sampler: stream {args.stream} (TrainConfig(stream={args.stream}))")
    pools = env["threadpools"]
    if isinstance(pools, list):
        print("threadpools: " + "; ".join(f"{p['internal_api']} {p['version']} {p['num_threads']} thread(s)" for p in pools))
    else:
        print(f"threadpools: {pools}")
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}")
    peak = sgemm_peak_gflops()
    print(f"float32 sgemm 1024^2 peak (1 thread, best of 7): {peak:.1f} GFLOP/s")
    results, exp_cache = [], {}
    for size in args.sizes:
        t0 = time.perf_counter()
        r = bench_size(size, args.steps, args.repeats, exp_cache, args.stream)
        med = r["timings"]["package_train"]["median_ms"] / 1e3
        r["matmul_gflops_package_train"] = r["engine_matmul_flops"] / med / 1e9
        r["matmul_peak_fraction_package_train"] = r["matmul_gflops_package_train"] / peak
        r["matmul_peak_fraction_torch"] = r["engine_matmul_flops"] / (r["timings"]["torch"]["median_ms"] / 1e3) / 1e9 / peak
        c = r["same_model_check"]
        print(f"{size}: same model: forward max|diff| {c['forward_max_abs_diff']:.2e} (|ŷ| ≤ {c['prediction_max_abs']:.2f}), "
              f"loss diff {c['loss_abs_diff']:.1e}, grad max|diff| {c['grad_max_abs_diff']:.1e} (max|g| {c['grad_max_abs']:.2f}), "
              f"after one Adam step (lr {c['adam_lr']:g}) {c['adam_step_params_max_abs_diff_resolved']:.1e} "
              f"where |g| > 1e-4 max|g| ({c['adam_step_params_max_abs_diff']:.1e} over all, {c['adam_step_unresolved_entries']} entries with |g| at round-off); target var torch {r['sampler_law_check']['torch_target_var']:.3f} "
              f"vs package {r['sampler_law_check']['package_target_var']:.3f} (z = {r['sampler_law_check']['var_diff_z']:+.1f}); {time.perf_counter() - t0:.0f} s", flush=True)
        if r["jax_same_model_check"] is not None:
            c = r["jax_same_model_check"]
            law = "; ".join(f"{k}: var jax {v['peer_target_var']:.3f} vs package {v['package_target_var']:.3f} (z = {v['var_diff_z']:+.1f})"
                            for k, v in r["jax_sampler_law_check"].items())
            print(f"{size}: jax same model: forward max|diff| {c['forward_max_abs_diff']:.2e}, loss diff {c['loss_abs_diff']:.1e}, "
                  f"grad max|diff| {c['grad_max_abs_diff']:.1e}, after one Adam step {c['adam_step_params_max_abs_diff_resolved']:.1e} "
                  f"where |g| > 1e-4 max|g|; target {law}", flush=True)
        results.append(r)
    load_after = os.getloadavg()
    print_tables(results, peak)
    print_peer_table(results)
    print(f"\nload average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}; "
          f"after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} ({os.cpu_count()} cores)")
    if args.json:
        write_json_atomically(args.json, {
            "benchmark": "bench_peer", "command": " ".join([Path(sys.argv[0]).name] + (sys.argv[1:] if argv is None else list(argv))),
            "environment": env, "sgemm_peak_gflops": peak, "load_before": list(load_before), "load_after": list(load_after),
            "table_uses": "package_train (numerics.train.train, step-0 to step-S callbacks minus one evaluation)",
            "package_stream": args.stream,
            "results": results,
        })
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
