"""Drawing helpers of the figure builders (conventions: see ``figures``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._plotting import pyplot
from ..study.curves import Curve, FitSummary

__all__ = ["Figure", "STYLES", "fit_problem"]


#: (marker, line style) of the i-th curve: colour alone does not separate coinciding curves
STYLES = (("o", "-"), ("s", "--"), ("^", "-."), ("D", ":"), ("v", "-"), ("P", "--"), ("X", "-."), ("*", ":"),
          ("<", "-"), (">", "--"), ("h", "-."), ("p", ":"), ("d", "-"), ("H", "--"), ("8", "-."), ("x", ":"))


@dataclass(frozen=True)
class Figure:
    """A figure written by a builder: its ID, PNG and PDF paths, and caption.

    Examples
    --------
    >>> Figure("fig1", (Path("f.png"), Path("f.pdf")), "caption").png.name
    'f.png'
    """

    id: str
    paths: tuple
    caption: str

    @property
    def png(self) -> Path:
        return self.paths[0]


def subplots(*args, **kwargs):
    return pyplot().subplots(*args, constrained_layout=True, **kwargs)


def colours(n: int) -> list:
    cmap = pyplot().get_cmap("tab10")
    return [cmap(i % 10) for i in range(max(n, 1))]


def style(index: int) -> tuple:
    return STYLES[index % len(STYLES)]


def styled(items) -> list[tuple]:
    """``(colour, marker, line style, item)`` for each of ``items``: the i-th gets the i-th colour of tab10 and the
    i-th of :data:`STYLES`, so curves that coincide stay apart.

    Examples
    --------
    >>> [(marker, line) for _, marker, line, _ in styled("xy")]
    [('o', '-'), ('s', '--')]
    """
    items = list(items)
    return [(colour, *style(index), item) for index, (colour, item) in enumerate(zip(colours(len(items)), items))]


def save(ctx, fig, artefact_id: str) -> tuple:
    """Write ``fig`` as PNG and PDF atomically (no legend over data); close it."""
    from numerics.io import save_figure
    from numerics.plotting import plain_log_ticks

    plt = pyplot()
    try:
        plain_log_ticks(fig)
        legends_clear_of_data(fig)
        paths = tuple(save_figure(fig, ctx.figures_dir / f"{artefact_id}.{ext}", dpi=130, close=False)
                      for ext in ("png", "pdf"))
    finally:
        plt.close(fig)
    return paths


def note(ax, text: str) -> None:
    """A legend entry without a line: says what is not drawn and why."""
    ax.plot([], [], ls="none", label=text)


def no_data(ax, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, fontsize=9, wrap=True,
            color="0.35")


def depth_axis(ax, depths, *, logy: bool = True) -> None:
    import matplotlib.ticker as ticker

    ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    if len(depths):
        ax.set_xlim(min(depths) / 1.3, max(depths) * 1.3)
    ax.set_xlabel("depth L (number of layers)")
    ax.grid(True, which="major", alpha=0.3)


def errorbar(ax, curve: Curve, colour, label: str, *, marker: str = "o", linestyle: str = "-") -> bool:
    c = curve.finite()
    if not len(c.depths):
        return False
    se = np.where(np.isfinite(c.se), c.se, 0.0)
    ax.errorbar(c.depths, c.mean, yerr=se, color=colour, marker=marker, ms=4, lw=1.3, ls=linestyle, capsize=2,
                label=label)
    return True


def fit_problem(fit: FitSummary) -> str | None:
    """Why a fit of eq. (16) is not drawn, or None if it determines ``α``.

    References
    ----------
    Paper eq. (16).

    Examples
    --------
    >>> fit_problem(FitSummary(None, "2 depth(s) with data; the fit needs 3"))
    'no fit: 2 depth(s) with data; the fit needs 3'
    """
    if not fit.ok:
        return f"no fit: {fit.reason}"
    alpha, se = fit.value("alpha"), fit.se("alpha")
    if not math.isfinite(se):
        return f"α = {alpha:.2g} undetermined (no standard error; flat curve)"
    if se >= abs(alpha):
        return f"α = {alpha:.2g} ± {se:.2g}, indistinguishable from 0 (flat curve)"
    return None


def fit_label(fit: FitSummary, *, floor_fixed: bool = False) -> str:
    problem = fit_problem(fit)
    if problem is not None:
        return problem if problem.startswith("no fit") else f"no power law: {problem}"
    alpha, se = fit.value("alpha"), fit.se("alpha")
    text = f"α = {alpha:.2f} ± {se:.2f}"
    if not floor_fixed:
        text += f", L0 = {fit.value('L0'):.3g}"
    return text


def plot_fit(ax, fit: FitSummary, depths, colour, label: str, *, floor_fixed: bool = False) -> bool:
    """Draw the fitted law (dashed); if it failed, a legend entry saying why."""
    if not len(depths):
        return False
    problem = fit_problem(fit)
    if problem is not None:
        note(ax, f"{label}: not drawn, {problem}")
        return False
    grid = np.unique(np.geomspace(min(depths), max(depths), 60).round().astype(int))
    ax.plot(grid, fit.fit.predict(grid), ls="--", lw=1.1, color=colour,
            label=f"{label}: {fit_label(fit, floor_fixed=floor_fixed)}")
    return True


def plot_bound(ax, bound: dict | None, colour, label: str | None) -> None:
    if not bound:
        return
    ax.axhline(bound["single_head_loss"], color=colour, ls="-.", lw=0.9, alpha=0.8, label=label)


def legend(ax, **kwargs) -> None:
    """Legend inside the axes; outside on the right when it has many entries."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    if len(handles) > 5:
        kwargs = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0.0}
        figure = ax.figure
        if len(figure.axes) == 1 and not getattr(figure, "_idepth_widened", False):
            width, height = figure.get_size_inches()
            figure.set_size_inches(width * 1.4, height)  # room for the legend, the axes keep their size
            figure._idepth_widened = True
    ax.legend(fontsize=7, frameon=False, **kwargs)


