"""The paper's reported numbers, copied once (verbatim, as strings) into
``theory/data/paper_values.json``.

Values are kept as the paper prints them (strings) so that reports can
quote them verbatim; :func:`paper_table` also gives them as floats.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from types import MappingProxyType

__all__ = ["INFERRED_SOFTMAX_SIZES", "TABLE1_SPECTRA", "TABLE4_SPECTRA", "TABLES", "paper_table", "table_spectra"]

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


def table_spectra(name: str, *, k: int | None = None, with_k: bool = False) -> tuple:
    """The spectrum exponents of a table's rows, in its order: ``(a, b)``, or ``(a, b, k)`` with ``with_k``.

    Parameters
    ----------
    name : {'table1', 'table2', 'table3', 'table4', 'table5'}
        Which table.
    k : int, optional
        Only the rows of top-``k`` (tables with a ``k`` column).
    with_k : bool, default False
        Append each row's ``k``.

    References
    ----------
    Paper eq. (2) (the exponents ``a``, ``b``) and Tables 1-5.

    Examples
    --------
    >>> table_spectra("table1")[:2]
    ((0.0, 0.0), (0.0, 0.25))
    >>> table_spectra("table4", k=16, with_k=True)[0]
    (0.0, 0.25, 16)
    """
    return tuple((float(r["a"]), float(r["b"])) + ((int(r["k"]),) if with_k else ())
                 for r in paper_table(name) if k is None or int(r["k"]) == int(k))


#: the seven ``(a, b)`` of the paper's Table 1 (softmax, top-2)
TABLE1_SPECTRA = table_spectra("table1")
#: the ``(a, b, k)`` of the paper's Table 4 (top-2 and top-16)
TABLE4_SPECTRA = table_spectra("table4", with_k=True)
#: the sizes the paper's nonlinear plateaus imply (the paper states none; ``idepth study sizes``: the χ² over the
#: 14 plateaus of Tables 1 and 4 is smallest at d = 16 by far, P is resolved only to 32-96), with N = 2d so that
#: the oracle heads exist with LayerNorm; every softmax study and the ``paper`` scale read them from here
INFERRED_SOFTMAX_SIZES = MappingProxyType({"d": 16, "N": 32, "P": 64})
