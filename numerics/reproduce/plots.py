r"""Figures of the reproduction (matplotlib, Agg backend), read from the sweep's cell records keyed
like the table (:func:`numerics.reproduce.table.by_key`).

Every curve is an adjusted loss (method − oracle ridge with the true ``σ_τ``, docs/model.md); the
Bayes-optimal floor (docs/model.md) is drawn in every panel.  Figure numbers follow the paper
(§4): 1 loss vs depth, 2 per-variance profiles, 3 categorical noise, 4 weights of a 4-layer FULL
model, 5 read-out after each layer, 7 per-variance profiles of those read-outs.

Fig. 1 and the depth study beyond the paper draw what a reader compares across depths: each
model's and baseline's gap to the Bayes floor (adjusted loss − Bayes, paired ± SE, from the
:data:`numerics.reproduce.table.Table`), on a log axis (:func:`gap_panels`).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from numerics.data import Noise  # noqa: E402
from numerics.io import atomic_write_bytes  # noqa: E402
from numerics.reproduce.table import BASE_NAMES, Key, Table, depths_of  # noqa: E402
from numerics.reproduce.table import MODEL_NAMES as NAMES  # noqa: E402

COLORS = {
    "gdpp": "tab:green",
    "diag": "tab:blue",
    "full": "tab:red",
    "ConstRR": "tab:gray",
    "AdaRR": "tab:olive",
    "TunedRR": "tab:purple",
    "Bayes": "black",
}
STYLES = {"ConstRR": ":", "AdaRR": "-.", "TunedRR": "--", "Bayes": "-"}
LINTHRESH = 1e-4  # symlog: adjusted losses can be slightly negative (evaluation noise) at σ_max = 0
#: y range of loss panels: a diverging (heavy-tailed) model would otherwise stretch the axis over
#: 30 decades; its points are drawn at the edge and listed in report.md.
YLIM = (-1e-3, 10.0)
#: How far below a gap panel's smallest positive gap its bottom edge lies, where a gap ≤ 0 is drawn.
CLIP = 0.1
CLIPPED = "▽, bottom edge: gap ≤ 0"


def save(fig: Any, title: str, path: str | Path, fontsize: int = 10) -> None:
    """Every figure's ending: its title, its layout, and its PNG written atomically."""
    fig.suptitle(title, fontsize=fontsize)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


def _yscale(ax: Any) -> None:
    ax.set_yscale("symlog", linthresh=LINTHRESH)
    ax.set_ylim(*YLIM)


def legend(axes: np.ndarray, size: int) -> None:
    """Legend on the first panel that has labelled curves."""
    for ax in axes:
        if ax.get_visible() and ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=size)
            return


