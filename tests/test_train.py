"""Claims about training (numerics/train.py): configs, optimiser, schedule, convergence rule,
determinism, checkpoints, divergence handling, and that the models actually learn (paper eq. 12)."""

from __future__ import annotations

import dataclasses
import json
import math
import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import numerics.train as train_mod
from numerics.train import (
    AdamState,
    TrainConfig,
    TrainingDiverged,
    TrainResult,
    adam_init,
    adam_update,
    clip_by_global_norm,
    evaluation_batch,
    has_converged,
    learning_rate_at,
    save_checkpoint,
    train,
)
from tolerances import ROUNDOFF, rtol

# a run that takes a fraction of a second
TINY = dict(model="nonlinear", task="difficult", d=3, N=4, P=8, depth=2, batch_size=8, max_steps=12,
            eval_every=4, eval_size=16, warmup_steps=2)


def tiny(**changes) -> TrainConfig:
    return TrainConfig(**{**TINY, **changes})


# --------------------------------------------------------------------------- config


@given(
    model=st.sampled_from(["linear", "nonlinear", "single_stream", "untied_values", "context_updates"]),
    task=st.sampled_from(["easy", "difficult"]),
    depth=st.integers(1, 64),
    seed=st.integers(0, 2**32),
    a=st.floats(0, 3),
    lr=st.floats(1e-6, 1.0),
    clip=st.none() | st.floats(0.1, 10),
    dtype=st.sampled_from(["float32", "float64"]),
)
def test_config_survives_a_json_round_trip(model, task, depth, seed, a, lr, clip, dtype):
    cfg = TrainConfig(model=model, task=task, depth=depth, seed=seed, a=a, learning_rate=lr, grad_clip=clip,
                      dtype=dtype, init={"qk_scale": 2.0})
    back = TrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert back == cfg
    assert back.content_hash() == cfg.content_hash()


def test_config_spells_out_every_init_option_and_the_family_defaults():
    from numerics.models import get_model

    cfg = TrainConfig(model="linear", N=16, d=8, c_lambda=2.0)
    assert cfg.learning_rate == get_model("linear").TRAIN_DEFAULTS["learning_rate"]
    assert set(cfg.to_dict()["init"]) == set(get_model("linear").INIT_DEFAULTS)
    assert cfg.init_options["qk_scale"] == 16 / 2.0  # B_ℓ ≈ I/λ_1 at initialisation
    merged = TrainConfig(model="nonlinear", init={"qk_noise": 0.0}).init_options
    assert merged["qk_noise"] == 0.0
    assert {k: v for k, v in merged.items() if k != "qk_noise"} == {
        k: v for k, v in TrainConfig(model="nonlinear").init_options.items() if k != "qk_noise"
    }
    # an integer for a float option is the same run
    assert TrainConfig(init={"qk_scale": 2}).content_hash() == TrainConfig(init={"qk_scale": 2.0}).content_hash()


@pytest.mark.parametrize(
    "bad, word",
    [
        ({"depht": 3}, "depht"),
        ({"depth": 2.5}, "depth"),
        ({"depth": "3"}, "depth"),
        ({"seed": True}, "seed"),
        ({"a": "zero"}, "a"),
        ({"a": -1.0}, "a"),
        ({"model": "transformer"}, "model"),
        ({"task": "medium"}, "task"),
        ({"dtype": "float16"}, "dtype"),
        ({"schedule": "step"}, "schedule"),
        ({"k": 9, "P": 8}, "k"),
        ({"N": 2, "d": 3}, "N"),
        ({"beta2": 1.0}, "beta2"),
        ({"grad_clip": 0.0}, "grad_clip"),
        ({"init": {"qk_sclae": 1.0}}, "qk_sclae"),
        ({"init": {"qk_scale": [1.0]}}, "qk_scale"),
        ({"init": 3}, "init"),
    ],
)
def test_from_dict_rejects_unknown_keys_and_wrong_types_naming_them(bad, word):
    with pytest.raises(ValueError, match=word):
        TrainConfig.from_dict({**TINY, **bad})


