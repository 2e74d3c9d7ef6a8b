"""Doctest collection of :mod:`numerics`: the one-release import aliases are not collected.

``numerics/store.py`` and ``numerics/sweep.py`` replace themselves in ``sys.modules`` with
:mod:`numerics.experiments.store` / :mod:`numerics.experiments.sweep`; collecting them as
doctest modules makes pytest report an import-file mismatch. They hold no examples.
"""

collect_ignore = ["store.py", "sweep.py"]
