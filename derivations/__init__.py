"""How the formulas are obtained: symbolic derivations, checked step by step,
rendered to ``docs/derivations/*.md``. Builds on :mod:`theory`'s sympy objects."""