def test_content_hash_is_stable_and_sensitive_to_every_field(monkeypatch):
    cfg = tiny()
    digest = cfg.content_hash()
    assert digest == TrainConfig.from_dict(cfg.to_dict()).content_hash()
    changed = dict(model="linear", task="easy", k=1, a=0.5, b=0.5, d=2, N=5, P=9, depth=3, seed=1, batch_size=9,
                   max_steps=13, learning_rate=0.5, schedule="constant", warmup_steps=3, beta1=0.8, beta2=0.99,
                   eps=1e-7, grad_clip=1.0, init={"qk_scale": 3.0}, eval_size=17, eval_every=5, eval_seed=1,
                   tol=0.1, window=7, dtype="float64", c_lambda=2.0, c_omega=2.0, frozen=("W_o",),
                   start={"kind": "given"}, stream=2, engine="jax")
    monkeypatch.setattr("numerics.engines.jax_available", lambda: True)  # engine="jax" hashes without jax installed
    assert set(changed) == {f.name for f in dataclasses.fields(TrainConfig)}
    for name, value in changed.items():
        assert dataclasses.replace(cfg, **{name: value}).content_hash() != digest, name
    import theory

    monkeypatch.setattr(theory, "__version__", theory.__version__ + ".post1")
    assert cfg.content_hash() != digest


def test_stream_1_keeps_the_content_hash_of_configs_without_the_field():
    """Stores and the shipped table were hashed before ``stream`` existed: at 1 it is left out of the hash."""
    import hashlib
    import json

    import theory

    cfg = tiny()
    assert cfg.stream == 1 and TrainConfig.from_dict({k: v for k, v in cfg.to_dict().items() if k != "stream"}) == cfg
    before = {k: v for k, v in cfg.to_dict().items() if k not in ("stream", "start", "engine")}
    payload = json.dumps({"config": before, "package_version": theory.__version__}, sort_keys=True,
                         separators=(",", ":"), allow_nan=False)
    assert cfg.content_hash() == hashlib.sha256(payload.encode("utf-8")).hexdigest()
    stream_2 = dataclasses.replace(cfg, stream=2)
    assert stream_2.content_hash() != cfg.content_hash()
    assert TrainConfig.from_dict(stream_2.to_dict()) == stream_2 and stream_2.to_dict()["stream"] == 2


def test_unknown_stream_raises_value_error_naming_it():
    with pytest.raises(ValueError, match="stream"):
        TrainConfig(**TINY, stream=4)


def test_trainer_draws_batches_and_held_out_set_from_the_configured_stream():
    from numerics.tasks import sample
    from numerics.train import evaluation_batch, random_streams

    cfg = dataclasses.replace(tiny(), stream=2)
    held_out = evaluation_batch(cfg)
    again = sample(cfg.task, cfg.spectrum(), cfg.P, cfg.eval_size, random_streams(cfg)[2], k=cfg.k,
                   dtype=cfg.numpy_dtype, stream=2)
    assert np.array_equal(held_out.context_x, again.context_x)
    assert not np.array_equal(held_out.context_x, evaluation_batch(tiny()).context_x)
    losses, losses_1 = train(cfg).arrays["train_loss"], train(tiny()).arrays["train_loss"]
    assert np.all(np.isfinite(losses)) and not np.array_equal(losses, losses_1)  # training batches from stream 2


# --------------------------------------------------------------------------- optimiser


def _adam_by_hand(theta, grads, lr, b1, b2, eps):
    """Element-wise scalar transcription of Kingma & Ba, Algorithm 1."""
    theta = [float(t) for t in theta]
    m = [0.0] * len(theta)
    v = [0.0] * len(theta)
    for t, g in enumerate(grads, start=1):
        for i in range(len(theta)):
            m[i] = b1 * m[i] + (1 - b1) * g[i]
            v[i] = b2 * v[i] + (1 - b2) * g[i] ** 2
            m_hat = m[i] / (1 - b1**t)
            v_hat = v[i] / (1 - b2**t)
            theta[i] -= lr * m_hat / (math.sqrt(v_hat) + eps)
    return np.array(theta)


