"""The JAX engine of the softmax models (``"nonlinear"``, ``"nonlinear_rms"``): one jitted training step.

What is computed is what the numpy engine computes (:mod:`numerics.models.nonlinear`), written once
more in ``jax.numpy`` and differentiated by ``jax.grad``:

* **Data** (paper eqs. 1-6), drawn inside the jitted step: per context a Haar rotation ``O`` (eq. 3;
  QR of a Gaussian matrix with the sign fix, none on flat spectra, where the law is rotation
  invariant, as :func:`numerics.tasks.sample`), ``x = O(√λ ⊙ z)``, ``β = O(√ω ⊙ w)`` (eq. 4),
  ``y_i = βᵀx_i`` (eq. 1); the target is ``y_j`` of a uniformly chosen ``x_test = x_j`` (eq. 5) or
  the mean label of the ``k`` context inputs of largest cosine with a fresh ``x_test`` (eq. 6). The
  batch of step ``t`` is drawn from the counter-based key ``fold_in(fold_in(key(seed), 1), t)``, so
  a run is reproducible and resumes without a generator state (the ``1`` keeps the training
  batches apart from other uses of the seed, as the numpy engine's ``spawn_key=(1,)``). The numpy
  engine draws the same law from another stream, so the two engines' runs are statistically, not
  bitwise, alike.
* **Model** (eqs. 7-10, 12 with the mask M(0), eq. 76): the fixed input stream ``H_x = W_x X`` is
  pre-normed (LayerNorm without gain or bias, or a parameter-free RMSNorm; eps
  :data:`numerics.models.LAYER_NORM_EPS`), the test token's softmax row over the ``P`` context
  tokens is ``p_ℓ = softmax((W_q^ℓ ĥ_test)ᵀ W_k^ℓ Ĥ_ctx)``, and with M(0) the context states stay
  frozen, so ``ŷ_L = (1/L) Σ_ℓ g p_ℓ·y`` with ``g = W_o W_v W_y`` (eqs. 59-60). As in the numpy
  engine the logits are formed in the ``d`` input dimensions: with ``A = W_x`` minus its column means
  (LayerNorm's centring; ``A = W_x`` for RMSNorm), ``ĥ_j = r_j A x_j`` with
  ``r_j = 1/sqrt(|A x_j|²/N + eps)``, so ``ĥ_testᵀ (W_q^ℓ)ᵀ W_k^ℓ ĥ_j = (D_ℓᵀ z_test)·z_j`` with
  ``z = r x`` and ``D_ℓ = (W_q^ℓ A)ᵀ (W_k^ℓ A)`` -- an identity, not an approximation.
* **Loss and gradient**: the mean squared error of eq. (12) and its ``jax.grad``.
* **Optimiser**: Adam (bias-corrected, as :func:`numerics.optim.adam_update`), the global-norm
  clipping of :func:`numerics.optim.clip_by_global_norm`, frozen parameters (zero gradient), with
  the step size of the step computed on the host by :func:`numerics.optim.schedule_value` (the
  schedules exist once).

:class:`JaxTrainer` holds ``K`` candidates' weights and Adam moments on JAX's default device (a
GPU when present) and advances all of them by one jitted, ``vmap``-ed step on one shared batch
(the lockstep group of :func:`numerics.lockstep.train_lockstep`; ``K = 1`` for a single run of
:func:`numerics.train.train`). Evaluation, checkpoints and the final diagnostics stay with the
numpy trainer (:class:`numerics.train.ModelRun`), which pulls the weights at every evaluation;
the training losses are pulled then too, and a non-finite training loss or gradient is reported
there (naming its step), the candidate's weights having stayed at their last finite values.

float32 by default; a float64 config switches on JAX's 64-bit mode (``jax_enable_x64``, a global
JAX setting) for the tests. This module imports without jax (it is walked by the docstring test);
using it without jax raises the :class:`ValueError` of :func:`numerics.engines.check_engine`.
"""

