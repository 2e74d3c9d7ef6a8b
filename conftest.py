"""Repository-wide pytest hook: the JAX engine's doctests are skipped, with the reason, only where jax is missing
and ``CI`` is unset (``tests/test_jax_engine.py`` follows the same rule; in CI the ``dev`` extra installs jax)."""

import os

import pytest


def pytest_collection_modifyitems(config, items):
    from numerics.engines import JAX_EXTRA, jax_available

    if jax_available() or os.environ.get("CI"):
        return
    skip = pytest.mark.skip(reason=f"jax is not installed ({JAX_EXTRA}); the JAX engine's doctests must run in CI")
    for item in items:
        if "numerics/engines/jax_engine.py" in item.nodeid:
            item.add_marker(skip)