@given(st.integers(0, 2**31), st.floats(1e-4, 1.0), st.floats(0.0, 0.99), st.floats(0.5, 0.9999))
def test_adam_equals_the_algorithm_written_out_elementwise(seed, lr, b1, b2):
    rng = np.random.default_rng(seed)
    theta0 = rng.standard_normal(4)
    grads = [rng.standard_normal(4) for _ in range(5)]
    params, state = {"w": theta0.copy()}, adam_init({"w": theta0})
    for g in grads:
        params, state = adam_update(params, {"w": g}, state, lr, b1, b2, 1e-8)
    assert state.step == 5
    np.testing.assert_allclose(params["w"], _adam_by_hand(theta0, grads, lr, b1, b2, 1e-8), rtol=rtol(ROUNDOFF), atol=1e-12)


def test_adam_keeps_dtype_and_refuses_a_gradient_of_the_wrong_shape():
    params = {"w": np.ones(3, dtype=np.float32), "m": np.array(0.5, dtype=np.float32)}
    new, _ = adam_update(params, {"w": np.ones(3, np.float32), "m": np.array(1.0, np.float32)}, adam_init(params), 0.1)
    assert new["w"].dtype == np.float32 and new["m"].shape == ()
    with pytest.raises(ValueError, match=r"grads\['m'\]"):
        adam_update(params, {"w": np.ones(3, np.float32), "m": np.ones(1, np.float32)}, adam_init(params), 0.1)


def test_global_norm_clipping_caps_the_norm_and_keeps_the_direction():
    g = {"a": np.array([3.0, 0.0]), "b": np.array([[4.0]])}
    clipped, norm = clip_by_global_norm(g, 2.5)
    assert norm == pytest.approx(5.0, rel=rtol(ROUNDOFF))
    total = math.sqrt(sum(float(np.sum(v**2)) for v in clipped.values()))
    assert total == pytest.approx(2.5, rel=rtol(ROUNDOFF))
    np.testing.assert_allclose(clipped["a"] / clipped["b"].ravel()[0], g["a"] / 4.0, rtol=rtol(ROUNDOFF))
    unchanged, _ = clip_by_global_norm(g, 10.0)
    assert np.array_equal(unchanged["a"], g["a"])


def test_warmup_is_linear_and_cosine_decays_to_zero_at_the_cap():
    cfg = tiny(learning_rate=0.2, warmup_steps=10, max_steps=50, schedule="warmup_cosine")
    warm = [learning_rate_at(t, cfg) for t in range(10)]
    np.testing.assert_allclose(warm, 0.2 * np.arange(1, 11) / 10, rtol=rtol(ROUNDOFF))
    assert learning_rate_at(10, cfg) == pytest.approx(0.2, rel=rtol(ROUNDOFF))
    assert learning_rate_at(30, cfg) == pytest.approx(0.1, rel=rtol(ROUNDOFF))
    assert learning_rate_at(50, cfg) == pytest.approx(0.0, abs=1e-15)
    decay = [learning_rate_at(t, cfg) for t in range(10, 51)]
    assert all(x >= y for x, y in zip(decay, decay[1:]))
    assert learning_rate_at(40, dataclasses.replace(cfg, schedule="warmup_constant")) == 0.2
    assert learning_rate_at(0, dataclasses.replace(cfg, schedule="constant")) == 0.2


def test_convergence_needs_a_full_window_without_relative_improvement():
    steps = np.arange(0, 1200, 100)
    plateau = np.r_[10.0, 5.0, np.full(10, 4.999)]  # improves by < 1e-3 relative after step 100
    assert has_converged(steps, plateau, tol=1e-3, window=1000)  # 1100 - 100 >= 1000
    assert not has_converged(steps[:-1], plateau[:-1], tol=1e-3, window=1000)  # 1000 - 100 < 1000
    steady = 10.0 * 0.99 ** np.arange(12)  # 1 % per evaluation beats tol = 1e-3
    assert not has_converged(steps, steady, tol=1e-3, window=200)
    assert has_converged(steps, steady, tol=0.05, window=200)