from __future__ import annotations

import math
from typing import Mapping, NamedTuple, Sequence

import numpy as np

from ..config import TrainConfig
from ..models import LAYER_NORM_EPS, get_model
from ..optim import AdamState, schedule_value
from . import JAX_EXTRA, JAX_MODELS

try:
    import jax
    import jax.numpy as jnp
    from jax import lax
except ImportError:  # the engine is refused by TrainConfig before it is used
    jax = jnp = lax = None

__all__ = ["GROUP_FIELDS", "JaxBatch", "JaxTrainer", "device_description", "forward", "loss_and_grad", "sample_batch"]

#: the fold-in constant of the training batches (the numpy engine's ``spawn_key=(1,)``)
_TRAIN_STREAM = 1
#: the fields that must agree for K candidates to share one vmapped step (one shape, one data law)
GROUP_FIELDS = ("model", "task", "k", "a", "b", "c_lambda", "c_omega", "d", "N", "P", "depth", "batch_size",
                "dtype", "seed")


def _require_jax() -> None:
    if jax is None:
        raise ValueError(f"engine='jax' needs jax, which is not installed: {JAX_EXTRA}")


def _use_dtype(dtype: str):
    """The jax dtype of a config's ``dtype``; float64 switches on JAX's 64-bit mode (global, idempotent)."""
    _require_jax()
    if dtype == "float64" and not jax.config.jax_enable_x64:
        jax.config.update("jax_enable_x64", True)
    return jnp.float64 if dtype == "float64" else jnp.float32


def device_description() -> str:
    """JAX's default device, as printed at the start of a run (``"cpu (TFRT_CPU_0)"``, ``"gpu (NVIDIA H100)"``).

    Examples
    --------
    >>> device_description().split()[0] in ("cpu", "gpu", "tpu")
    True
    """
    _require_jax()
    device = jax.devices()[0]
    kind = getattr(device, "device_kind", "") or str(device)
    return f"{device.platform} ({kind})"


# ----------------------------------------------------------------------------- data (eqs. 1-6)
class JaxBatch(NamedTuple):
    """One batch of the data law as arrays (the four a model reads; :class:`numerics.tasks.Batch` has them too).

    Attributes
    ----------
    context_x : array, shape (B, P, d)
    context_y : array, shape (B, P)
    test_x : array, shape (B, d)
    target : array, shape (B,)

    References
    ----------
    Paper eqs. (1)-(6).

    Examples
    --------
    >>> JaxBatch(np.zeros((2, 3, 4)), np.zeros((2, 3)), np.zeros((2, 4)), np.zeros(2)).context_y.shape
    (2, 3)
    """

    context_x: object
    context_y: object
    test_x: object
    target: object


class _Law(NamedTuple):
    """The static description of a config's data law (hashable: the jitted step is built once per law)."""

    task: str
    k: int
    P: int
    batch_size: int
    d: int
    sqrt_lambda: tuple
    sqrt_omega: tuple
    rotate: bool
    dtype: str

    @classmethod
    def of(cls, config: TrainConfig) -> "_Law":
        spectrum = config.spectrum()
        return cls(config.task, config.k, config.P, config.batch_size, config.d,
                   tuple(float(v) for v in np.sqrt(spectrum.eigenvalues)),
                   tuple(float(v) for v in np.sqrt(spectrum.teacher_eigenvalues)),
                   not spectrum.is_isotropic, config.dtype)


