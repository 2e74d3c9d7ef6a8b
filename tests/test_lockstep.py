"""Lockstep training: runs on one shared batch stream give, bitwise, what each gives alone (eq. 12)."""

import dataclasses

import numpy as np
import pytest

from numerics.lockstep import train_lockstep
from numerics.models import get_model
from numerics.train import TrainConfig, TrainingDiverged, train

BASE = TrainConfig(model="nonlinear", task="difficult", k=2, a=0.5, b=0.0, d=4, N=8, P=12, depth=2, batch_size=16,
                   max_steps=30, eval_every=10, eval_size=32, warmup_steps=5, seed=3, eval_seed=9)


def _same(a, b):
    assert a.metrics["steps"] == b.metrics["steps"] and a.metrics["converged"] == b.metrics["converged"]
    for name in a.params:
        np.testing.assert_array_equal(a.params[name], b.params[name])
    assert sorted(a.arrays) == sorted(b.arrays)
    for name in ("loss_curve", "train_loss", "layer_errors", "top1_mass_curve", "selection_error", "eval_prediction"):
        np.testing.assert_array_equal(a.arrays[name], b.arrays[name])
    for name in ("R_L", "A_L", "C_L", "R_L_se", "final_eval_loss", "content_hash"):
        assert a.metrics[name] == b.metrics[name] or (np.isnan(a.metrics[name]) and np.isnan(b.metrics[name]))


def test_lockstep_runs_equal_solo_runs_bitwise():
    warm = get_model("nonlinear").init_params(4, 8, 2, np.random.default_rng(1), qk_scale=2.0)
    configs = [
        BASE,
        dataclasses.replace(BASE, learning_rate=3e-4),
        dataclasses.replace(BASE, depth=4, max_steps=20, schedule="constant"),  # shorter cap: drops out first
        dataclasses.replace(BASE, start={"kind": "test", "qk_scale": 2.0}),
        dataclasses.replace(BASE, eval_seed=11, model="nonlinear_rms"),  # its own held-out set and model
    ]
    starts = [None, None, None, warm, None]
    together = train_lockstep(configs, initial_params=starts)
    for config, start, result in zip(configs, starts, together):
        _same(result, train(config, initial_params=start))
    assert together[2].metrics["steps"] == 20


def test_lockstep_rejects_runs_of_another_data_law():
    with pytest.raises(ValueError, match=r"configs\[1\]\.P"):
        train_lockstep([BASE, dataclasses.replace(BASE, P=16)])
    with pytest.raises(ValueError, match=r"configs\[1\]\.seed"):
        train_lockstep([BASE, dataclasses.replace(BASE, seed=4)])


def test_a_diverging_run_stops_alone():
    configs = [BASE, dataclasses.replace(BASE, learning_rate=1e6, schedule="constant", dtype="float32")]
    first, second = train_lockstep(configs)
    assert isinstance(second, TrainingDiverged)
    _same(first, train(BASE))


def test_warm_start_needs_its_description():
    warm = get_model("nonlinear").init_params(4, 8, 2, np.random.default_rng(1))
    with pytest.raises(ValueError, match="initial_params and config.start go together"):
        train(BASE, initial_params=warm)
    with pytest.raises(ValueError, match=r"initial_params\['W_q'\] must have shape"):
        train(dataclasses.replace(BASE, start={"kind": "test"}), initial_params={**warm, "W_q": warm["W_q"][:1]})


def test_start_enters_the_hash_only_when_given():
    assert "start" not in BASE.content_hash() and BASE.to_dict()["start"] is None
    warm = dataclasses.replace(BASE, start={"kind": "nested", "parent": "abc", "noise": 1e-3})
    assert warm.content_hash() != BASE.content_hash()
    assert TrainConfig.from_dict(warm.to_dict()) == warm
    with pytest.raises(ValueError, match="start"):
        dataclasses.replace(BASE, start={"kind": {"nested": 1}})


def test_on_done_hears_each_run_once_as_it_stops_shortest_cap_first():
    configs = [BASE, dataclasses.replace(BASE, max_steps=10), dataclasses.replace(BASE, max_steps=20)]
    heard = []
    results = train_lockstep(configs, on_done=lambda i, result: heard.append((i, result)))
    assert [i for i, _ in heard] == [1, 2, 0]
    assert all(result is results[i] for i, result in heard)