# --------------------------------------------------------------------------- determinism


def test_same_config_gives_bitwise_identical_weights_and_curves():
    first, second = train(tiny()), train(tiny())
    assert first.params.keys() == second.params.keys()
    for key in first.params:
        assert np.array_equal(first.params[key], second.params[key]), key
    assert np.array_equal(first.arrays["loss_curve"], second.arrays["loss_curve"])
    assert np.array_equal(first.arrays["train_loss"], second.arrays["train_loss"])
    other = train(tiny(seed=1))
    assert not np.array_equal(first.params["W_q"], other.params["W_q"])


def test_evaluation_set_depends_on_eval_seed_only():
    base = evaluation_batch(tiny())
    same = evaluation_batch(tiny(seed=5, depth=7, max_steps=99))
    assert np.array_equal(base.context_x, same.context_x) and np.array_equal(base.target, same.target)
    assert not np.array_equal(base.context_x, evaluation_batch(tiny(eval_seed=1)).context_x)


def test_training_stops_when_converged_and_reports_it():
    cfg = tiny(max_steps=400, eval_every=5, window=10, tol=0.5)  # tol 50 %: the plateau comes at once
    result = train(cfg)
    assert result.metrics["converged"] is True
    assert result.metrics["steps"] < cfg.max_steps
    assert result.arrays["train_loss"].shape == (result.metrics["steps"],)
    capped = train(tiny(tol=0.0, window=10_000))
    assert capped.metrics["converged"] is False and capped.metrics["steps"] == TINY["max_steps"]


def test_result_reports_the_contract_metrics_and_arrays():
    result = train(tiny())
    for key in ("R_L", "A_L", "C_L", "steps", "converged", "wall_time", "final_train_loss", "initial_eval_loss"):
        assert key in result.metrics, key
        json.dumps(result.metrics[key])
    assert result.arrays["loss_curve"].shape == (4, 2)  # steps 0, 4, 8, 12
    np.testing.assert_array_equal(result.arrays["loss_curve"][:, 0], [0, 4, 8, 12])
    assert result.arrays["layer_errors"].shape == (2,)
    assert result.arrays["modewise_loss"].shape == (3,)
    # the reported loss is the evaluation loss of the final weights
    assert result.metrics["R_L"] == pytest.approx(result.arrays["loss_curve"][-1, 1], rel=rtol(ROUNDOFF, np.float32))
    one_layer = train(tiny(depth=1))
    assert math.isnan(one_layer.metrics["C_L"])


# --------------------------------------------------------------------------- learning claims


def test_one_softmax_layer_solves_the_easy_task_by_focusing_on_one_token():
    """Paper section 4.2 / Fig. 4: one nonlinear layer reaches ~zero easy-task loss, top-1 attention mass -> 1.

    The query-key scale starts small (qk_scale = 0.05: near-uniform attention, loss near Var(y)),
    so the claim is about what training does, not about the initialisation.
    """
    cfg = TrainConfig(model="nonlinear", task="easy", a=1.0, b=1.0, d=8, N=8, P=32, depth=1, batch_size=64,
                      max_steps=400, learning_rate=0.03, schedule="warmup_constant", warmup_steps=20,
                      eval_every=50, eval_size=512, init={"qk_scale": 0.05}, window=10_000)
    result = train(cfg)
    initial, final = result.metrics["initial_eval_loss"], result.metrics["R_L"]
    assert initial > 0.5 * result.metrics["label_variance"]
    assert final < 0.01 * initial, (initial, final)
    assert result.metrics["top1_attention_mass"] > 0.9