#: points between a legend box and the nearest data vertex (a marker, 4 points, and its cap)
LEGEND_CLEARANCE = 6.0


def _data_points(ax) -> np.ndarray:
    """Display coordinates of the vertices of the panel's lines inside it."""
    points = [line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
              for line in ax.get_lines() if line.get_visible() and len(line.get_xydata())]
    if not points:
        return np.empty((0, 2))
    xy = np.concatenate(points)
    xy = xy[np.all(np.isfinite(xy), axis=1)]
    box = ax.bbox
    return xy[(xy[:, 0] >= box.x0) & (xy[:, 0] <= box.x1) & (xy[:, 1] >= box.y0) & (xy[:, 1] <= box.y1)]


def _renderer(fig):
    """The renderer of the figure drawn (its layout done) on an Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def legend_covers_data(ax, renderer=None) -> bool:
    """Whether the (widened) legend box contains a vertex of the panel's lines."""
    legend = ax.get_legend()
    if legend is None or not legend.get_visible():
        return False
    renderer = renderer or _renderer(ax.figure)
    box = legend.get_window_extent(renderer).padded(LEGEND_CLEARANCE * ax.figure.dpi / 72.0)
    xy = _data_points(ax)
    return bool(np.any((xy[:, 0] >= box.x0) & (xy[:, 0] <= box.x1) & (xy[:, 1] >= box.y0) & (xy[:, 1] <= box.y1)))


def legends_clear_of_data(fig) -> None:
    """Move every legend that covers data below its panel (offset in points)."""
    import matplotlib.transforms as transforms

    for _ in range(len(fig.axes) + 1):  # moving one legend re-flows the layout, which can bring another onto data
        renderer = _renderer(fig)
        covering = [ax for ax in fig.axes if legend_covers_data(ax, renderer)]
        if not covering:
            return
        for ax in covering:
            ax.get_legend().remove()
            handles, labels = ax.get_legend_handles_labels()
            below = (ax.bbox.y0 - ax.get_tightbbox(renderer).y0) * 72.0 / fig.dpi + 4.0  # points
            ncol = 2 if len(labels) > 3 and max(map(len, labels)) <= 45 else 1
            ax.legend(handles, labels, fontsize=7, frameon=False, loc="upper center", ncol=ncol,
                      bbox_to_anchor=(0.5, 0.0),
                      bbox_transform=transforms.offset_copy(ax.transAxes, fig=fig, y=-below, units="points"))


def sizes(family) -> str:
    return f"d = {family.d}, N = {family.N}, P = {family.P}"


def regime(family) -> str:
    return family.regime.split(":")[0] + " training" if ":" in family.regime else family.regime


def missing(ctx, family_name: str) -> str:
    if not ctx.ran(family_name):
        return f"{family_name}: not run (not requested with --only)"
    return f"{family_name}: no finished runs in the store"
