"""Every figure and table ``idepth reproduce`` makes, and the families of runs each needs.

A module of its own so that the renderers (the report, the docs pages) read the list without the run schedule.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Iterable, Mapping

__all__ = ["Artefact", "ARTEFACTS", "parse_only"]


@dataclass(frozen=True)
class Artefact:
    """One figure or table of the paper, and the families of runs it needs.

    Examples
    --------
    >>> ARTEFACTS["fig6c"].families
    ('nonlinear_lazy',)
    """

    id: str
    kind: str
    title: str
    paper: str
    families: tuple


def _a(id_, title, paper, *families) -> Artefact:
    return Artefact(id_, "table" if id_.startswith("table") else "figure", title, paper, tuple(families))


#: every artefact, in report order
ARTEFACTS: Mapping[str, Artefact] = MappingProxyType({a.id: a for a in (
    _a("fig1", "Overview: linear attention's loss against depth on the easy task; softmax attention's loss against "
               "depth on the difficult task, by training regime", "Fig. 1; eqs. (16), (34)",
       "linear_easy", "linear_difficult", "nonlinear_lazy"),
    _a("fig3a", "Linear attention, easy task: R_L against L, a = 2, varying b", "Fig. 3a; eqs. (34), (40)",
       "linear_easy"),
    _a("fig3b", "Linear attention, easy task: R_L against L, b = 2, varying a", "Fig. 3b; eqs. (34), (40)",
       "linear_easy"),
    _a("fig3c", "Linear attention, easy task: normalised mode-wise loss against L (sequential learning)",
       "Fig. 3c; eqs. (55)-(56)", "linear_easy"),
    _a("fig4a", "Softmax attention, easy task: held-out loss during training (L = 1)", "Fig. 4a; section 3.2",
       "nonlinear_easy"),
    _a("fig4b", "Softmax attention, easy task: final loss against L (normalised by the initial loss)",
       "Fig. 4b; section 3.2", "nonlinear_easy"),
    _a("fig4c", "Softmax attention, easy task: top-1 attention mass during training", "Fig. 4c",
       "nonlinear_easy"),
    _a("fig5a", "Linear attention, difficult task (k = 2): R_L against L with the theory floor",
       "Fig. 5a; eqs. (41)-(54)", "linear_difficult"),
    _a("fig5b", "Linear attention, difficult task: measured plateau against the theory floor",
       "Fig. 5b; Table 3; eq. (54)", "linear_difficult", "linear_difficult_k16"),
    _a("fig6a", "Softmax attention, difficult task (k = 2): R_L against L, a = 0, varying b; oracle bound",
       "Fig. 6a; eqs. (16), (60)", "nonlinear_lazy", "nonlinear_converged"),
    _a("fig6b", "Softmax attention, difficult task (k = 2): R_L against L, b = 0, varying a; oracle bound",
       "Fig. 6b; eqs. (16), (60)", "nonlinear_lazy"),
    _a("fig6c", "Softmax attention, difficult task: shared error C_L against L", "Fig. 6c; eqs. (61)-(63)",
       "nonlinear_lazy"),
    _a("fig6d", "Softmax attention, difficult task: disagreement A_L − C_L against L", "Fig. 6d; eqs. (61)-(63)",
       "nonlinear_lazy"),
    _a("fig7a", "Softmax attention, difficult task: normalised mode-wise loss against L", "Fig. 7a",
       "nonlinear_lazy"),
    _a("fig7b", "Softmax attention: normalised mode-wise reducible loss against L (parallel learning)",
       "Fig. 7b", "nonlinear_lazy"),
    _a("fig9", "Single-stream model: R_L, C_L and A_L − C_L against L", "Fig. 9; eqs. (64)-(70)",
       "single_stream"),
    _a("fig10", "Untied values: R_L, C_L and A_L − C_L against L", "Fig. 10; eqs. (71)-(74)", "untied_values"),
    _a("fig11", "Context updates M(m): R_L against L, top-2 against top-16", "Fig. 11; eqs. (75)-(82)",
       "context_updates", "context_updates_k16"),
    _a("fig12", "Context updates: learned m against L and layer-1 context attention A_1", "Fig. 12; eqs. (83)-(84)",
       "context_updates", "context_updates_k16"),
    _a("fig13", "Token-selection error percentiles Q_L(q): L = 1 against the deepest model", "Fig. 13; eqs. (90)-(91)",
       "nonlinear_lazy"),
    _a("fig14", "Softmax attention, top-16: R_L against L for broader spectra", "Fig. 14; Table 4",
       "nonlinear_k16"),
    _a("table1", "Difficult task, k = 2: plateaus L0, softmax against linear attention", "Table 1; eq. (16)",
       "nonlinear_lazy", "linear_difficult"),
    _a("table2", "Linear attention, easy task: fitted alpha against ζ and 2ζ", "Table 2; eqs. (34), (40)",
       "linear_easy"),
    _a("table3", "Linear attention, difficult task: theory floor against measured plateau", "Table 3; eq. (54)",
       "linear_difficult", "linear_difficult_k16"),
    _a("table4", "Softmax attention, difficult task: fit R_L = L0 + c L^-alpha", "Table 4; eqs. (16), (88)-(89)",
       "nonlinear_lazy", "nonlinear_k16"),
    _a("table5", "Softmax attention, difficult task: gap fit L0 − C_L = c L^-alpha", "Table 5; eqs. (92)-(93)",
       "nonlinear_lazy"),
)})


def parse_only(only: str | Iterable[str] | None) -> tuple:
    """The artefact IDs ``only`` selects (None: all), in report order.

    Raises
    ------
    ValueError
        For an unknown ID (the message lists the known ones) or an empty selection.

    Examples
    --------
    >>> parse_only("table2, fig1")
    ('fig1', 'table2')
    >>> parse_only("fig2")
    Traceback (most recent call last):
    ...
    ValueError: unknown artefact ID 'fig2'; known IDs: fig1, fig3a, ...
    """
    if only is None:
        return tuple(ARTEFACTS)
    if isinstance(only, str):
        items = [item.strip() for item in only.split(",")]
    else:
        try:
            items = [item.strip() if isinstance(item, str) else item for item in only]
        except TypeError:
            raise TypeError(f"only must be a comma-separated string or a list of artefact IDs; got {only!r}") from None
    items = [item for item in items if item != ""]
    if not items:
        raise ValueError(f"only selects no artefact; give IDs such as fig1,table2 (known: {', '.join(ARTEFACTS)})")
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"artefact IDs must be strings; got {item!r}")
        if item not in ARTEFACTS:
            known = ", ".join(ARTEFACTS)
            raise ValueError(f"unknown artefact ID {item!r}; known IDs: {known}")
    return tuple(a for a in ARTEFACTS if a in set(items))
