"""The sweep runner is the plain training result: the figure diagnostics come from ``train`` itself.

Checked bitwise against an independent re-computation written out here (a forward pass per block
of 512 held-out contexts after training, the top-1 mass of the first 256 contexts at every
evaluation), so the store's stored arrays keep their bytes whoever computes them.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import numerics.train as train_mod
from numerics.diagnostics import fit_rho, selection_error, selection_quantiles
from numerics.experiments.runner import run
from numerics.lockstep import train_lockstep
from numerics.models import MODELS, get_model
from numerics.tasks import top_k_indices
from numerics.train import TrainConfig, evaluation_batch, train

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bitwise_results import bitwise_equal as _bitwise_equal, differences, plain  # noqa: E402  (one comparison rule)

SMALL = dict(task="difficult", k=2, d=3, N=6, P=10, depth=2, batch_size=8, max_steps=8, eval_every=4,
             eval_size=40, warmup_steps=2, seed=1)


def _assert_same_result(a, b) -> None:
    assert not differences(plain(a), plain(b))  # every metric but the times, every array and weight


def _recomputed(config: TrainConfig, params, block: int = 512) -> tuple[dict, dict]:
    """The per-context diagnostics from a forward pass per block of held-out contexts, written out."""
    model, batch = get_model(config.model), evaluation_batch(config)
    outs, parts = [], []
    for start in range(0, config.eval_size, block):
        parts.append(batch.slice(start, start + block))
        outs.append(model.forward(params, parts[-1]))
    arrays = {"eval_prediction": np.concatenate([np.asarray(o.prediction, dtype=np.float64) for o in outs])}
    metrics = {}
    if model.ATTENTION == "softmax":
        k = 1 if config.task == "easy" else config.k
        errors = np.concatenate([selection_error(o.attention, top_k_indices(p.context_x, p.test_x, k))
                                 for o, p in zip(outs, parts)])
        arrays["selection_error"] = errors
        levels = (0.5, 0.9, 0.95, 0.99)
        metrics.update({f"selection_Q({q:g})": float(v) for q, v in zip(levels, selection_quantiles(errors, levels))})
        if outs[0].context_attention is not None:
            A = np.asarray(outs[0].context_attention, dtype=np.float64)
            arrays["A1_example"], metrics["rho"] = A[0], fit_rho(A)
            metrics["m"] = float(np.asarray(params["m"]).reshape(-1)[0])
    return metrics, arrays


@pytest.mark.parametrize("model", sorted(MODELS))
def test_the_sweep_runner_returns_the_plain_training_result_bitwise(model):
    config = TrainConfig(model=model, **SMALL)
    _assert_same_result(run(config), train(config))


@pytest.mark.parametrize("model", sorted(MODELS))
def test_the_per_context_diagnostics_equal_a_forward_pass_per_block_after_training(model):
    config = TrainConfig(model=model, **SMALL)
    result = train(config)
    metrics, arrays = _recomputed(config, result.params)
    for key, value in arrays.items():
        assert _bitwise_equal(result.arrays[key], value), key
    for key, value in metrics.items():
        assert _bitwise_equal(result.metrics[key], value), key
    softmax_keys = {"selection_error", "top1_mass_curve"} & set(result.arrays)
    assert softmax_keys == (set() if model == "linear" else {"selection_error", "top1_mass_curve"})
    assert ("A1_example" in result.arrays) == ("rho" in result.metrics) == (get_model(model).MASK == "M(m)")


@pytest.mark.parametrize("model", ["linear", "context_updates"])
def test_an_evaluation_in_chunks_other_than_the_blocks_keeps_the_per_context_values_of_the_blocks(model, monkeypatch):
    """A forward pass is equal across chunkings only to round-off: the per-context results keep the blocks'."""
    config = TrainConfig(model=model, **{**SMALL, "eval_size": 600})
    monkeypatch.setattr(train_mod, "chunk_size", lambda model, params, batch: 7)
    result = train(config)
    metrics, arrays = _recomputed(config, result.params)
    assert set(arrays) <= set(result.arrays)
    for key, value in arrays.items():
        assert _bitwise_equal(result.arrays[key], value), key
    for key, value in metrics.items():
        assert _bitwise_equal(result.metrics[key], value), key


def test_the_trainer_records_the_top1_mass_of_the_first_probe_contexts_at_every_evaluation():
    config = TrainConfig(model="nonlinear", **{**SMALL, "eval_size": 300})
    model, probe = get_model("nonlinear"), evaluation_batch(config).slice(0, train_mod.PROBE_CONTEXTS)
    seen = []

    def record(progress):
        attention = np.asarray(model.forward(progress.params, probe).attention, dtype=np.float64)
        seen.append((float(progress.step), float(np.mean(np.max(attention, axis=2)))))

    curve = train(config, callback=record).arrays["top1_mass_curve"]
    assert curve.shape == (3, 2) and curve.dtype == np.float64  # steps 0, 4, 8
    assert _bitwise_equal(curve, np.asarray(seen, dtype=np.float64))
    assert np.all((curve[:, 1] > 0) & (curve[:, 1] <= 1))


def test_lockstep_results_carry_the_same_diagnostics_as_solo_runs():
    configs = [TrainConfig(model=m, **SMALL) for m in ("nonlinear", "context_updates", "linear")]
    for config, together in zip(configs, train_lockstep(configs)):
        _assert_same_result(together, train(config))


def test_cpu_time_counts_the_final_diagnostics(monkeypatch):
    """``cpu_time`` is the whole call's: a slow final evaluation shows in it."""
    import time

    from numerics import diagnostics

    real = diagnostics.diagnose_batch

    def slow(*args, **kwargs):
        started = time.process_time()
        while time.process_time() - started < 0.2:
            pass
        return real(*args, **kwargs)

    monkeypatch.setattr(train_mod, "diagnose_batch", slow)
    result = train(TrainConfig(model="linear", **SMALL))
    assert result.metrics["cpu_time"] >= 0.2 and not math.isnan(result.metrics["R_L"])
