"""One way to draw a figure, for the labs and for every bench.

A lab's analysis and a bench both end with a PNG: matplotlib without a display (the Agg
backend), one figure of one or more axes, laid out tight and written at a fixed
resolution, then closed so that a long run does not keep every figure in memory.
`figure` is that frame; the caller draws on the axes it yields:

    with figure(os.path.join(out, "lab03.png"), size=(7, 4)) as (fig, ax):
        ax.bar(...)

`cost_curves` is what the benches draw with it: a *cost curve* is one measure (a rate, a
latency percentile, a memory size) against the size of the load (partitions, connections,
members), one line per broker, each point the median of the runs at that size. On
logarithmic axes a cost that grows linearly with the load is a line of slope 1, and a
square law is a line of slope 2: the shape says at a glance what grows with what.
"""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Iterator, Sequence


@contextlib.contextmanager
def figure(
    path: str, rows: int = 1, cols: int = 1, *, size: tuple[float, float] = (7, 4), dpi: int = 100
) -> Iterator[tuple]:
    """A figure of `rows` x `cols` axes, written to `path` (PNG) when the block ends."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(rows, cols, figsize=size)
    try:
        yield fig, axes
        fig.tight_layout()
        fig.savefig(path, dpi=dpi)
    finally:
        plt.close(fig)


def cost_curves(
    path: str,
    rows: Sequence[dict],
    x: str,
    measures: dict[str, str],
    *,
    series: str = "broker",
    xlabel: str | None = None,
    cols: int = 3,
    logy: bool = True,
) -> None:
    """Each measure of `measures` (row key -> title) against `x`, one line per `series`.

    Rows without the measure (None or absent) are left out; each point is the median of
    the rows at that `x`. The x axis is logarithmic, the y axis too unless `logy` is false.
    """
    count = len(measures)
    cols = min(cols, count)
    grid = -(-count // cols)
    with figure(path, grid, cols, size=(5 * cols, 4 * grid), dpi=90) as (_fig, axes):
        flat = list(axes.flat) if hasattr(axes, "flat") else [axes]
        for (metric, title), ax in zip(measures.items(), flat, strict=False):
            for name in dict.fromkeys(r[series] for r in rows):
                runs: dict[float, list[float]] = {}
                for r in rows:
                    if r[series] == name and r.get(metric) is not None:
                        runs.setdefault(r[x], []).append(r[metric])
                if runs:
                    points = sorted(runs)
                    medians = [statistics.median(runs[p]) for p in points]
                    ax.plot(points, medians, marker="o", label=str(name))
            ax.set(title=title, xlabel=xlabel or x, xscale="log")
            if logy:
                ax.set_yscale("log")
            if ax.get_legend_handles_labels()[0]:
                ax.legend()
        for ax in flat[count:]:
            ax.set_visible(False)
