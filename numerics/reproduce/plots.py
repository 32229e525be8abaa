r"""Figures of the reproduction (matplotlib, Agg backend), read from the sweep's cell metrics.

Every curve is an adjusted loss (method − oracle ridge with the true ``σ_τ``, docs/model.md); the
Bayes-optimal floor (docs/model.md) is drawn in every panel.  Figure numbers follow the paper
(§4): 1 loss vs depth, 2 per-variance profiles, 3 categorical noise, 4 weights of a 4-layer FULL
model, 5 read-out after each layer, 7 per-variance profiles of those read-outs.
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

COLORS = {
    "gdpp": "tab:green",
    "diag": "tab:blue",
    "full": "tab:red",
    "ConstRR": "tab:gray",
    "AdaRR": "tab:olive",
    "TunedRR": "tab:purple",
    "Bayes": "black",
}
NAMES = {"gdpp": "GD++", "diag": "DIAG", "full": "FULL"}
STYLES = {"ConstRR": ":", "AdaRR": "-.", "TunedRR": "--", "Bayes": "-"}
LINTHRESH = 1e-4  # symlog: adjusted losses can be slightly negative (evaluation noise) at σ_max = 0
#: y range of loss panels: a diverging (heavy-tailed) model would otherwise stretch the axis over 30 decades;
#: its points are drawn at the edge and listed in report.md.
YLIM = (-1e-3, 10.0)


def save(fig: Any, path: str | Path) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


def _cell(cells: dict, model: str, L: int, noise: str) -> dict | None:
    return next(
        (m for m in cells.values() if m.model == model and m.layers == L and m.noise == noise), None
    )


def _depths(cells: dict, model: str, noise: str) -> list[int]:
    return sorted(m.layers for m in cells.values() if m.model == model and m.noise == noise)


def _yscale(ax: Any) -> None:
    ax.set_yscale("symlog", linthresh=LINTHRESH)
    ax.set_ylim(*YLIM)


def _legend(axes: np.ndarray, size: int) -> None:
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


def _baseline_lines(ax: Any, base: dict | None, x: Any = None) -> None:
    if base is None:
        return
    for b, r in base["methods"].items():
        ax.axhline(r["loss"], color=COLORS[b], ls=STYLES[b], lw=1, label=b)


def fig1(cells: dict, base: dict, noises: list[str], path: str | Path) -> None:
    """Adjusted loss against depth, one panel per noise setting, with the baselines as horizontal lines."""
    fig, axes = _grid(len(noises))
    for ax, nz in zip(axes, noises):
        _depth_curves(ax, cells, NAMES, nz, "loss", "se", max_depth=7)
        _baseline_lines(ax, base.get(nz))
        _depth_axis(ax, nz)
    _finish(
        fig,
        axes,
        "adjusted loss",
        "Fig. 1: adjusted loss vs depth (symlog); lines: baselines and the Bayes floor",
        path,
    )


def _depth_curves(
    ax: Any, cells: dict, kinds: Any, noise: str, key: str, se: str, max_depth: int | None = None
) -> None:
    """One error-bar curve per model kind: ``eval[key] ± eval[se]`` against depth (depths ≤ ``max_depth`` if any)."""
    for m in kinds:
        Ls = _depths(cells, m, noise)
        if max_depth is not None:
            Ls = [L for L in Ls if L <= max_depth] or Ls
        if Ls:
            e = [_cell(cells, m, L, noise).eval for L in Ls]
            ax.errorbar(
                Ls,
                [x[key] for x in e],
                [x[se] for x in e],
                color=COLORS[m],
                marker="o",
                ms=3,
                label=NAMES[m],
            )


def _depth_axis(ax: Any, noise: str) -> None:
    _yscale(ax)
    ax.set_title(noise, fontsize=9)
    ax.set_xlabel("layers")


def _finish(fig: Any, axes: Any, ylabel: str, title: str, path: str | Path, ncol: int = 6) -> None:
    """Shared ending of a panel figure: y label, one legend, title, layout, atomic save."""
    axes[0].set_ylabel(ylabel)
    _legend(axes, ncol)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save(fig, path)


def _profile_panel(
    ax: Any, cells: dict, base: dict | None, noise: str, curves: list[tuple[str, int, str, Any]]
) -> None:
    for model, L, label, color in curves:
        c = _cell(cells, model, L, noise)
        if c is None:
            continue
        p = c.profile
        ax.plot(p["sigma"], p["loss"][-1], color=color, marker=".", ms=3, label=label)
    if base is not None:
        pr = base["profile"]
        for b in ("ConstRR", "AdaRR", "TunedRR", "Bayes"):
            ax.plot(pr["sigma"], pr[b]["loss"], color=COLORS[b], ls=STYLES[b], lw=1, label=b)
    nzp = Noise.parse(noise)
    for v in nzp.values if nzp.kind == "categorical" else [nzp.sigma_max]:
        ax.axvline(v, color="0.7", lw=0.8, ls=":")
    _yscale(ax)
    ax.set_xlabel("σ")
    ax.set_title(noise, fontsize=9)


def fig2(cells: dict, base: dict, noises: list[str], L: int, focus: str, path: str | Path) -> None:
    """Top: per-variance profiles of the L-layer models for each uniform setting. Bottom: ``focus`` across depths."""
    uni = [nz for nz in noises if Noise.parse(nz).kind == "uniform"]
    top = [[(m, L, f"{NAMES[m]}-{L}", COLORS[m]) for m in NAMES]] * len(uni)
    cmap = plt.get_cmap("viridis")
    bottom = []
    for m in NAMES:
        Ls = _depths(cells, m, focus)
        bottom.append(
            [(m, d, f"{NAMES[m]}-{d}", cmap(i / max(len(Ls) - 1, 1))) for i, d in enumerate(Ls)]
        )
    panels = [(nz, c, None) for nz, c in zip(uni, top)] + [
        (focus, c, m) for m, c in zip(NAMES, bottom)
    ]
    fig, axes = _grid(len(panels))
    for ax, (nz, curves, m) in zip(axes, panels):
        _profile_panel(ax, cells, base.get(nz), nz, curves)
        if m is not None:
            ax.set_title(f"{NAMES[m]}, {nz}, across depths", fontsize=9)
            ax.legend(fontsize=5)
    _finish(
        fig,
        axes,
        "adjusted loss",
        f"Fig. 2: per-variance profiles on σ ∈ [0, σ_max+1] (dotted: σ_max); "
        f"{L}-layer models, and {focus} across depths",
        path,
    )


def fig3(cells: dict, base: dict, noises: list[str], L: int, path: str | Path) -> None:
    """Profiles for categorical noise, σ beyond and between the training levels (dotted) included."""
    cat = [nz for nz in noises if Noise.parse(nz).kind == "categorical"]
    fig, axes = _grid(max(len(cat), 1), ncols=2, w=5, h=3.5)
    for ax, nz in zip(axes, cat):
        _profile_panel(
            ax, cells, base.get(nz), nz, [(m, L, f"{NAMES[m]}-{L}", COLORS[m]) for m in NAMES]
        )
        ax.legend(fontsize=6)
    axes[0].set_ylabel("adjusted loss")
    fig.suptitle(
        "Fig. 3: categorical noise (dotted: training levels;\nevery other σ is unseen)", fontsize=9
    )
    fig.tight_layout()
    save(fig, path)


def fig4(P: np.ndarray, Q: np.ndarray, title: str, path: str | Path) -> None:
    """Heat maps of ``P^l`` and ``Q^l`` (head 0) of every layer, symmetric colour scale per row."""
    L = P.shape[0]
    fig, axes = plt.subplots(2, L, figsize=(2.6 * L, 5.2), squeeze=False)
    for row, (name, A) in enumerate((("P", P), ("Q", Q))):
        for l in range(L):
            M = A[l, 0]
            v = float(np.max(np.abs(M))) or 1.0
            im = axes[row, l].imshow(M, cmap="RdBu_r", vmin=-v, vmax=v)
            axes[row, l].set_title(f"{name}^{l + 1} (max |·| {v:.2g})", fontsize=8)
            axes[row, l].set_xticks([])
            axes[row, l].set_yticks([])
            fig.colorbar(im, ax=axes[row, l], fraction=0.046)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save(fig, path)


def fig5(cells: dict, base: dict, focus: str, L: int, path: str | Path) -> None:
    """Read-out after each layer of the L-layer models: mean ± std over the cell and its seed replicas (those that
    pass the tail rules), the cell's own model, and each depth's own final loss for comparison."""
    fig, axes = _grid(len(NAMES), ncols=3, w=4, h=3.2)
    for ax, m in zip(axes, NAMES):
        c = _cell(cells, m, L, focus)
        if c is None:
            continue
        x = np.arange(L + 1)
        if c.replicas:  # the cell and its seed replicas that pass the tail rules
            s = np.asarray(
                [v for v, f in zip(c.replicas["loss"], c.replicas["failed"]) if f is None]
            )
            if len(s):
                ax.errorbar(
                    x,
                    s.mean(0),
                    s.std(0),
                    color=COLORS[m],
                    capsize=2,
                    alpha=0.6,
                    label=f"mean ± std over {len(s)} of {len(c.replicas['loss'])} seeds",
                )
        ax.plot(
            x, c.eval["layers"]["loss"], color=COLORS[m], marker="o", ms=3, label="the cell's model"
        )
        Ls = _depths(cells, m, focus)
        ax.plot(
            Ls,
            [_cell(cells, m, d, focus).eval["loss"] for d in Ls],
            "k^",
            ms=4,
            label="L-layer model, final",
        )
        _baseline_lines(ax, base.get(focus))
        _yscale(ax)
        ax.set_title(f"{NAMES[m]}-{L}, {focus}", fontsize=9)
        ax.set_xlabel("read-out after layer l")
    _finish(
        fig,
        axes,
        "adjusted loss",
        "Fig. 5: adjusted loss of the prediction read out after each layer",
        path,
        ncol=5,
    )


def fig7(cells: dict, base: dict, focus: str, L: int, path: str | Path) -> None:
    """Per-variance profiles of every intermediate read-out of the L-layer models."""
    fig, axes = _grid(len(NAMES), ncols=3, w=4, h=3.2)
    cmap = plt.get_cmap("viridis")
    for ax, m in zip(axes, NAMES):
        c = _cell(cells, m, L, focus)
        if c is None:
            continue
        p = c.profile
        for l in range(1, L + 1):
            ax.plot(
                p["sigma"],
                p["loss"][l],
                color=cmap((l - 1) / max(L - 1, 1)),
                lw=1,
                label=f"layer {l}",
            )
        pr = base[focus]["profile"] if focus in base else None
        if pr:
            ax.plot(pr["sigma"], pr["Bayes"]["loss"], "k-", lw=1, label="Bayes")
        _yscale(ax)
        ax.set_title(f"{NAMES[m]}-{L}, {focus}", fontsize=9)
        ax.set_xlabel("σ")
    _finish(
        fig,
        axes,
        "adjusted loss",
        "Fig. 7: per-variance profiles of the read-out after each layer",
        path,
        ncol=5,
    )


def fig_depth(cells: dict, base: dict, noises: list[str], path: str | Path) -> None:
    """Beyond the paper: DIAG/FULL gap to the Bayes floor against depth (paired, ± SE)."""
    fig, axes = _grid(len(noises), ncols=2, w=5, h=3.5)
    for ax, nz in zip(axes, noises):
        _depth_curves(ax, cells, ("diag", "full"), nz, "minus_Bayes", "minus_Bayes_se")
        if nz in base:
            b = base[nz]["methods"]
            for k in ("AdaRR", "TunedRR"):
                ax.axhline(b[k]["minus_Bayes"], color=COLORS[k], ls=STYLES[k], lw=1, label=k)
        ax.axhline(0, color="k", lw=1, label="Bayes")
        _depth_axis(ax, nz)
    _finish(
        fig,
        axes,
        "loss − Bayes loss",
        "Beyond the paper: gap to the Bayes-optimal floor against depth",
        path,
    )


def fig_weights(traj: dict[str, np.ndarray], title: str, path: str | Path) -> None:
    """Implicit weights ``w^l`` against the ridge path ``s ↦ (Σ + sI)^{-1}α``.

    ``traj``: ``dist`` ``(L+1, B)`` relative distance of ``w^l`` to the nearest point of the ridge path,
    ``s_best`` ``(B,)`` that point's ``s`` for the last layer, ``sigma`` ``(B,)``, ``to_oracle`` ``(L+1, B)``,
    ``proj`` ``(L+1, B, 2)`` and ``path`` ``(S, B, 2)``: coordinates in the plane (OLS direction, orthogonal part of
    the oracle ridge) for a few sequences."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    L = traj["dist"].shape[0] - 1
    x = np.arange(L + 1)
    for key, lab, col in (
        ("dist", "to the ridge path (nearest s)", "tab:blue"),
        ("to_oracle", "to oracle ridge (true σ)", "tab:red"),
        ("to_ols", "to OLS", "tab:gray"),
    ):
        med = np.median(traj[key], 1)
        q1, q3 = np.quantile(traj[key], [0.25, 0.75], axis=1)
        axes[0].plot(x, med, marker="o", ms=3, color=col, label=lab)
        axes[0].fill_between(x, q1, q3, color=col, alpha=0.2)
    axes[0].set_yscale("log")
    axes[0].set_xlabel("layer l")
    axes[0].set_ylabel("‖w^l − w_ref‖ / ‖w_ref‖ (median, IQR)")
    _legend(axes, 7)
    axes[1].loglog(np.maximum(traj["sigma"], 1e-3) ** 2, traj["s_best"], ".", ms=3)
    lim = [1e-3, max(float(np.max(traj["sigma"])) ** 2 * 2, 1)]
    axes[1].plot(lim, lim, "k--", lw=1, label="s = σ² (oracle)")
    axes[1].set_xlabel("true σ²")
    axes[1].set_ylabel(f"ridge s nearest to w^{L}")
    axes[1].legend(fontsize=7)
    for b in range(traj["proj"].shape[1]):
        (line,) = axes[2].plot(traj["path"][:, b, 0], traj["path"][:, b, 1], "-", lw=1, alpha=0.6)
        axes[2].plot(
            traj["proj"][:, b, 0], traj["proj"][:, b, 1], "o-", ms=3, color=line.get_color()
        )
    axes[2].set_xlabel("along OLS w*  (/‖w*‖)")
    axes[2].set_ylabel("orthogonal part")
    axes[2].set_title("w^0…w^L (dots) and ridge paths (lines)", fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save(fig, path)
