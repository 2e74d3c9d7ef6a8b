"""The paper's in-context regression data: random-rotation spectra and the two tasks (eqs. (1)-(6)).

Per context (one row of a batch):

1. a Haar-random rotation ``O`` (eq. 3), ``Σ = O diag(λ) Oᵀ``, ``Ω = O diag(ω) Oᵀ``;
2. a teacher ``β ~ N(0, Ω)`` and inputs ``x_1..x_P, x_test ~ iid N(0, Σ)`` (eq. 4),
   labels ``y_i = βᵀx_i`` without noise (eq. 1);
3. the target (eqs. 5-6):

   * ``"easy"`` -- exact match: ``x_test`` is a copy of a uniformly chosen context
     input ``x_j`` and ``y* = y_j``;
   * ``"difficult"`` -- top-k aggregation: ``x_test`` is a fresh draw and
     ``y* = (1/k) Σ_{i∈S_k} y_i`` over the ``k`` context inputs of largest cosine
     similarity to ``x_test``.

The law itself (Haar rotations, eigenbasis draws, labels, cosine similarity, top-k)
is written once in :mod:`theory.data_law`; :func:`haar_rotations`,
:func:`cosine_similarity` and :func:`top_k_indices` are re-exported from there.

Speed (the sampler runs once per training step):

* ``O`` is drawn for all contexts at once by a batched QR of Gaussian matrices with
  the sign fix that makes it exactly Haar (:func:`theory.data_law.haar_rotations`).
* When both spectra are flat (``spectrum.is_isotropic``) ``Σ`` and ``Ω`` are multiples
  of the identity, the law of ``(β, x)`` is rotation invariant and ``O`` has no effect
  on the distribution of anything; then no rotation is drawn and ``rotation`` is the
  identity (a read-only broadcast, no memory per context).
* Draws happen in the eigenbasis (``x = O (√λ ⊙ z)``, ``β = O (√ω ⊙ w)``) in the
  requested dtype; labels and similarities are then computed from the returned
  ``x`` and ``β`` so that ``y_i = βᵀx_i`` and the top-k choice hold for the returned
  arrays to round-off.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theory.data_law import (
    check_stream,
    cosine_similarity,
    eigenbasis_normal,
    haar_rotations,
    rotate,
    standard_normal,
    teacher_labels,
    top_k_indices,
    top_k_mask,
    top_k_mean,
)
from theory.spectra import as_spectrum
from theory.validation import check_choice, check_dtype, check_generator, check_positive_int

__all__ = ["TASKS", "Batch", "sample", "haar_rotations", "cosine_similarity", "top_k_indices"]

#: the two tasks of the paper: exact match (eq. 5) and top-k aggregation (eq. 6)
TASKS = ("easy", "difficult")


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class Batch:
    """A batch of in-context regression problems (read-only arrays).

    Attributes
    ----------
    context_x : ndarray, shape (B, P, d)
        Context inputs ``x_1..x_P`` (eq. 4).
    context_y : ndarray, shape (B, P)
        Labels ``y_i = βᵀx_i`` (eq. 1).
    test_x : ndarray, shape (B, d)
        Query ``x_test``.
    target : ndarray, shape (B,)
        ``y*`` (eq. 5 or 6).
    rotation : ndarray, shape (B, d, d)
        The rotation ``O`` of each context (eq. 3); the identity when the spectra are flat.
    teacher : ndarray, shape (B, d)
        ``β`` of each context.
    task : str
        ``"easy"`` or ``"difficult"``.
    k : int
        ``k`` of the top-k target (stored also for the easy task, where it is unused).

    References
    ----------
    Paper eqs. (1)-(6).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> b = sample("easy", PowerLawSpectrum(1.0, 1.0, 3), 5, 2, np.random.default_rng(0))
    >>> b.batch_size, b.P, b.d
    (2, 5, 3)
    """

    context_x: np.ndarray
    context_y: np.ndarray
    test_x: np.ndarray
    target: np.ndarray
    rotation: np.ndarray
    teacher: np.ndarray
    task: str
    k: int

    @property
    def batch_size(self) -> int:
        """Number of contexts ``B``."""
        return int(self.context_x.shape[0])

    @property
    def P(self) -> int:
        """Context length ``P``."""
        return int(self.context_x.shape[1])

    @property
    def d(self) -> int:
        """Input dimension ``d``."""
        return int(self.context_x.shape[2])

    def slice(self, start: int, stop: int) -> "Batch":
        """The contexts ``start .. stop−1`` as a batch of their own (views, no copies).

        Every per-context array is sliced along its first axis; ``task`` and ``k`` are
        kept. A slice covering the whole batch is the batch itself. Used to run a model
        on a large batch in chunks of contexts.

        Parameters
        ----------
        start, stop : int
            As in ``array[start:stop]``; ``stop`` may exceed the batch size.

        Returns
        -------
        Batch

        References
        ----------
        Paper eqs. (1)-(6) (each context is an independent draw, so any subset is a batch).

        Examples
        --------
        >>> from theory import PowerLawSpectrum
        >>> b = sample("difficult", PowerLawSpectrum(1.0, 1.0, 3), 5, 4, np.random.default_rng(0))
        >>> part = b.slice(1, 3)
        >>> part.batch_size, part.rotation.shape, bool(np.all(part.target == b.target[1:3]))
        (2, (2, 3, 3), True)
        >>> b.slice(0, 10) is b
        True
        """
        from dataclasses import fields, replace

        if start == 0 and stop >= self.target.shape[0]:
            return self
        arrays = {f.name: getattr(self, f.name) for f in fields(self)}
        return replace(self, **{name: a[start:stop] for name, a in arrays.items() if isinstance(a, np.ndarray) and a.ndim >= 1})


def sample(
    task: str, spectrum, P: int, batch_size: int, rng: np.random.Generator, k: int = 2, dtype=np.float64, *, stream: int = 1
) -> Batch:
    """Draw a batch of contexts of the easy (eq. 5) or difficult (eq. 6) task.

    Parameters
    ----------
    task : {'easy', 'difficult'}
    spectrum : theory.Spectrum or theory.PowerLawSpectrum
        Input eigenvalues ``λ`` and teacher eigenvalues ``ω`` (eq. 2); ``d = spectrum.d``.
    P : int
        Context length, ``P >= 1``.
    batch_size : int
        Number of contexts ``B >= 1``.
    rng : numpy.random.Generator
    k : int, default 2
        Top-k of the difficult task, ``1 <= k <= P``; unused by the easy task (there
        only ``k >= 1`` is checked).
    dtype : {numpy.float64, numpy.float32}
    stream : {1, 2, 3}, default 1
        Which draws realise the law (:data:`theory.data_law.STREAMS`); all give batches of the
        same law, a given generator state gives different batches. 1: the original sampler,
        bit-for-bit. 2: cheaper -- rotations by a batched Householder QR with the sign fix
        (:func:`theory.data_law.householder_haar`), float32 Box–Muller in place, and
        ``√λ`` folded into the rotation (``x = z (O diag √λ)ᵀ``, one pass over the inputs).
        3: stream 2 with the Box–Muller logarithm in float32 (:func:`theory.data_law.standard_normal`),
        the context inputs, teacher and test input from one Gaussian draw, and the top-k mean
        read from the mask of ``S_k`` (:func:`theory.data_law.top_k_mask`); in float64, where every
        stream draws numpy's ziggurat, it draws stream 2's numbers. Same draw order and
        the same generator (PCG64 from ``numpy.random.default_rng``) in every stream.

    Returns
    -------
    Batch

    Raises
    ------
    ValueError
        Unknown ``task`` or ``stream``; ``P``, ``batch_size`` or ``k`` < 1; ``k > P`` (difficult task).
    TypeError
        ``spectrum`` not a spectrum, ``rng`` not a Generator, non-integer sizes.

    References
    ----------
    Paper eqs. (1)-(6).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(0)
    >>> b = sample("difficult", PowerLawSpectrum(1.0, 0.5, 4), P=8, batch_size=3, rng=rng, k=2)
    >>> b.context_x.shape, b.target.shape
    ((3, 8, 4), (3,))
    >>> np.allclose(b.context_y, np.einsum("bpd,bd->bp", b.context_x, b.teacher))
    True
    >>> easy = sample("easy", PowerLawSpectrum(0, 0, 4), P=8, batch_size=3, rng=rng)
    >>> bool(np.all(easy.rotation == np.eye(4)))  # flat spectra: no rotation drawn
    True
    >>> b2 = sample("difficult", PowerLawSpectrum(1.0, 0.5, 4), 8, 3, rng, k=2, stream=2)
    >>> np.allclose(b2.context_y, np.einsum("bpd,bd->bp", b2.context_x, b2.teacher))
    True
    """
    task = check_choice("task", task, TASKS)
    spectrum = as_spectrum(spectrum)
    P = check_positive_int("P", P)
    batch_size = check_positive_int("batch_size", batch_size)
    k = check_positive_int("k", k)
    if task == "difficult" and k > P:
        raise ValueError(f"k must be an integer in [1, P] = [1, {P}] for the difficult task; got k={k} > P={P}")
    rng = check_generator(rng)
    dtype = check_dtype(dtype)
    stream = check_stream(stream)
    d = spectrum.d
    if stream == 2:
        return _sample_stream_2(task, spectrum, P, batch_size, rng, k, dtype)
    if stream == 3:
        return _sample_stream_3(task, spectrum, P, batch_size, rng, k, dtype)

    if spectrum.is_isotropic:
        rotation = np.broadcast_to(np.eye(d, dtype=dtype), (batch_size, d, d))  # read-only view
    else:
        rotation = haar_rotations(d, batch_size, rng, dtype)
    # draw order: rotations, context inputs, teacher, then the test input (difficult) or index (easy)
    context_x = eigenbasis_normal(rng, (batch_size, P, d), spectrum.eigenvalues, dtype)  # √λ ⊙ z
    teacher = eigenbasis_normal(rng, (batch_size, d), spectrum.teacher_eigenvalues, dtype)
    if not spectrum.is_isotropic:
        context_x = rotate(rotation, context_x)  # x = O (√λ ⊙ z), eq. (4)
        teacher = rotate(rotation, teacher)  # β = O (√ω ⊙ w)
    context_y = teacher_labels(context_x, teacher)  # y = βᵀx, eq. (1)

    if task == "easy":  # eq. (5): exact match
        test_x, target = _exact_match(rng, context_x, context_y)
    else:  # eq. (6): mean label of the top-k by cosine similarity
        test_x = eigenbasis_normal(rng, (batch_size, d), spectrum.eigenvalues, dtype)
        if not spectrum.is_isotropic:
            test_x = rotate(rotation, test_x)
        target = top_k_mean(context_y, top_k_indices(context_x, test_x, k))
    return _batch(context_x, context_y, test_x, target, rotation, teacher, task, k, dtype)


def _sample_stream_2(task: str, spectrum, P: int, batch_size: int, rng: np.random.Generator, k: int, dtype) -> Batch:
    """Stream 2 of :func:`sample` (arguments checked there): the same law and draw order, fewer passes."""
    d = spectrum.d
    # draw order: rotations, context inputs, teacher, then the test input (difficult) or index (easy)
    if spectrum.is_isotropic:
        rotation = np.broadcast_to(np.eye(d, dtype=dtype), (batch_size, d, d))  # read-only view
        context_x = _eigenbasis_normal_2(rng, (batch_size, P, d), spectrum.eigenvalues, dtype)
        teacher = _eigenbasis_normal_2(rng, (batch_size, d), spectrum.teacher_eigenvalues, dtype)
    else:
        rotation = haar_rotations(d, batch_size, rng, dtype, stream=2)
        root_lambda = np.sqrt(np.asarray(spectrum.eigenvalues, dtype=np.float64)).astype(dtype)
        root_omega = np.sqrt(np.asarray(spectrum.teacher_eigenvalues, dtype=np.float64)).astype(dtype)
        # x = O (√λ ⊙ z) = z (O diag √λ)ᵀ, eq. (4): the scaling rides on the rotation, one pass over z
        input_map_t = np.ascontiguousarray(np.swapaxes(rotation * root_lambda, 1, 2))
        context_x = standard_normal(rng, (batch_size, P, d), dtype, stream=2) @ input_map_t
        teacher = standard_normal(rng, (batch_size, 1, d), dtype, stream=2)
        teacher = (teacher @ np.swapaxes(rotation * root_omega, 1, 2))[:, 0]  # β = O (√ω ⊙ w)
    context_y = teacher_labels(context_x, teacher)  # y = βᵀx, eq. (1)

    if task == "easy":  # eq. (5): exact match
        test_x, target = _exact_match(rng, context_x, context_y)
    else:  # eq. (6): mean label of the top-k by cosine similarity
        if spectrum.is_isotropic:
            test_x = _eigenbasis_normal_2(rng, (batch_size, d), spectrum.eigenvalues, dtype)
        else:
            test_x = (standard_normal(rng, (batch_size, 1, d), dtype, stream=2) @ input_map_t)[:, 0]
        target = top_k_mean(context_y, top_k_indices(context_x, test_x, k))
    return _batch(context_x, context_y, test_x, target, rotation, teacher, task, k, dtype)


def _eigenbasis_normal_2(rng: np.random.Generator, shape: tuple, variances, dtype) -> np.ndarray:
    """:func:`theory.data_law.eigenbasis_normal` with the stream-2 Gaussian draws."""
    draws = standard_normal(rng, shape, dtype, stream=2)
    scale = np.sqrt(np.asarray(variances, dtype=np.float64))
    if not np.all(scale == 1.0):
        draws *= scale.astype(dtype)
    return draws


def _sample_stream_3(task: str, spectrum, P: int, batch_size: int, rng: np.random.Generator, k: int, dtype) -> Batch:
    """Stream 3 of :func:`sample` (arguments checked there): stream 2 with one Gaussian draw per batch."""
    d = spectrum.d
    isotropic = spectrum.is_isotropic
    if isotropic:
        rotation = np.broadcast_to(np.eye(d, dtype=dtype), (batch_size, d, d))  # read-only view
    else:
        rotation = haar_rotations(d, batch_size, rng, dtype, stream=3)
    # draw order: rotations, then in one draw the context inputs, the teacher and (difficult) the test input
    n_x, n_vec = batch_size * P * d, batch_size * d
    z = standard_normal(rng, (n_x + n_vec * (2 if task == "difficult" else 1),), dtype, stream=3)
    context_x = z[:n_x].reshape(batch_size, P, d)
    teacher = z[n_x : n_x + n_vec].reshape(batch_size, d)
    test_z = z[n_x + n_vec :].reshape(-1, d)  # empty for the easy task
    root_lambda = np.sqrt(np.asarray(spectrum.eigenvalues, dtype=np.float64)).astype(dtype)
    root_omega = np.sqrt(np.asarray(spectrum.teacher_eigenvalues, dtype=np.float64)).astype(dtype)
    if isotropic:  # Σ, Ω multiples of I: the rotation changes no law (module docstring)
        if root_lambda[0] != 1:
            context_x *= root_lambda[0]
            test_z *= root_lambda[0]
        if root_omega[0] != 1:
            teacher *= root_omega[0]
        test_x = test_z
    else:  # x = O (√λ ⊙ z) = z (O diag √λ)ᵀ, eq. (4); β = O (√ω ⊙ w)
        input_map_t = np.ascontiguousarray(np.swapaxes(rotation * root_lambda, 1, 2))
        context_x = context_x @ input_map_t
        teacher = (teacher[:, None, :] @ np.swapaxes(rotation * root_omega, 1, 2))[:, 0]
        test_x = (test_z[:, None, :] @ input_map_t)[:, 0] if test_z.size else test_z
    context_y = teacher_labels(context_x, teacher)  # y = βᵀx, eq. (1)

    if task == "easy":  # eq. (5): exact match
        test_x, target = _exact_match(rng, context_x, context_y)
    else:  # eq. (6): mean label of the top-k by cosine similarity
        chosen = top_k_mask(cosine_similarity(context_x, test_x), k)  # the S_k of top_k_indices
        target = np.einsum("bp,bp->b", context_y, chosen.astype(dtype)) / dtype(k)
    return _batch(context_x, context_y, test_x, target, rotation, teacher, task, k, dtype)


def _exact_match(rng: np.random.Generator, context_x: np.ndarray, context_y: np.ndarray) -> tuple:
    """The easy task's query and target (eq. 5): a copy of a uniformly chosen context input and its label."""
    batch_size, P = context_y.shape
    rows = np.arange(batch_size)
    j = rng.integers(P, size=batch_size)
    return context_x[rows, j], context_y[rows, j]  # fancy indexing copies


def _batch(context_x, context_y, test_x, target, rotation, teacher, task: str, k: int, dtype) -> Batch:
    """A :class:`Batch` of read-only arrays (a broadcast identity rotation is read-only already)."""
    return Batch(
        context_x=_readonly(context_x),
        context_y=_readonly(context_y),
        test_x=_readonly(np.ascontiguousarray(test_x)),
        target=_readonly(np.asarray(target, dtype=dtype)),
        rotation=rotation if not rotation.flags.writeable else _readonly(rotation),
        teacher=_readonly(np.ascontiguousarray(teacher)),
        task=task,
        k=k,
    )
