"""Claims about the JAX engine (``TrainConfig(engine="jax")``, ``numerics/engines/jax_engine.py``).

* it computes the numpy engine's loss and gradient (eq. 12 through eqs. 9-10, 59-60) on identical
  inputs, to round-off in float64, at several sizes and depths, for both pre-norms; its forward pass
  equals the literal transcription (``numerics.models.reference``);
* its Adam step (with clipping, frozen parameters and the warm-up schedule) is ``numerics.optim``'s;
* its in-jit sampler draws the data law of eqs. 1-6 (the top-k target recomputed from the returned
  arrays; second moments against the numpy sampler);
* a short run's final loss agrees with the numpy engine's within their standard errors (same law,
  same initial weights and held-out set, different training streams);
* a run resumed from a checkpoint ends exactly where the uninterrupted run does; K candidates in one
  vmapped lockstep step end where each ends alone;
* the default install does not import jax; bad engines are refused, naming the choices.

Skipped only when jax is missing and ``CI`` is unset (in CI the ``dev`` extra installs jax, so they run).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from numerics import engines
from numerics.engines import JAX_EXTRA, jax_available
from numerics.models import get_model
from numerics.tasks import sample
from numerics.train import TrainConfig, train
from theory import PowerLawSpectrum
from tolerances import MC_SIGMAS, ROUNDOFF, rtol

ROOT = Path(__file__).resolve().parents[1]

needs_jax = pytest.mark.skipif(not jax_available() and not os.environ.get("CI"),
                               reason=f"jax is not installed ({JAX_EXTRA}); these tests must run in CI")

SIZES = [(4, 8, 16, 1), (8, 16, 32, 3), (16, 32, 64, 8)]  # (d, N, P, L)
MODELS = ("nonlinear", "nonlinear_rms")


def _perturbed_params(model: str, d: int, N: int, L: int, rng) -> dict:
    """float64 weights away from the identity start, so that every gradient is generic."""
    params = get_model(model).init_params(d, N, L, rng, dtype=np.float64, qk_scale=2.0)
    params["W_v"] = params["W_v"] + 0.3 * rng.standard_normal((N, N)) / np.sqrt(N)
    params["W_o"] = params["W_o"] + 0.3 * rng.standard_normal((1, N)) / np.sqrt(N)
    return params


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


# --------------------------------------------------------------------------- the same function
@needs_jax
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("size", SIZES, ids=lambda s: "d{}-N{}-P{}-L{}".format(*s))
def test_jax_loss_and_gradient_equal_the_numpy_engines_in_float64(model, size):
    from numerics.engines.jax_engine import loss_and_grad

    d, N, P, L = size
    rng = np.random.default_rng(100 + L)
    params = _perturbed_params(model, d, N, L, rng)
    batch = sample("difficult", PowerLawSpectrum(0.5, 0.5, d), P, 32, rng, k=2)
    loss_np, grads_np = get_model(model).loss_and_grad(params, batch)
    loss_jax, grads_jax = loss_and_grad(params, batch, model)
    tol = rtol(ROUNDOFF, np.float64)  # stricter than the 1e-5
    assert abs(loss_jax - loss_np) <= tol * loss_np
    assert sorted(grads_jax) == sorted(grads_np)
    for name in grads_np:
        assert np.max(np.abs(grads_np[name])) > 0, name  # a generic point: no vacuous comparison
        assert _relative(grads_jax[name], grads_np[name]) <= tol, name


@needs_jax
@pytest.mark.parametrize("model", MODELS)
def test_jax_forward_equals_the_literal_transcription(model):
    from numerics.engines.jax_engine import forward

    d, N, P, L = 6, 10, 12, 3
    rng = np.random.default_rng(7)
    params = _perturbed_params(model, d, N, L, rng)
    batch = sample("difficult", PowerLawSpectrum(1.0, 0.5, d), P, 16, rng, k=2)
    prediction, attention = forward(params, batch, model)
    reference = get_model(model).reference_forward(params, batch)
    assert _relative(prediction, reference) <= rtol(ROUNDOFF, np.float64)
    assert np.allclose(attention.sum(axis=-1), 1.0, rtol=0, atol=rtol(ROUNDOFF, np.float64))


@needs_jax
def test_jax_adam_steps_equal_numpy_optim_with_clipping_frozen_parameters_and_warmup():
    from numerics.engines.jax_engine import JaxTrainer, sample_batch
    from numerics.optim import adam_init, adam_update, clip_by_global_norm, schedule_value

    config = TrainConfig(model="nonlinear", engine="jax", dtype="float64", d=4, N=6, P=8, depth=2, batch_size=16,
                         learning_rate=1e-2, warmup_steps=2, max_steps=5, grad_clip=0.05, frozen=("W_o",))
    model = get_model("nonlinear")
    params = _perturbed_params("nonlinear", 4, 6, 2, np.random.default_rng(3))
    trainer = JaxTrainer([config], [params], [adam_init(params)])
    state = adam_init(params)
    clipped = []
    for t in range(3):
        trainer.step(t)
        _, grads = model.loss_and_grad(params, sample_batch(config, t))
        grads["W_o"] = np.zeros_like(grads["W_o"])
        grads, norm = clip_by_global_norm(grads, config.grad_clip)
        clipped.append(norm > config.grad_clip)
        rate = schedule_value(config.schedule, t, config.learning_rate, config.warmup_steps, config.max_steps)
        params, state = adam_update(params, grads, state, rate, config.beta1, config.beta2, config.eps)
    assert all(clipped)  # the clipping branch was exercised
    got = trainer.weights(0)
    for name in params:
        assert _relative(got[name], params[name]) <= rtol(ROUNDOFF, np.float64), name
    assert np.array_equal(got["W_o"], _perturbed_params("nonlinear", 4, 6, 2, np.random.default_rng(3))["W_o"])
    assert trainer.adam_state(0).step == state.step == 3


# --------------------------------------------------------------------------- the data law
@needs_jax
@pytest.mark.parametrize("task", ["difficult", "easy"])
def test_jax_sampler_draws_the_data_law(task):
    from numerics.engines.jax_engine import sample_batch
    from theory.data_law import top_k_indices, top_k_mean

    config = TrainConfig(model="nonlinear", engine="jax", dtype="float64", task=task, k=2, a=1.0, b=1.0, d=4, N=4,
                         P=16, batch_size=4096)
    spectrum = config.spectrum()
    batch = sample_batch(config, 0)
    if task == "difficult":  # eq. (6) from the returned arrays
        expected = top_k_mean(batch.context_y, top_k_indices(batch.context_x, batch.test_x, 2))
    else:  # eq. (5): x_test is one of the context inputs and y* its label
        match = np.all(batch.context_x == batch.test_x[:, None, :], axis=-1)
        assert np.all(match.sum(axis=1) >= 1)
        expected = batch.context_y[np.arange(match.shape[0]), np.argmax(match, axis=1)]
    assert _relative(batch.target, expected) <= rtol(ROUNDOFF, np.float64)
    assert not np.allclose(sample_batch(config, 1).target, batch.target)  # a new key per step
    reference = sample(task, spectrum, 16, 4096, np.random.default_rng(0), k=2)
    for name, of in (("|x|^2", lambda b: np.sum(b.context_x**2, axis=-1).ravel()),
                     ("y^2", lambda b: (b.context_y**2).ravel()), ("target^2", lambda b: b.target**2)):
        a, b = of(batch), of(reference)
        se = np.sqrt(a.var() / a.size + b.var() / b.size)
        assert abs(a.mean() - b.mean()) <= MC_SIGMAS * se, name
    assert abs(np.mean(np.sum(batch.context_x**2, axis=-1)) - spectrum.eigenvalues.sum()) <= 0.05 * spectrum.eigenvalues.sum()


# --------------------------------------------------------------------------- training
@needs_jax
def test_a_short_jax_run_ends_at_the_numpy_runs_loss_within_their_standard_errors():
    base = dict(model="nonlinear", d=8, N=16, P=32, depth=4, batch_size=128, max_steps=300, eval_every=50,
                eval_size=2048, warmup_steps=20)
    runs = {engine: train(TrainConfig(**base, engine=engine)) for engine in ("numpy", "jax")}
    numpy_run, jax_run = runs["numpy"], runs["jax"]
    # same initial weights and held-out set: the first curve point is the same number
    assert jax_run.metrics["initial_eval_loss"] == numpy_run.metrics["initial_eval_loss"]
    for run in runs.values():  # both learned (the comparison is not of two untrained models)
        assert run.metrics["R_L"] < 0.85 * run.metrics["initial_eval_loss"]
    gap = abs(jax_run.metrics["R_L"] - numpy_run.metrics["R_L"])
    assert gap <= MC_SIGMAS * np.hypot(jax_run.metrics["R_L_se"], numpy_run.metrics["R_L_se"])
    curve_gap = np.abs(jax_run.arrays["loss_curve"][:, 1] - numpy_run.arrays["loss_curve"][:, 1])
    assert np.all(curve_gap <= MC_SIGMAS * np.hypot(jax_run.metrics["R_L_se"], numpy_run.metrics["R_L_se"]))


@needs_jax
def test_an_interrupted_jax_run_resumes_to_the_same_result(tmp_path):
    # the CLI test's law and shape: one compilation for both
    stop_after_eval_at = 8
    config = TrainConfig(model="nonlinear", engine="jax", d=3, N=4, P=8, depth=2, batch_size=8, max_steps=12,
                         eval_every=4, eval_size=16, warmup_steps=1)
    whole = train(config)

    def interrupt(progress):  # runs right after the checkpoint of this evaluation is written
        if progress.step == stop_after_eval_at:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(config, checkpoint_dir=tmp_path, callback=interrupt)
    resumed = train(config, checkpoint_dir=tmp_path, resume=True)
    assert resumed.metrics["resumed_at"] == stop_after_eval_at
    for name in whole.params:
        assert np.array_equal(whole.params[name], resumed.params[name]), name
    for name in ("loss_curve", "train_loss"):
        assert np.array_equal(whole.arrays[name], resumed.arrays[name]), name


@needs_jax
def test_a_non_finite_jax_step_stops_the_run_naming_the_step():
    from numerics.train import TrainingDiverged

    # the CLI test's law and shape; a float32 gain of 1e30 makes the first training loss infinite
    config = TrainConfig(model="nonlinear", engine="jax", d=3, N=4, P=8, depth=2, batch_size=8, max_steps=12,
                         eval_every=4, eval_size=16, warmup_steps=1, init={"readout_gain": 1e30})
    with pytest.raises(TrainingDiverged, match="diverged at step 0: the training loss or gradient is not finite"):
        train(config)


@needs_jax
def test_lockstep_candidates_in_one_vmapped_step_end_where_each_ends_alone():
    from numerics.lockstep import train_lockstep

    # the Adam test's law and shape: the runs alone reuse its compiled step
    base = dict(model="nonlinear", engine="jax", dtype="float64", d=4, N=6, P=8, depth=2, batch_size=16,
                eval_every=5, eval_size=32, warmup_steps=2)
    configs = [TrainConfig(**base, max_steps=15, learning_rate=1e-3),
               TrainConfig(**base, max_steps=10, learning_rate=3e-3, frozen=("W_o", "W_v", "W_y"))]
    together = train_lockstep(configs)
    for config, result in zip(configs, together):
        alone = train(config)
        assert result.metrics["steps"] == alone.metrics["steps"] == config.max_steps
        for name in alone.params:
            assert _relative(result.params[name], alone.params[name]) <= rtol(ROUNDOFF, np.float64), name


@needs_jax
def test_jax_lockstep_refuses_candidates_of_different_shapes():
    from numerics.lockstep import train_lockstep

    base = dict(model="nonlinear", engine="jax", d=4, N=8, P=16, batch_size=16, max_steps=2, eval_every=2, eval_size=8)
    with pytest.raises(ValueError, match="depth"):
        train_lockstep([TrainConfig(**base, depth=1), TrainConfig(**base, depth=2)])
    with pytest.raises(ValueError, match="engine"):
        train_lockstep([TrainConfig(**base), TrainConfig(**{**base, "engine": "numpy"})])


@needs_jax
def test_idepth_train_engine_jax_prints_the_device_and_trains(tmp_path, capsys, monkeypatch):
    import idepth.cli as cli

    monkeypatch.setattr(cli, "COMMANDS", ["train"])
    args = ["train", "--engine", "jax", "--model", "nonlinear", "--d", "3", "--N", "4", "--P", "8", "--depth", "2",
            "--steps", "4", "--batch-size", "8", "--eval-size", "16", "--eval-every", "2", "--warmup", "1"]
    assert cli.main([*args, "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("engine: jax on cpu") or out.startswith("engine: jax on gpu")
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["engine"] == "jax"


# --------------------------------------------------------------------------- default install and bad input
def test_the_numpy_package_does_not_import_jax():
    code = ("import sys, numerics, theory, numerics.train, numerics.lockstep, idepth.cli\n"
            "from numerics.train import TrainConfig\n"
            "TrainConfig(model='nonlinear', d=2, N=2, P=4).content_hash()\n"
            "if numerics.engines.jax_available():\n"
            "    TrainConfig(model='nonlinear', d=2, N=2, P=4, engine='jax')\n"
            "loaded = sorted(m for m in sys.modules if m == 'jax' or m.startswith(('jax.', 'jaxlib')))\n"
            "assert not loaded, loaded\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_an_unknown_engine_is_refused_naming_the_choices():
    with pytest.raises(ValueError, match="engine must be one of 'numpy', 'jax'; got 'torch'"):
        TrainConfig(model="nonlinear", engine="torch")


def test_engine_jax_without_jax_is_refused_naming_the_extra(monkeypatch):
    monkeypatch.setattr(engines, "jax_available", lambda: False)
    with pytest.raises(ValueError) as info:
        TrainConfig(model="nonlinear", engine="jax")
    assert JAX_EXTRA in str(info.value) and JAX_EXTRA == 'pip install -e ".[jax]"'


@needs_jax
def test_a_model_the_jax_engine_does_not_implement_is_refused_naming_the_implemented_ones():
    with pytest.raises(ValueError, match="'nonlinear', 'nonlinear_rms'; got model='linear'"):
        TrainConfig(model="linear", engine="jax")


def test_numpy_runs_keep_their_content_hashes():
    from theory import __version__

    config = TrainConfig(model="nonlinear", d=2, N=2, P=4)
    payload = {key: value for key, value in config.to_dict().items() if key not in ("start", "stream", "engine")}
    text = json.dumps({"config": payload, "package_version": __version__}, sort_keys=True, separators=(",", ":"),
                      allow_nan=False)
    assert config.content_hash() == hashlib.sha256(text.encode("utf-8")).hexdigest()
    if jax_available():
        assert TrainConfig(model="nonlinear", d=2, N=2, P=4, engine="jax").content_hash() != config.content_hash()


def test_idepth_train_engine_jax_without_jax_exits_2_naming_the_extra(tmp_path, capsys, monkeypatch):
    import idepth.cli as cli

    monkeypatch.setattr(cli, "COMMANDS", ["train"])
    monkeypatch.setattr(engines, "jax_available", lambda: False)
    code = cli.main(["train", "--engine", "jax", "--model", "nonlinear", "--d", "3", "--N", "4", "--P", "8",
                     "--out", str(tmp_path / "run"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and JAX_EXTRA in err[0] and "Traceback" not in err[0]
    assert not (tmp_path / "run").exists()
