"""Training throughput: milliseconds per Adam step for each model, and the overhead of
evaluation and checkpointing (numerics/train.py).

Run single-threaded, as the sweeps do::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_training.py [--quick]

For each model and depth it trains ``steps`` steps at d = N = 32, P = 128, batch 128
(the prototype size of the module docstring) and prints the median over repeats of the
time per step (sampling + forward + backward + Adam), the time of one evaluation of
the 1024-context held-out set, and the time of one atomic checkpoint write.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np

from numerics.models import MODELS, get_model
from numerics.tasks import sample
from numerics.train import TrainConfig, TrainResult, adam_init, adam_update, evaluate, evaluation_batch


def time_steps(config: TrainConfig, steps: int) -> float:
    model = get_model(config.model)
    rng = np.random.default_rng(0)
    params = model.init_params(config.d, config.N, config.depth, rng, dtype=config.numpy_dtype, **config.init_options)
    state = adam_init(params)
    spectrum = config.spectrum()
    start = time.perf_counter()
    for _ in range(steps):
        batch = sample(config.task, spectrum, config.P, config.batch_size, rng, k=config.k, dtype=config.numpy_dtype)
        _, grads = model.loss_and_grad(params, batch)
        params, state = adam_update(params, grads, state, config.learning_rate)
    return (time.perf_counter() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and repeats")
    args = parser.parse_args()
    steps, repeats = (5, 1) if args.quick else (20, 3)
    print(f"{'model':<16}{'L':>4}{'ms/step':>10}{'eval ms':>10}{'ckpt ms':>10}")
    for name in MODELS:
        for depth in (1, 4, 16):
            config = TrainConfig(model=name, task="difficult", d=32, N=32, P=128, depth=depth, batch_size=128)
            per_step = statistics.median(time_steps(config, steps) for _ in range(repeats))
            model = get_model(name)
            params = model.init_params(32, 32, depth, np.random.default_rng(0), dtype=config.numpy_dtype)
            batch = evaluation_batch(config)
            t0 = time.perf_counter()
            evaluate(model, params, batch)
            eval_ms = 1e3 * (time.perf_counter() - t0)
            with tempfile.TemporaryDirectory() as tmp:
                t0 = time.perf_counter()
                TrainResult(config, params, {"R_L": 1.0}, {"loss_curve": np.zeros((10, 2))}).save(tmp)
                ckpt_ms = 1e3 * (time.perf_counter() - t0)
            print(f"{name:<16}{depth:>4}{1e3 * per_step:>10.1f}{eval_ms:>10.1f}{ckpt_ms:>10.1f}", flush=True)


if __name__ == "__main__":
    main()