def _draw(key, law: _Law) -> JaxBatch:
    """One batch of the law (eqs. 1-6) from ``key``, inside a jit."""
    dtype = jnp.float64 if law.dtype == "float64" else jnp.float32
    B, P, d = law.batch_size, law.P, law.d
    k_rot, k_x, k_teacher, k_test = jax.random.split(key, 4)
    sqrt_lambda = jnp.asarray(law.sqrt_lambda, dtype)
    sqrt_omega = jnp.asarray(law.sqrt_omega, dtype)
    z = jax.random.normal(k_x, (B, P, d), dtype)
    w = jax.random.normal(k_teacher, (B, d), dtype)
    if law.rotate:  # Haar O per context (eq. 3): QR of a Gaussian matrix, Q diag(sign(diag R))
        q, r = jnp.linalg.qr(jax.random.normal(k_rot, (B, d, d), dtype))
        O = q * jnp.where(jnp.diagonal(r, axis1=1, axis2=2) < 0, -1.0, 1.0).astype(dtype)[:, None, :]
        input_map = O * sqrt_lambda  # O diag √λ
        context_x = jnp.einsum("bpe,bde->bpd", z, input_map)  # x = O (√λ ⊙ z), eq. (4)
        teacher = jnp.einsum("be,bde->bd", w, O * sqrt_omega)  # β = O (√ω ⊙ w)
    else:
        context_x, teacher = z * sqrt_lambda, w * sqrt_omega
    context_y = jnp.einsum("bpd,bd->bp", context_x, teacher)  # y = βᵀx, eq. (1)
    if law.task == "easy":  # eq. (5): x_test a copy of a uniformly chosen context input, y* its label
        j = jax.random.randint(k_test, (B,), 0, P)
        rows = jnp.arange(B)
        return JaxBatch(context_x, context_y, context_x[rows, j], context_y[rows, j])
    z_test = jax.random.normal(k_test, (B, d), dtype)
    if law.rotate:
        test_x = jnp.einsum("be,bde->bd", z_test, input_map)
    else:
        test_x = z_test * sqrt_lambda
    # eq. (6): the k largest cosines to x_test (x·x_test/|x| ranks as the cosine within a context)
    scores = jnp.einsum("bpd,bd->bp", context_x, test_x) * lax.rsqrt(jnp.sum(context_x * context_x, axis=-1))
    _, top = lax.top_k(scores, law.k)
    target = jnp.take_along_axis(context_y, top, axis=1).mean(axis=1)
    return JaxBatch(context_x, context_y, test_x, target)


def _train_key(seed: int):
    return jax.random.fold_in(jax.random.key(seed), _TRAIN_STREAM)


def sample_batch(config: TrainConfig, step: int) -> JaxBatch:
    """The JAX engine's training batch of ``step`` for ``config``, as numpy arrays (the same draw as in training).

    Parameters
    ----------
    config : TrainConfig
        Its data law (task, k, spectrum, P, batch size, dtype) and ``seed``.
    step : int
        The step (0-based); the key is ``fold_in(fold_in(key(seed), 1), step)``.

    Returns
    -------
    JaxBatch
        numpy arrays.

    References
    ----------
    Paper eqs. (1)-(6).

    Examples
    --------
    >>> cfg = TrainConfig(d=4, N=8, P=16, batch_size=3, a=1.0, b=1.0)
    >>> batch = sample_batch(cfg, 0)
    >>> batch.context_x.shape, bool(np.allclose(sample_batch(cfg, 0).target, batch.target))
    ((3, 16, 4), True)
    """
    _use_dtype(config.dtype)
    law = _Law.of(config)
    key = jax.random.fold_in(_train_key(config.seed), step)
    return JaxBatch(*(np.asarray(a) for a in _jitted_draw(law)(key)))


_DRAWS: dict = {}


def _jitted_draw(law: _Law):
    if law not in _DRAWS:
        _DRAWS[law] = jax.jit(lambda key: _draw(key, law))
    return _DRAWS[law]