def test_linear_attention_easy_loss_decreases_with_depth():
    """Paper section 3.1 / Table 2: deeper linear attention fits more of the spectrum (a = 2, b = 1, ζ = 1)."""
    losses = {}
    for depth in (1, 2, 4):
        cfg = TrainConfig(model="linear", task="easy", a=2.0, b=1.0, d=8, N=8, P=64, depth=depth, batch_size=64,
                          max_steps=600, eval_every=100, eval_size=2048, window=10_000)
        result = train(cfg)
        losses[depth] = (result.metrics["R_L"], result.metrics["R_L_se"])
    (r1, s1), (r2, s2), (r4, s4) = losses[1], losses[2], losses[4]
    assert r2 < r1 - 3 * math.hypot(s1, s2), losses
    assert r4 < r2 - 3 * math.hypot(s2, s4), losses


# --------------------------------------------------------------------------- checkpoints


def test_checkpoint_round_trip_is_exact(tmp_path):
    result = train(tiny())
    result.save(tmp_path / "ckpt")
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["arrays.npz", "config.json", "metrics.json", "params.npz"]
    back = TrainResult.load(tmp_path / "ckpt")
    assert back.config == result.config
    for key in result.params:
        assert np.array_equal(back.params[key], result.params[key]) and back.params[key].dtype == result.params[key].dtype
    for key in result.arrays:
        assert np.array_equal(back.arrays[key], result.arrays[key], equal_nan=True), key
    assert back.metrics.keys() == result.metrics.keys()
    for key, value in result.metrics.items():
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(back.metrics[key])
        else:
            assert back.metrics[key] == value, key


class _Boom(Exception):
    pass


@pytest.mark.parametrize("failing_call", [1, 2])  # during params.npz / during arrays.npz
@pytest.mark.parametrize("exc", [_Boom, KeyboardInterrupt])
def test_interrupted_save_leaves_the_previous_checkpoint_and_no_partial_files(tmp_path, monkeypatch, failing_call, exc):
    cfg = tiny()
    old = TrainResult(cfg, {"w": np.arange(3.0)}, {"R_L": 1.0}, {"curve": np.ones(2)})
    old.save(tmp_path)
    before = {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)}
    real_savez = np.savez
    calls = []

    def failing_savez(fh, **arrays):
        calls.append(1)
        if len(calls) == failing_call:
            fh.write(b"half a file")
            raise exc("disk on fire")
        return real_savez(fh, **arrays)

    monkeypatch.setattr(train_mod.np, "savez", failing_savez)
    new = TrainResult(cfg, {"w": np.zeros(3)}, {"R_L": 2.0}, {"curve": np.zeros(2)})
    with pytest.raises(exc):
        new.save(tmp_path)
    after = {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)}
    assert after == before  # nothing replaced, no temporary files
    assert np.array_equal(TrainResult.load(tmp_path).params["w"], np.arange(3.0))


def test_first_save_interrupted_leaves_an_empty_directory(tmp_path, monkeypatch):
    def failing_savez(fh, **arrays):
        raise _Boom("no space left")

    monkeypatch.setattr(train_mod.np, "savez", failing_savez)
    with pytest.raises(_Boom):
        TrainResult(tiny(), {"w": np.zeros(1)}, {}, {}).save(tmp_path / "new")
    assert os.listdir(tmp_path / "new") == []


def test_load_refuses_a_checkpoint_whose_files_do_not_belong_together(tmp_path):
    cfg = tiny()
    TrainResult(cfg, {"w": np.zeros(2)}, {"R_L": 1.0}, {}).save(tmp_path / "a")
    TrainResult(cfg, {"w": np.ones(2)}, {"R_L": 2.0}, {}).save(tmp_path / "b")
    os.replace(tmp_path / "b" / "params.npz", tmp_path / "a" / "params.npz")  # as if a save stopped between renames
    with pytest.raises(ValueError, match="params.npz"):
        TrainResult.load(tmp_path / "a")
    with pytest.raises(FileNotFoundError, match="params.npz"):
        TrainResult.load(tmp_path / "b")


