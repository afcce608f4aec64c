"""The guide's figures, drawn by the library's own plot code: ``python docs/figures.py``.

Writes PNG files to ``docs/_static/figures/`` (committed; the build does not run this):

* ``fold_maps.png`` (the methods): a ``runs`` net on 8 alternating points, the first and the
  last layer's map with its centre and fold point (:func:`lncapacity.plot.fold_maps`);
* ``ladder_rank.png`` (the methods, ``pma``): the ``pma`` net on the same points, every
  point's place through the layers, merges drawn as lines that meet
  (:func:`lncapacity.plot.ladder`, rank mode);
* ``circles.png`` (the methods, ``circle``): the same points through a circle net,
  LayerNorm's output on its circle after each layer (:func:`lncapacity.plot.circles`);
* ``float_gap.png`` (floats): the smallest label gap after each layer of ``pma`` and
  ``runs`` on 140 alternating points, against float64's and float32's resolution, from
  :func:`lncapacity.explain.explain` (ball arithmetic);
* ``capacity.png`` (capacity): the parameters of each certified net against ``m``, read
  from ``docs/tables/capacity.md``, each with its RMSNorm twin, and the counting bound.

Every figure is a picture of exact, certified nets; the data are fixed, so a rerun draws
the same pictures.
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import lncapacity
from lncapacity import explain, plot
from lncapacity.plot.common import OKABE_ITO, SLIDE

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "_static" / "figures"
META = {"Software": None}  # no version stamp: a rerun writes the same bytes


def alternating(m: int) -> tuple[list[list[int]], list[int]]:
    """``m`` collinear points ``0, 1, ...`` with labels ``0, 1, 0, 1, ...``."""
    return [[i] for i in range(m)], [i % 2 for i in range(m)]


def save(fig: object, name: str) -> None:
    path = OUT / name
    fig.savefig(path, dpi=110, metadata=META)  # type: ignore[attr-defined]
    print(f"wrote {path.relative_to(ROOT)}")


def methods() -> None:
    X, y = alternating(8)
    runs = lncapacity.build(X, y, method="runs")
    save(plot.fold_maps(runs, X, y, layers=[1, runs.depth]), "fold_maps.png")
    pma = lncapacity.build(X, y, method="pma")
    ladder = plot.ladder(pma, X, y, mode="rank")
    ladder.set_size_inches(9, 5.6)  # the article's width: the labels stay legible
    save(ladder, "ladder_rank.png")
    circle = lncapacity.build(X, y, method="circle")
    save(plot.circles(circle, X, y), "circles.png")


def float_gap() -> None:
    import matplotlib.pyplot as plt

    X, y = alternating(140)
    with plt.rc_context(SLIDE):
        fig, ax = plt.subplots(figsize=(8, 4.2), layout="constrained")
        for colour, method in zip(OKABE_ITO, ("pma", "runs"), strict=False):
            net = lncapacity.build(X, y, method=method)
            account = explain.explain(net, X, y)
            gaps = [account["input"]["label_gap"]]
            gaps += [layer["after"]["label_gap"] for layer in account["layers"]]
            ax.semilogy(
                range(len(gaps)), gaps, color=colour, label=f"{method} ({net.depth} layers)"
            )
        for value, name in ((2.0**-52, "float64: 2^-52"), (2.0**-23, "float32: 2^-23")):
            ax.axhline(value, color="0.4", linestyle="--", linewidth=1)
            ax.annotate(name, (1, value), xytext=(0, 3), textcoords="offset points", color="0.3")
        ax.set(
            title="140 alternating points: the smallest label gap after each layer",
            xlabel="layer",
            ylabel="smallest label gap / amplitude",
        )
        ax.legend(loc="lower left", bbox_to_anchor=(0.02, 0.12))
        save(fig, "float_gap.png")
        plt.close(fig)


TWINS = {"ln3": "rms (width 2)", "ln-g": "rms-g"}
"""The capacity table's RMSNorm row of each LayerNorm row (``ln-g, depth d``: ``rms-g, depth
d``)."""


def capacity() -> None:
    """Parameters against ``m``, each LayerNorm net with its RMSNorm twin (same colour, dotted,
    open squares: two features a group where LayerNorm has three)."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    rows: dict[tuple[int, str], list[tuple[int, int]]] = {}
    table = (ROOT / "docs" / "tables" / "capacity.md").read_text(encoding="utf-8")
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != 10 or not re.fullmatch(r"[\d,]+", cells[0]):
            continue
        m, k, net, params = int(cells[0].replace(",", "")), int(cells[1]), cells[2], cells[6]
        digits = params.lstrip(">= ").replace(",", "")
        if digits.isdigit() and not net.startswith("linear"):
            rows.setdefault((k, net), []).append((m, int(digits)))
    with plt.rc_context(SLIDE):
        fig, axes = plt.subplots(1, 2, figsize=(8.5, 4.3), layout="constrained", sharey=True)
        for ax, k in zip(axes, (2, 10), strict=True):
            nets = [n for kk, n in rows if kk == k and not n.startswith("rms")]
            for colour, net in zip(OKABE_ITO, nets, strict=False):
                ms, ps = zip(*sorted(rows[k, net]), strict=True)
                style = {"linestyle": "--"} if net == "counting bound" else {"marker": "o"}
                ax.loglog(ms, ps, color=colour, label=net, **style)
                twin = TWINS.get(net.split(",")[0], "") + net[len(net.split(",")[0]) :]
                if (k, twin) in rows:  # its RMSNorm twin: the same colour, open squares
                    ms, ps = zip(*sorted(rows[k, twin]), strict=True)
                    ax.loglog(ms, ps, color=colour, marker="s", mfc="none", linestyle=":")
            ax.set(title=f"{k} classes", xlabel="points m (random labels in R^3)")
        axes[0].set_ylabel("parameters of the certified net")
        handles, labels = axes[1].get_legend_handles_labels()
        handles.append(Line2D([], [], color="0.3", marker="s", mfc="none", linestyle=":"))
        labels.append("its RMSNorm twin")
        fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=10)
        save(fig, "capacity.png")
        plt.close(fig)


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    methods()
    float_gap()
    capacity()
