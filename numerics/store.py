"""Import alias (one release): :mod:`numerics.store` moved to :mod:`numerics.experiments.store`.

``import numerics.store`` still works and gives the same module object, with a
:class:`DeprecationWarning`; new code imports :mod:`numerics.experiments.store`.
"""

import importlib
import sys
import warnings

warnings.warn(
    "numerics.store moved to numerics.experiments.store; the old path is an alias for one release",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = importlib.import_module("numerics.experiments.store")