# ----------------------------------------------------------------------------- model (eqs. 7-12, 59-60)
def _predict(params, context_x, context_y, test_x, norm: str):
    """``ŷ_L = (1/L) Σ_ℓ g p_ℓ·y`` (eqs. 9-10, 12, 59-60) and the softmax rows ``p_ℓ`` (B, L, P), in the d-space form."""
    W_x = params["W_x"]
    N = W_x.shape[0]
    A = W_x - W_x.mean(axis=0, keepdims=True) if norm == "layer" else W_x  # (I − 11ᵀ/N) W_x, or W_x (RMSNorm)
    gram = A.T @ A
    # pre-norm (eq. 9): ĥ = r A x with r = 1/sqrt(|A x|²/N + eps), |A x|² = xᵀ AᵀA x
    r_ctx = lax.rsqrt(jnp.einsum("bpi,ij,bpj->bp", context_x, gram, context_x) / N + LAYER_NORM_EPS)
    r_test = lax.rsqrt(jnp.einsum("bi,ij,bj->b", test_x, gram, test_x) / N + LAYER_NORM_EPS)
    z_ctx = context_x * r_ctx[..., None]
    z_test = test_x * r_test[:, None]
    D = jnp.einsum("lni,lnj->lij", params["W_q"] @ A, params["W_k"] @ A)  # D_ℓ = (W_q^ℓ A)ᵀ (W_k^ℓ A), (L, d, d)
    u = jnp.einsum("bi,lij->blj", z_test, D)  # D_ℓᵀ z_test, (B, L, d)
    logits = jnp.einsum("blj,bpj->blp", u, z_ctx)  # (Q^ℓ)ᵀ K^ℓ on the test row, (B, L, P)
    probs = jax.nn.softmax(logits, axis=-1)  # M(0): the test token reads the P context tokens (eq. 76)
    gain = (params["W_o"] @ params["W_v"] @ params["W_y"])[0, 0]  # g = W_o W_v W_y (eq. 60)
    reads = jnp.einsum("blp,bp->bl", probs, context_y)  # p_ℓ·y
    return gain * reads.mean(axis=1), probs


def _loss(params, batch: JaxBatch, norm: str):
    """Mean squared error of eq. (12)."""
    prediction, _ = _predict(params, batch.context_x, batch.context_y, batch.test_x, norm)
    residual = prediction - batch.target
    return jnp.mean(residual * residual)


def _norm_of(model: str) -> str:
    if model not in JAX_MODELS:
        raise ValueError(f"the JAX engine implements the models {', '.join(repr(m) for m in JAX_MODELS)}; got {model!r}")
    return get_model(model).NORM


def _as_jax(params: Mapping[str, np.ndarray]) -> dict:
    dtype = _use_dtype(np.dtype(np.asarray(params["W_x"]).dtype).name)
    return {name: jnp.asarray(value, dtype) for name, value in params.items()}


def _batch_arrays(batch, dtype) -> JaxBatch:
    return JaxBatch(*(jnp.asarray(np.asarray(getattr(batch, name)), dtype)
                      for name in ("context_x", "context_y", "test_x", "target")))


def forward(params: Mapping[str, np.ndarray], batch, model: str = "nonlinear") -> tuple[np.ndarray, np.ndarray]:
    """Predictions ``ŷ_L`` (B,) and softmax rows ``p_ℓ`` (B, L, P) of the JAX engine on a given batch.

    Parameters
    ----------
    params : dict
        The model's weights (numpy, float32 or float64; :func:`numerics.models.nonlinear.param_shapes`).
    batch : numerics.tasks.Batch or JaxBatch
    model : {'nonlinear', 'nonlinear_rms'}

    Returns
    -------
    prediction, attention : ndarray

    References
    ----------
    Paper eqs. (9)-(10), (12), (59)-(60), (76).

    Examples
    --------
    >>> from numerics.models import get_model
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(1)
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 3, rng)
    >>> params = get_model("nonlinear").init_params(4, 8, 2, rng, dtype=np.float32)
    >>> prediction, attention = forward(params, batch)
    >>> bool(np.allclose(prediction, get_model("nonlinear").forward(params, batch).prediction, atol=1e-5))
    True
    """
    norm = _norm_of(model)
    p = _as_jax(params)
    arrays = _batch_arrays(batch, p["W_x"].dtype)
    prediction, probs = _predict(p, arrays.context_x, arrays.context_y, arrays.test_x, norm)
    return np.asarray(prediction), np.asarray(probs)