def _grid(k: int, ncols: int = 4, w: float = 3.4, h: float = 2.8) -> tuple[Any, np.ndarray]:
    ncols = min(ncols, k)
    nrows = -(-k // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(w * ncols, h * nrows), squeeze=False)
    for ax in axes.ravel()[k:]:
        ax.set_visible(False)
    return fig, axes.ravel()


def gap_panels(
    t: Table,
    kinds: tuple[str, ...],
    bases: tuple[str, ...],
    noises: list[str],
    title: str,
    path: str | Path,
    **grid: float,
) -> None:
    """One panel per noise setting: the gap to the Bayes floor (adjusted loss − Bayes, paired ± SE)
    of each model kind of ``kinds`` against depth, and of each baseline of ``bases`` as a
    horizontal line, on a log axis.  A gap ≤ 0 (at the floor up to evaluation noise, such as every
    baseline at σ_max = 0) has no place on a log axis: it is clipped to the panel's bottom edge,
    :data:`CLIP` times its smallest positive gap, and marked there with an open triangle (a
    baseline's line lies on that edge).  The legend takes the first free slot of the grid, if any.
    ``grid``: the panels' layout (:func:`_grid`); ``title`` and ``path``: :func:`_finish`'s."""
    fig, axes = _grid(len(noises), **grid)
    for ax, nz in zip(axes, noises):
        mine = {
            k: e.minus_bayes
            for k, e in t.items()
            if k[2] == nz and k[0] in kinds + bases and e.minus_bayes is not None
        }
        pos = [g for g in mine.values() if g > 0]
        lo, hi = CLIP * min(pos, default=1.0), min(2 * max(pos, default=1.0), YLIM[1])
        for m in kinds:
            Ls = depths_of(mine, m, nz)
            if Ls:
                g = np.array([mine[(m, L, nz)] for L in Ls])
                se = [t[(m, L, nz)].minus_bayes_se or 0.0 for L in Ls]
                ax.errorbar(
                    Ls, np.maximum(g, lo), se, color=COLORS[m], marker="o", ms=3, label=NAMES[m]
                )
                low = [L for L, v in zip(Ls, g) if v <= 0]
                ax.plot(low, [lo] * len(low), "v", mfc="none", color=COLORS[m], ms=6)
        for b in (b for b in bases if (b, 0, nz) in mine):
            ax.axhline(max(mine[(b, 0, nz)], lo), color=COLORS[b], ls=STYLES[b], lw=1, label=b)
        if min(mine.values(), default=1.0) <= 0:
            ax.text(0.98, 0.97, CLIPPED, transform=ax.transAxes, ha="right", va="top", fontsize=6)
        ax.set_yscale("log")
        ax.set_ylim(lo / 1.5, hi)
        ax.set_title(nz, fontsize=9)
        ax.set_xlabel("layers")
    if len(noises) < len(axes):  # the legend in the first free slot, clear of every curve
        axes[len(noises)].set_visible(True)
        axes[len(noises)].axis("off")
        axes[len(noises)].legend(*axes[0].get_legend_handles_labels(), loc="center")
    else:
        legend(axes, 6)
    _finish(fig, axes, "loss − Bayes loss", title, path, size=None)


def fig1(t: Table, noises: list[str], path: str | Path) -> None:
    """Every model's gap to the Bayes floor against depth, one panel per noise setting, with the
    baselines' gaps as horizontal lines (:func:`gap_panels`)."""
    title = (
        "Fig. 1: gap to the Bayes floor (adjusted loss − Bayes, paired ± SE) vs depth, log axis; "
        "lines: baselines; ▽ on the bottom edge: gap ≤ 0"
    )
    gap_panels(t, tuple(NAMES), BASE_NAMES[:3], noises, title, path)


def _finish(
    fig: Any, axes: Any, ylabel: str, title: str, path: str | Path, size: int | None = 6
) -> None:
    """Shared ending of a panel figure: y label, one legend of font ``size`` (``None``: the figure
    has its legend), title, layout, atomic save."""
    axes[0].set_ylabel(ylabel)
    if size is not None:
        legend(axes, size)
    save(fig, title, path)


def _profile_panel(
    ax: Any, rec: dict, base: dict | None, noise: str, curves: list[tuple[str, int, Any]]
) -> None:
    for model, L, color in curves:
        if (model, L, noise) in rec:
            p = rec[(model, L, noise)].profile
            label = f"{NAMES[model]}-{L}"
            ax.plot(p["sigma"], p["loss"][-1], color=color, marker=".", ms=3, label=label)
    if base is not None:
        pr = base["profile"]
        for b in BASE_NAMES:
            ax.plot(pr["sigma"], pr[b]["loss"], color=COLORS[b], ls=STYLES[b], lw=1, label=b)
    nzp = Noise.parse(noise)
    for v in nzp.values if nzp.kind == "categorical" else [nzp.sigma_max]:
        ax.axvline(v, color="0.7", lw=0.8, ls=":")
    _yscale(ax)
    ax.set_xlabel("σ")
    ax.set_title(noise, fontsize=9)


def fig2(
    rec: dict[Key, Any], base: dict, noises: list[str], L: int, focus: str, path: str | Path
) -> None:
    """Top: per-variance profiles of the L-layer models for each uniform setting. Bottom:
    ``focus`` across depths."""
    uni = [nz for nz in noises if Noise.parse(nz).kind == "uniform"]
    top = [(m, L, COLORS[m]) for m in NAMES]
    panels = [(nz, top, None) for nz in uni]
    cmap = plt.get_cmap("viridis")
    for m in NAMES:
        Ls = depths_of(rec, m, focus)
        bottom = [(m, d, cmap(i / max(len(Ls) - 1, 1))) for i, d in enumerate(Ls)]
        panels.append((focus, bottom, m))
    fig, axes = _grid(len(panels))
    for ax, (nz, curves, m) in zip(axes, panels):
        _profile_panel(ax, rec, base.get(nz), nz, curves)
        if m is not None:
            ax.set_title(f"{NAMES[m]}, {nz}, across depths", fontsize=9)
            ax.legend(fontsize=5)
    title = (
        f"Fig. 2: per-variance profiles on σ ∈ [0, σ_max+1] (dotted: σ_max); "
        f"{L}-layer models, and {focus} across depths"
    )
    _finish(fig, axes, "adjusted loss", title, path)


def fig3(rec: dict[Key, Any], base: dict, noises: list[str], L: int, path: str | Path) -> None:
    """Profiles for categorical noise, σ beyond and between the training levels (dotted)
    included."""
    cat = [nz for nz in noises if Noise.parse(nz).kind == "categorical"]
    fig, axes = _grid(max(len(cat), 1), ncols=2, w=5, h=3.5)
    for ax, nz in zip(axes, cat):
        _profile_panel(ax, rec, base.get(nz), nz, [(m, L, COLORS[m]) for m in NAMES])
        ax.legend(fontsize=6)
    axes[0].set_ylabel("adjusted loss")
    title = "Fig. 3: categorical noise (dotted: training levels;\nevery other σ is unseen)"
    save(fig, title, path, fontsize=9)


def fig4(P: np.ndarray, Q: np.ndarray, title: str, path: str | Path) -> None:
    """Heat maps of ``P^l`` and ``Q^l`` (head 0) of every layer, symmetric colour scale per row."""
    L = P.shape[0]
    fig, axes = plt.subplots(2, L, figsize=(2.6 * L, 5.2), squeeze=False)
    for row, (name, A) in enumerate((("P", P), ("Q", Q))):
        for l in range(L):
            M, ax = A[l, 0], axes[row, l]
            v = float(np.max(np.abs(M))) or 1.0
            im = ax.imshow(M, cmap="RdBu_r", vmin=-v, vmax=v)
            ax.set_title(f"{name}^{l + 1} (max |·| {v:.2g})", fontsize=8)
            ax.set(xticks=[], yticks=[])
            fig.colorbar(im, ax=ax, fraction=0.046)
    save(fig, title, path)


def _model_panels(
    rec: dict[Key, Any], focus: str, L: int, xlabel: str, title: str, path: str | Path, draw: Any
) -> None:
    """A panel per model kind for its L-layer cell at ``focus``, drawn by ``draw(ax, model,
    cell)``."""
    fig, axes = _grid(len(NAMES), ncols=3, w=4, h=3.2)
    for ax, m in zip(axes, NAMES):
        if (m, L, focus) in rec:
            draw(ax, m, rec[(m, L, focus)])
            _yscale(ax)
            ax.set_title(f"{NAMES[m]}-{L}, {focus}", fontsize=9)
            ax.set_xlabel(xlabel)
    _finish(fig, axes, "adjusted loss", title, path, size=5)


def fig5(rec: dict[Key, Any], base: dict, focus: str, L: int, path: str | Path) -> None:
    """Read-out after each layer of the L-layer models: mean ± std over the cell and its seed
    replicas (those that pass the tail rules), the cell's own model, and each depth's own final
    loss for comparison."""

    def draw(ax: Any, m: str, c: Any) -> None:
        x = np.arange(L + 1)
        if c.replicas:  # the cell and its seed replicas that pass the tail rules
            r = c.replicas
            s = np.asarray([v for v, f in zip(r["loss"], r["failed"]) if f is None])
            if len(s):
                label = f"mean ± std over {len(s)} of {len(r['loss'])} seeds"
                ax.errorbar(
                    x, s.mean(0), s.std(0), color=COLORS[m], capsize=2, alpha=0.6, label=label
                )
        ax.plot(
            x, c.eval["layers"]["loss"], color=COLORS[m], marker="o", ms=3, label="the cell's model"
        )
        Ls = depths_of(rec, m, focus)
        finals = [rec[(m, d, focus)].eval["loss"] for d in Ls]
        ax.plot(Ls, finals, "k^", ms=4, label="L-layer model, final")
        for b, r in (base[focus]["methods"] if focus in base else {}).items():
            ax.axhline(r["loss"], color=COLORS[b], ls=STYLES[b], lw=1, label=b)

    title = "Fig. 5: adjusted loss of the prediction read out after each layer"
    _model_panels(rec, focus, L, "read-out after layer l", title, path, draw)


def fig7(rec: dict[Key, Any], base: dict, focus: str, L: int, path: str | Path) -> None:
    """Per-variance profiles of every intermediate read-out of the L-layer models."""
    cmap = plt.get_cmap("viridis")

    def draw(ax: Any, m: str, c: Any) -> None:
        p = c.profile
        for l in range(1, L + 1):
            color = cmap((l - 1) / max(L - 1, 1))
            ax.plot(p["sigma"], p["loss"][l], color=color, lw=1, label=f"layer {l}")
        if focus in base:
            pr = base[focus]["profile"]
            ax.plot(pr["sigma"], pr["Bayes"]["loss"], "k-", lw=1, label="Bayes")

    title = "Fig. 7: per-variance profiles of the read-out after each layer"
    _model_panels(rec, focus, L, "σ", title, path, draw)


def fig_depth(t: Table, noises: list[str], path: str | Path) -> None:
    """Beyond the paper: DIAG/FULL gap to the Bayes floor against depth (paired, ± SE), with
    AdaRR's and TunedRR's (:func:`gap_panels`)."""
    title = (
        "Beyond the paper: gap to the Bayes-optimal floor against depth (log axis; ▽ on the "
        "bottom edge: gap ≤ 0)"
    )
    gap_panels(t, ("diag", "full"), ("AdaRR", "TunedRR"), noises, title, path, ncols=2, w=5, h=3.5)
