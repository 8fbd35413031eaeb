"""Drawing the swim-lane chart of `netemu log timeline` (matplotlib, imported only here):
the lanes, messages, drops, compute spans and outages are collected from the log by
netemu.report.logtools.timeline and handed over as plain tuples."""

from __future__ import annotations

from pathlib import Path

from netemu.errors import LogError, writing
from netemu.terminal import printable

__all__ = ["draw_timeline"]


def draw_timeline(out: Path, order: list[str], arrows: list, drops: list, spans: list, outages: list, *,
                  left: float, right: float, aggregate: bool, title: str) -> Path:
    """One lane per actor in `order`; an arrow per (send t, src, delivery t, dst, _) in `arrows`,
    a cross per dropped one (coloured by reason), a bar per (start, duration, actor) compute
    span, a shaded span per (start, end, src, dst) outage on the sender's lane; x from `left`
    to `right`; with `aggregate`, deliveries and drops per lane in 100 time bins."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    y = {n: i for i, n in enumerate(order)}
    fig, ax = plt.subplots(figsize=(10, max(2.5, 0.35 * len(order) + 1.2)))
    for t0, dur, a in spans:
        ax.broken_barh([(t0, dur)], (y[a] - 0.15, 0.3), color="tab:green", alpha=0.5)
    for i, (t0, t1, src, dst) in enumerate(outages):  # shaded on the sender's lane, clipped to the window
        t0c, t1c = max(t0, left), min(t1, right)
        if t1c <= t0c:
            continue
        ax.broken_barh([(t0c, t1c - t0c)], (y[src] - 0.45, 0.9), color="tab:gray", alpha=0.25,
                       label="link outage" if i == 0 else None)
        ax.text(t0c, y[src] - 0.3, printable(f" down: {src}->{dst}"), fontsize="x-small", va="center", color="dimgray")
    colors = {"loss": "tab:red", "outage": "tab:purple", "expired": "tab:orange", "crash": "black"}
    if aggregate:
        import numpy as np

        edges = np.linspace(left, right if right > left else left + 1.0, 101)
        width = edges[1] - edges[0]
        for label, items, color, dy in (("delivered", arrows, "tab:blue", 0.0), ("dropped", drops, "tab:red", 0.2)):
            for lane in order:
                times = [x[2] for x in items if x[3] == lane]
                if not times:
                    continue
                counts, _ = np.histogram(times, bins=edges)
                top = counts.max()
                ax.bar(edges[:-1], counts / top * 0.35 if top else counts, width=width, bottom=y[lane] + 0.4 - dy,
                       align="edge", color=color, alpha=0.7, label=label if lane == order[0] else None)
        ax.legend(loc="upper right", fontsize="small")
    else:
        for ts, src, td, dst, _ in arrows:
            ax.annotate("", xy=(td, y[dst]), xytext=(ts, y[src]),
                        arrowprops={"arrowstyle": "->", "lw": 0.6, "alpha": 0.6, "color": "tab:blue"})
        for reason in sorted({str(d[4]) for d in drops}):
            pts = [d for d in drops if str(d[4]) == reason]
            for ts, src, td, dst, _ in pts:
                ax.plot([ts, td], [y[src], y[dst]], color=colors.get(reason, "gray"), lw=0.6, ls=":")
            ax.scatter([d[2] for d in pts], [y[d[3]] for d in pts], marker="x", color=colors.get(reason, "gray"),
                       label=printable(f"dropped: {reason}"), zorder=3)
        if drops or outages:
            ax.legend(loc="upper right", fontsize="small")
    ax.set_yticks(range(len(order)), [printable(n) for n in order])
    ax.invert_yaxis()
    ax.set_xlim(left, right if right > left else left + 1.0)
    ax.set_xlabel("virtual time (s)")
    title = printable(title)
    how = "aggregated per time bin" if aggregate else f"t = {left:g} .. {right:g} s"
    ax.set_title(f"message timeline {title}: {how}".strip(), fontsize="medium")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    try:
        with writing(out):  # disk full, read-only, I/O error: WriteFailed (exit 1), not bad input
            fig.savefig(out, dpi=110, metadata={"Software": None} if Path(out).suffix == ".png" else None)
    except OSError as exc:
        raise LogError(f"{out}: cannot write the timeline ({exc.strerror or exc})") from None
    except ValueError as exc:  # an image format matplotlib does not write (--out t.file)
        raise LogError(f"--out {out}: {exc}") from None
    finally:
        plt.close(fig)
    return Path(out)
