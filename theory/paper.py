"""The paper's reported numbers, copied once (verbatim, as strings) into
``theory/data/paper_values.json``.

Values are kept as the paper prints them (strings) so that reports can
quote them verbatim; :func:`paper_table` also gives them as floats.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

__all__ = ["paper_table", "TABLES"]

TABLES = ("table1", "table2", "table3", "table4", "table5")


@lru_cache(maxsize=None)
def _raw() -> dict:
    with resources.files("theory").joinpath("data/paper_values.json").open("r", encoding="utf-8") as fh:
        return json.load(fh)


def paper_table(name: str, *, as_float: bool = True) -> list[dict]:
    """Rows of one of the paper's Tables 1-5 as dicts keyed by column name.

    Parameters
    ----------
    name : {'table1', 'table2', 'table3', 'table4', 'table5'}
        Which table.
    as_float : bool, default True
        Convert the verbatim strings to floats (``None`` stays ``None``).

    References
    ----------
    Paper Tables 1-5 (see ``../shared/paper-digest.md``).

    Examples
    --------
    >>> row = paper_table("table3")[0]
    >>> (row["k"], row["a"], row["b"], row["theory_floor"])
    (2, 0, 0, 59.3714)
    >>> paper_table("table3", as_float=False)[0]["theory_floor"]
    '59.3714'
    """
    if name not in TABLES:
        raise ValueError(f"name must be one of {', '.join(TABLES)}; got {name!r}")
    table = _raw()[name]
    rows = []
    for values in table["rows"]:
        row = dict(zip(table["columns"], values))
        if as_float:
            row = {key: (float(v) if isinstance(v, str) else v) for key, v in row.items()}
        rows.append(row)
    return rows


def paper_caption(name: str) -> str:
    """The caption recorded for a table (what its numbers are)."""
    if name not in TABLES:
        raise ValueError(f"name must be one of {', '.join(TABLES)}; got {name!r}")
    return _raw()[name]["caption"]
