"""Training the paper's models to convergence (paper eq. (12): R_L = E[(ŷ_L − y*)²]).

CONTRACT (shared with numerics/sweep.py -- keep these names):

* ``TrainConfig`` -- frozen dataclass describing one run; ``to_dict()`` gives a
  JSON-able dict, ``TrainConfig.from_dict(d)`` rebuilds it and raises ValueError
  on an unknown key or a wrongly typed value.
* ``run_config(config) -> TrainResult`` -- train one model as configured and
  evaluate it; deterministic for a given config (seed inside the config).
* ``TrainResult`` -- frozen dataclass with ``metrics`` (dict of JSON scalars:
  at least ``R_L``, ``A_L``, ``C_L``, ``steps``, ``converged``) and ``arrays``
  (dict of numpy arrays: at least ``loss_curve``, ``layer_errors``,
  ``modewise_loss``), plus ``params`` (the trained weights).

Implementation: see the rest of this module.
"""
