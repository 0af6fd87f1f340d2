"""The report's PNG plots (matplotlib, Agg backend: no display needed)."""
import functools
import math
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402

from . import metrics as M  # noqa: E402

_P = ParamSpec("_P")
_R = TypeVar("_R")


def literal_text(plot: Callable[_P, _R]) -> Callable[_P, _R]:
    """Titles and legends hold run and model names from the rows: a "$" in one stays a dollar sign
    rather than starting mathtext (which raises on "$x^{$"). Set per plot, not for the process."""
    @functools.wraps(plot)
    def wrapped(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with matplotlib.rc_context({"text.parse_math": False}):
            return plot(*args, **kwargs)
    return wrapped


CURVE_PS = [i / 20 for i in range(0, 61)]  # 0 to 3 in steps of 0.05


def _times_axis(axis):
    """A log axis labelled 0.5x, 1x, 2x rather than in powers of ten."""
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    axis.set_minor_formatter(NullFormatter())


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


@literal_text
def fast_p_curve(run, path) -> str:
    """fast_p against p (0 to 3) over the run's judged episodes, the reported p marked."""
    fig, ax = plt.subplots(figsize=(6, 4))
    ys = M.fast_p_curve(run.judged, CURVE_PS)
    if run.judged:
        ax.plot(CURVE_PS, ys, label=run.name, drawstyle="steps-post")
        ax.scatter(M.FAST_P, M.fast_p_curve(run.judged, M.FAST_P), zorder=3)
    else:
        ax.text(0.5, 0.5, "no judged episode", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("p (speedup over eager)")
    ax.set_ylabel("fast_p (share of episodes)")
    ax.set_ylim(0, 1.02)
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_title(f"fast_p: {run.name} ({len(run.judged)} judged episodes)")
    return _save(fig, path)


@literal_text
def speedup_histogram(run, path) -> str:
    """Speedups over eager of the correct, timed submissions, on a log axis (1x marked)."""
    fig, ax = plt.subplots(figsize=(6, 4))
    s = [e["speedup_eager"] for e in run.judged if e["speedup_eager"]]
    if s:
        lo, hi = math.log10(min(s + [0.5])), math.log10(max(s + [2.0]))
        bins = [10 ** (lo + (hi - lo) * i / 30) for i in range(31)]
        ax.hist(s, bins=bins)
        ax.set_xscale("log")
        ax.set_xticks([t for t in (0.25, 0.5, 1, 2, 4, 8, 16) if bins[0] <= t <= bins[-1]])
        _times_axis(ax.xaxis)
        ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    else:
        ax.text(0.5, 0.5, "no correct timed submission", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("speedup over eager (log)")
    ax.set_ylabel("episodes")
    ax.set_title(f"speedups: {run.name} ({len(s)} correct timed)")
    return _save(fig, path)


@literal_text
def comparison(run_a, run_b, path) -> str:
    """Left: both runs' fast_p curves on the episodes both judged. Right: paired speedups (B vs A)."""
    a_by, b_by = run_a.by_key(), run_b.by_key()
    keys = sorted(set(a_by) & set(b_by), key=lambda k: (k[0], str(k[1])))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    for run, by in ((run_a, a_by), (run_b, b_by)):
        left.plot(CURVE_PS, M.fast_p_curve([by[k] for k in keys], CURVE_PS), label=run.name, drawstyle="steps-post")
    left.set_xlabel("p (speedup over eager)")
    left.set_ylabel("fast_p")
    left.set_ylim(0, 1.02)
    left.axvline(1.0, color="grey", lw=0.8, ls="--")
    left.legend()
    left.set_title(f"fast_p on {len(keys)} paired episodes")
    # A failed submission is drawn at 0.1x so that pass/fail flips show up at the plot's edge.
    floor = 0.1
    xs = [a_by[k]["speedup_eager"] or floor for k in keys]
    ys = [b_by[k]["speedup_eager"] or floor for k in keys]
    if keys:
        right.scatter(xs, ys, s=14)
        top = max(xs + ys + [2.0])
        right.plot([floor, top], [floor, top], color="grey", lw=0.8)
        right.set_xscale("log")
        right.set_yscale("log")
        _times_axis(right.xaxis)
        _times_axis(right.yaxis)
    right.set_xlabel(f"{run_a.name}: speedup over eager (failed = {floor}x)")
    right.set_ylabel(f"{run_b.name}: speedup over eager")
    right.set_title("paired episodes")
    return _save(fig, path)
