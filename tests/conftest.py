"""Test configuration: hypothesis profiles chosen by IDEPTH_HYPOTHESIS_PROFILE.

* ``ci`` (default when ``CI`` is set): derandomized, 25 examples, no deadline,
  so CI runs are reproducible;
* ``dev`` (default otherwise): 50 random examples;
* ``thorough``: 500 examples, for a long local run.

Ctrl-C: a suite started in the background of a non-interactive shell (``nohup … &``) inherits
SIGINT *ignored*, and so would every subprocess it starts; the interruption tests send SIGINT
and need Python's standard handler, so it is restored here (a handler, unlike "ignored", is
reset to the default in a child at exec).
"""

import os
import signal
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))

settings.register_profile(
    "ci", derandomize=True, max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile("dev", max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("IDEPTH_HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


import logging  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope="module")
def dask_scheduler():
    """The address of a 2-worker dask LocalCluster (worker processes on loopback) for the module; its start-up
    costs seconds."""
    import distributed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR) as cluster:
        yield cluster.scheduler_address


@pytest.fixture(scope="session")
def smoke_reproduction(tmp_path_factory):
    """One ``smoke``-scale reproduction (every artefact, the regime study), shared by the test modules
    that check its output (``test_reproduce``, ``test_claims``): built once per session. Tests read it;
    one that needs to write (re-running into it) works on a copy."""
    from numerics.experiments.execution import Execution
    from numerics.experiments.reproduce import reproduce

    out = tmp_path_factory.mktemp("smoke-reproduction") / "out"
    return reproduce("smoke", out_dir=out, execution=Execution(workers=2, progress=False), study=True,
                     log=lambda text: None)


@pytest.fixture(scope="session")
def tiny_certified(tmp_path_factory):
    """The one tiny certified study of the session (``tests/tiny_certified.py``: its plan and how it is trained),
    with its contrast runs: trained once, read by every certified test. A test that writes works on a copy."""
    from tiny_certified import train_tiny_certified

    return train_tiny_certified(tmp_path_factory.mktemp("tiny-certified"))


@pytest.fixture(scope="session")
def tiny_certified_cli(tiny_certified, tmp_path_factory):
    """The page ``idepth study certified --report-only`` writes from the tiny study (cells and contrast runs), once
    per session: its Monte-Carlo predictions are computed then, into the cache beside the cells."""
    from tiny_certified import cli_page

    return cli_page(tiny_certified, tmp_path_factory.mktemp("tiny-certified-cli") / "out")


@pytest.fixture(scope="session")
def tiny_certified_page(tiny_certified, tmp_path_factory):
    """The tiny plan's own page (its revised sections, the contrast recipes; no predictions), written once."""
    from tiny_certified import tiny_page

    return tiny_page(tiny_certified, tmp_path_factory.mktemp("tiny-certified-page") / "out")


#: session fixtures that train or reproduce (minutes): every test using one runs in the same pytest-xdist worker
#: (``--dist loadgroup``), so each is built once per test run however many workers there are
SHARED_FIXTURES = {"tiny_certified": "tiny_certified", "tiny_certified_cli": "tiny_certified",
                   "tiny_certified_page": "tiny_certified", "smoke_reproduction": "smoke_reproduction"}


def pytest_collection_modifyitems(config, items):
    """Group the tests for pytest-xdist: those of a shared session fixture together (:data:`SHARED_FIXTURES`), every
    other test with the rest of its file (so a module fixture, a dask cluster say, is built once too)."""
    for item in items:
        shared = sorted({SHARED_FIXTURES[name] for name in getattr(item, "fixturenames", ()) if name in SHARED_FIXTURES})
        item.add_marker(pytest.mark.xdist_group(shared[0] if shared else item.nodeid.split("::")[0]))
