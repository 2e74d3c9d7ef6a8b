"""Import alias (one release): :mod:`numerics.sweep` moved to :mod:`numerics.experiments.sweep`.

``import numerics.sweep`` still works and gives the same module object, with a
:class:`DeprecationWarning`; new code imports :mod:`numerics.experiments.sweep`.
"""

import importlib
import sys
import warnings

warnings.warn(
    "numerics.sweep moved to numerics.experiments.sweep; the old path is an alias for one release",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = importlib.import_module("numerics.experiments.sweep")
