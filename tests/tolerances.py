"""The one tolerance table the tests use (per dtype), in the style of neural-tangents.

* ``ROUNDOFF``    -- two evaluations of the same exact quantity by different
  algorithms (e.g. fast engine vs reference transcription, an identity that
  holds algebraically).
* ``FINITE_DIFF`` -- analytic gradient vs central finite differences.
* ``APPROX``      -- an approximation that should be close but not exact
  (e.g. a quadrature against a closed form with truncation error).
* ``MC_SIGMAS``   -- how many standard errors a Monte-Carlo estimate may be
  from the exact value.
"""

import numpy as np

ROUNDOFF = {np.float32: 1e-5, np.float64: 1e-10}
FINITE_DIFF = {np.float32: 1e-2, np.float64: 1e-8}
APPROX = {np.float32: 5e-3, np.float64: 1e-5}
MC_SIGMAS = 3.0


def rtol(kind: dict, dtype=np.float64) -> float:
    """Tolerance of ``kind`` (one of the tables above) for ``dtype``."""
    return kind[np.dtype(dtype).type]