def test_saving_onto_a_file_path_is_refused(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(NotADirectoryError, match="file"):
        save_checkpoint(target, tiny(), {}, {}, {})


# --------------------------------------------------------------------------- divergence


def test_nan_loss_raises_training_diverged_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    from numerics.models import get_model

    model = get_model("nonlinear")
    real = model.loss_and_grad
    calls = []

    def poisoned(params, batch):
        calls.append(1)
        loss, grads = real(params, batch)
        return (float("nan") if len(calls) == 7 else loss), grads  # the 7th step is step index 6

    monkeypatch.setattr(model, "loss_and_grad", poisoned)
    seen = {}

    def remember(progress):
        seen[progress.step] = {k: v.copy() for k, v in progress.params.items()}

    with pytest.raises(TrainingDiverged, match="step 6") as info:
        train(tiny(eval_every=4), checkpoint_dir=tmp_path, callback=remember)
    assert info.value.step == 6 and info.value.last_good_step == 4
    kept = TrainResult.load(tmp_path)
    assert kept.metrics["step"] == 4 and kept.metrics["complete"] is False
    for key, value in seen[4].items():
        assert np.array_equal(kept.params[key], value), key
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


def test_exploding_learning_rate_is_caught_as_divergence():
    cfg = TrainConfig(model="linear", task="easy", d=3, N=3, P=8, depth=4, batch_size=8, max_steps=200, eval_every=50,
                      eval_size=16, learning_rate=1e6, schedule="constant", dtype="float32")
    with pytest.raises(TrainingDiverged, match="training diverged at step"):
        train(cfg)


def test_train_refuses_a_dict_config():
    with pytest.raises(TypeError, match="TrainConfig"):
        train(TINY)


def test_adam_state_is_frozen():
    state = adam_init({"w": np.zeros(1)})
    assert isinstance(state, AdamState)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.step = 3


@pytest.mark.parametrize("model", ["linear", "nonlinear", "single_stream", "untied_values", "context_updates"])
def test_default_hyperparameters_of_every_model_family_learn(model):
    """The per-family defaults (learning rate, initialisation) cut the loss by at least a quarter in 200 steps.

    Linear attention is trained on the easy task at L = 2 (at L = 1 its κ = N/c_λ start is already the
    one-step optimum, and on the top-k task it starts near its floor); the softmax models on the top-2 task.
    """
    task, depth = ("easy", 2) if model == "linear" else ("difficult", 2)
    cfg = TrainConfig(model=model, task=task, a=0.5, b=0.5, d=4, N=8, P=16, depth=depth, batch_size=32,
                      max_steps=200, eval_every=50, eval_size=1024, warmup_steps=20, window=10_000)
    result = train(cfg)
    assert result.metrics["R_L"] < 0.75 * result.metrics["initial_eval_loss"], result.metrics


def test_float64_training_keeps_float64_weights():
    result = train(tiny(dtype="float64"))
    assert all(value.dtype == np.float64 for value in result.params.values())
    assert math.isfinite(result.metrics["R_L"])


def test_frozen_parameters_stay_exactly_at_their_initial_values_and_the_rest_train():
    from numerics.train import TrainConfig, run_config

    cfg = TrainConfig(model="nonlinear", task="difficult", d=4, N=6, P=8, depth=2, max_steps=30, eval_size=64,
                      eval_every=10, frozen=("W_o", "W_v", "W_y"), dtype="float64")
    free = run_config(dataclasses.replace(cfg, frozen=()))
    lazy = run_config(cfg)
    untouched = run_config(dataclasses.replace(cfg, max_steps=1, learning_rate=1e-300))  # ~ initial weights
    for name in ("W_o", "W_v", "W_y"):
        np.testing.assert_array_equal(lazy.params[name], untouched.params[name])
        assert not np.array_equal(free.params[name], untouched.params[name])
    assert not np.array_equal(lazy.params["W_q"], untouched.params["W_q"])


def test_frozen_rejects_unknown_names_and_freezing_everything():
    from numerics.train import TrainConfig

    with pytest.raises(ValueError, match="frozen"):
        TrainConfig(frozen=("W_z",))
    with pytest.raises(ValueError, match="frozen"):
        TrainConfig(frozen=("W_x", "W_y", "W_q", "W_k", "W_v", "W_o"))
    with pytest.raises(ValueError, match="frozen"):
        TrainConfig(model="nonlinear", frozen=("m",))


# --------------------------------------------------------------------------- resuming


def _same_result(a: TrainResult, b: TrainResult) -> None:
    for key in a.params:
        assert np.array_equal(a.params[key], b.params[key]), key
    assert sorted(a.arrays) == sorted(b.arrays)
    for key in a.arrays:
        assert np.array_equal(a.arrays[key], b.arrays[key], equal_nan=True), key
    for key in ("R_L", "steps", "converged", "best_eval_loss", "final_train_loss"):
        assert a.metrics[key] == b.metrics[key], key


@pytest.mark.parametrize("stop_after_eval_at", [4, 8])
def test_a_run_interrupted_after_a_checkpoint_resumes_to_the_same_float64_result(tmp_path, stop_after_eval_at):
    config = tiny(dtype="float64", max_steps=24)
    whole = train(config)

    def interrupt(progress):  # runs right after the checkpoint of this evaluation is written
        if progress.step == stop_after_eval_at:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(config, checkpoint_dir=tmp_path, callback=interrupt)
    resumed = train(config, checkpoint_dir=tmp_path, resume=True)
    assert resumed.metrics["resumed_at"] == stop_after_eval_at and resumed.metrics["complete"]
    _same_result(whole, resumed)
    assert not (tmp_path / "training_state.npz").exists()  # the finished checkpoint holds no stale state


def test_a_run_interrupted_between_its_last_checkpoint_and_the_convergence_test_stops_there(tmp_path):
    config = tiny(dtype="float64", max_steps=400, eval_every=4, tol=0.5, window=8)  # converges early
    whole = train(config)
    assert whole.metrics["converged"] and whole.metrics["steps"] < 400
    last = whole.metrics["steps"]

    def interrupt(progress):
        if progress.step == last:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(config, checkpoint_dir=tmp_path, callback=interrupt)
    resumed = train(config, checkpoint_dir=tmp_path, resume=True)
    assert resumed.metrics["resumed_at"] == last
    _same_result(whole, resumed)


def test_the_checkpoint_holds_the_optimiser_and_batch_generator_state(tmp_path):
    from numerics.checkpoint import read_training_state

    config = tiny(dtype="float64")

    def interrupt(progress):
        if progress.step == 8:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(config, checkpoint_dir=tmp_path / "run", callback=interrupt)
    state = read_training_state(tmp_path / "run")
    assert state.steps == 8 and state.adam.step == 8 and state.train_loss.shape == (8,)
    assert sorted(state.adam.m) == sorted(TrainResult.load(tmp_path / "run").params)
    # the generator state is the one the 9th batch is drawn from
    rng = np.random.default_rng(np.random.SeedSequence(config.seed, spawn_key=(1,)))
    from numerics.tasks import sample

    for _ in range(8):
        sample(config.task, config.spectrum(), config.P, config.batch_size, rng, k=config.k, dtype=np.float64)
    assert rng.bit_generator.state == state.rng_state


def test_the_progress_bar_shows_no_training_loss_until_one_exists(monkeypatch):
    """The evaluation at step 0 comes before any training step: its postfix says ``train=–``, not ``nan``."""
    import tqdm.auto

    from numerics.progress import NO_VALUE

    postfixes = []

    class Recorder:
        def __init__(self, *args, **kwargs):
            pass

        def set_postfix(self, refresh=True, **values):
            postfixes.append(values)

        def update(self, n=1):
            pass

        def close(self):
            pass

    monkeypatch.setattr(tqdm.auto, "tqdm", Recorder)
    cfg = TrainConfig(model="linear", task="easy", d=2, N=2, P=8, batch_size=8, max_steps=4, eval_every=2,
                      eval_size=8, warmup_steps=0)
    train(cfg, progress=True)
    assert [p["train"] == NO_VALUE for p in postfixes] == [True, False, False]
    assert all("nan" not in value for p in postfixes for value in p.values())
    assert all(math.isfinite(float(p[key])) for p in postfixes[1:] for key in ("train", "eval"))