def loss_and_grad(params: Mapping[str, np.ndarray], batch, model: str = "nonlinear") -> tuple[float, dict]:
    """Mean squared error (eq. 12) of the JAX engine on a given batch and its ``jax.grad``, keyed like ``params``.

    The counterpart of the numpy engine's hand-written ``loss_and_grad``
    (:func:`numerics.models.nonlinear.loss_and_grad`), for checking one against the other.

    Parameters
    ----------
    params : dict
        numpy weights, float32 or float64 (float64 switches on JAX's 64-bit mode).
    batch : numerics.tasks.Batch or JaxBatch
    model : {'nonlinear', 'nonlinear_rms'}

    Returns
    -------
    loss : float
    grads : dict of str to ndarray

    References
    ----------
    Paper eqs. (9)-(10), (12), (59)-(60).

    Examples
    --------
    >>> from numerics.models import get_model
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(2)
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 3, rng)
    >>> loss, grads = loss_and_grad(get_model("nonlinear").init_params(4, 8, 2, rng, dtype=np.float32), batch)
    >>> loss > 0, grads["W_q"].shape
    (True, (2, 8, 8))
    """
    norm = _norm_of(model)
    p = _as_jax(params)
    loss, grads = _jitted_value_and_grad(norm)(p, _batch_arrays(batch, p["W_x"].dtype))
    return float(loss), {name: np.asarray(g) for name, g in grads.items()}


_VALUE_AND_GRAD: dict = {}


def _jitted_value_and_grad(norm: str):
    if norm not in _VALUE_AND_GRAD:
        _VALUE_AND_GRAD[norm] = jax.jit(jax.value_and_grad(lambda p, b: _loss(p, b, norm)))
    return _VALUE_AND_GRAD[norm]


# ----------------------------------------------------------------------------- the step
def _candidate_step(params, m, v, batch, hyper, norm: str):
    """One candidate's Adam step on ``batch`` (as numerics.optim: frozen → clip → Adam), masked where not finite."""
    loss, grads = jax.value_and_grad(_loss)(params, batch, norm)
    finite = jnp.isfinite(loss)
    for g in grads.values():
        finite &= jnp.all(jnp.isfinite(g))
    grads = {name: jnp.where(hyper["frozen"][name], jnp.zeros_like(g), g) for name, g in grads.items()}
    norm2 = sum(jnp.sum(g * g) for g in grads.values())
    total = jnp.sqrt(norm2)
    clip = hyper["clip"]
    scale = jnp.where((total > clip) & jnp.isfinite(total), clip / total, jnp.ones_like(total))
    grads = {name: g * scale for name, g in grads.items()}
    beta1, beta2, eps = hyper["beta1"], hyper["beta2"], hyper["eps"]
    rest1, rest2 = hyper["one_minus_beta1"], hyper["one_minus_beta2"]  # 1 − β formed on the host, as numpy does
    new_m = {name: beta1 * m[name] + rest1 * g for name, g in grads.items()}
    new_v = {name: beta2 * v[name] + rest2 * (g * g) for name, g in grads.items()}
    new_params = {name: params[name] - hyper["lr_over_c1"] * new_m[name] / (jnp.sqrt(new_v[name] / hyper["c2"]) + eps)
                  for name in params}
    take = finite & hyper["active"]  # a finished or non-finite candidate keeps its weights and moments
    pick = lambda new, old: {name: jnp.where(take, new[name], old[name]) for name in old}  # noqa: E731
    return pick(new_params, params), pick(new_m, m), pick(new_v, v), loss, finite


_STEPS: dict = {}


def _jitted_step(law: _Law, norm: str):
    """``step(params, m, v, key, t, hyper) -> (params, m, v, losses (K,), finite (K,))``, built once per law and norm."""
    cache_key = (law, norm)
    if cache_key not in _STEPS:
        def step(params, m, v, key, t, hyper):
            batch = _draw(jax.random.fold_in(key, t), law)  # one batch for all K candidates
            return jax.vmap(lambda p, m_, v_, h: _candidate_step(p, m_, v_, batch, h, norm))(params, m, v, hyper)

        _STEPS[cache_key] = jax.jit(step, donate_argnums=(0, 1, 2))
    return _STEPS[cache_key]


class JaxTrainer:
    """``K`` candidates of one data law and shape, advanced together by one jitted, vmapped step on JAX's device.

    Parameters
    ----------
    configs : sequence of TrainConfig
        ``engine="jax"``; they must agree in :data:`GROUP_FIELDS` (one shape and one batch stream)
        and may differ in the optimiser (learning rate, schedule, warm-up, step cap, betas, eps,
        clipping), ``frozen`` and their starting weights.
    params : sequence of dict
        Each candidate's current weights (numpy, the config's dtype).
    adam_states : sequence of AdamState
        Each candidate's Adam moments and step count.

    Raises
    ------
    ValueError
        Without jax (naming the extra), a model the engine does not implement, configs that differ in a
        field of :data:`GROUP_FIELDS` (naming it), or sequences of different lengths.

    References
    ----------
    Paper eqs. (1)-(12), (59)-(60); Adam as :func:`numerics.optim.adam_update`.

    Examples
    --------
    >>> from numerics.models import get_model
    >>> from numerics.optim import adam_init
    >>> cfg = TrainConfig(engine="jax", d=4, N=8, P=16, batch_size=8, max_steps=3, warmup_steps=0)
    >>> p = get_model("nonlinear").init_params(4, 8, 1, np.random.default_rng(0), dtype=np.float32)
    >>> trainer = JaxTrainer([cfg], [p], [adam_init(p)])
    >>> for t in range(3):
    ...     trainer.step(t)
    >>> steps, losses, finite = trainer.pull_losses(0)
    >>> steps.tolist(), bool(finite.all()), trainer.adam_state(0).step
    ([0, 1, 2], True, 3)
    """

    def __init__(self, configs: Sequence[TrainConfig], params: Sequence[Mapping], adam_states: Sequence[AdamState]):
        _require_jax()
        configs = list(configs)
        if not configs or len(params) != len(configs) or len(adam_states) != len(configs):
            raise ValueError(f"configs, params and adam_states must be non-empty and of one length; got "
                             f"{len(configs)}, {len(params)}, {len(adam_states)}")
        first = configs[0]
        for i, config in enumerate(configs):
            if config.engine != "jax":
                raise ValueError(f"configs[{i}].engine must be 'jax' for the JAX engine; got {config.engine!r}")
            for name in GROUP_FIELDS:
                if getattr(config, name) != getattr(first, name):
                    raise ValueError(f"the JAX engine trains candidates of one shape and data law in one step: "
                                     f"configs[{i}].{name} = {getattr(config, name)!r} differs from configs[0].{name} = "
                                     f"{getattr(first, name)!r}")
        self.configs = configs
        self.K = len(configs)
        self.dtype = _use_dtype(first.dtype)
        self.norm = _norm_of(first.model)
        self.law = _Law.of(first)
        self._step = _jitted_step(self.law, self.norm)
        self._key = _train_key(first.seed)
        stack = lambda trees: {name: jnp.asarray(np.stack([np.asarray(t[name]) for t in trees]), self.dtype)  # noqa: E731
                               for name in trees[0]}
        self.params = stack(params)
        self.m = stack([s.m for s in adam_states])
        self.v = stack([s.v for s in adam_states])
        self.adam_steps = [int(s.step) for s in adam_states]
        names = list(params[0])
        self._static = {
            "beta1": jnp.asarray([c.beta1 for c in configs], self.dtype),
            "beta2": jnp.asarray([c.beta2 for c in configs], self.dtype),
            "one_minus_beta1": jnp.asarray([1.0 - c.beta1 for c in configs], self.dtype),
            "one_minus_beta2": jnp.asarray([1.0 - c.beta2 for c in configs], self.dtype),
            "eps": jnp.asarray([c.eps for c in configs], self.dtype),
            "clip": jnp.asarray([math.inf if c.grad_clip is None else c.grad_clip for c in configs], self.dtype),
            "frozen": {name: jnp.asarray([name in c.frozen for c in configs]) for name in names},
        }
        self._pending: list = []  # (step, losses (K,), finite (K,)) on the device, not yet read by every candidate
        self._base = 0  # the index of _pending[0] among all steps taken
        self._cursor = [0] * self.K  # per candidate, the index of its next unread entry

    def step(self, t: int, active: Sequence[bool] | None = None) -> None:
        """Take step ``t`` (the batch of key ``t``) for every ``active`` candidate (default: all); asynchronous.

        The step size of candidate ``i`` is ``schedule_value(...)`` of its config at its own Adam step count.
        """
        active = [True] * self.K if active is None else [bool(a) for a in active]
        lr_over_c1, c2 = [], []
        for i, config in enumerate(self.configs):
            count = self.adam_steps[i] + 1  # Adam's t after this step (numerics.optim.adam_update)
            rate = schedule_value(config.schedule, self.adam_steps[i], config.learning_rate, config.warmup_steps,
                                  config.max_steps)
            lr_over_c1.append(rate / (1.0 - config.beta1**count))
            c2.append(1.0 - config.beta2**count)
            if active[i]:
                self.adam_steps[i] = count
        hyper = dict(self._static, lr_over_c1=jnp.asarray(lr_over_c1, self.dtype), c2=jnp.asarray(c2, self.dtype),
                     active=jnp.asarray(active))
        self.params, self.m, self.v, losses, finite = self._step(self.params, self.m, self.v, self._key, t, hyper)
        self._pending.append((t, losses, finite))

    def pull_losses(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Steps, training losses and finiteness flags of candidate ``i`` since its last pull (waits for the device)."""
        start = self._cursor[i] - self._base
        entries = self._pending[start:]
        self._cursor[i] = self._base + len(self._pending)
        fetched = jax.device_get([(losses, finite) for _, losses, finite in entries])
        steps = np.asarray([t for t, _, _ in entries], dtype=np.int64)
        losses = np.asarray([float(np.asarray(l)[i]) for l, _ in fetched], dtype=np.float64)
        finite = np.asarray([bool(np.asarray(f)[i]) for _, f in fetched], dtype=bool)
        drop = min(self._cursor) - self._base  # entries every candidate has read
        if drop > 0:
            del self._pending[:drop]
            self._base += drop
        return steps, losses, finite

    def retire(self, i: int) -> None:
        """Candidate ``i`` reads no more losses (it has stopped): its unread entries may be dropped."""
        self._cursor[i] = self._base + len(self._pending)
        self.pull_losses(i)

    def weights(self, i: int) -> dict[str, np.ndarray]:
        """Candidate ``i``'s current weights as numpy arrays (waits for the device)."""
        return {name: np.array(value[i]) for name, value in self.params.items()}

    def adam_state(self, i: int) -> AdamState:
        """Candidate ``i``'s Adam moments (numpy) and step count, as :func:`numerics.optim.adam_update` keeps them."""
        return AdamState(m={name: np.array(value[i]) for name, value in self.m.items()},
                         v={name: np.array(value[i]) for name, value in self.v.items()}, step=self.adam_steps[i])

    def block(self) -> None:
        """Wait until the device has finished every step taken (for timing)."""
        jax.block_until_ready((self.params, self.m, self.v))
