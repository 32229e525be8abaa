r"""Beyond the paper: implicit weights ``w^l`` of a trained model against the ridge path, and the
depth gap.

Theorem 4.1 (docs/model.md) gives every layer an implicit weight ``w^l`` with
``ŷ^l = ⟨w^l, x_t⟩``; :func:`numerics.evaluate.inspector.implicit_states` computes it by the
derived recursion (Lemma 4.3, through the bridge).  We compare it with the ridge path

.. math::

    \mathcal R = \{\, w_s = (\Sigma + s I)^{-1}\alpha : s \in [0, \infty] \,\},

which runs from OLS ``w*`` (``s = 0``) to ``0`` (``s = ∞``) and holds the oracle ``w_{σ²}``.  Per
sequence and layer: the relative distance ``min_s ‖w^l − w_s‖ / ‖w_{σ²}‖`` (on a geometric ``s``
grid), the distances to ``w_{σ²}`` and to ``w*``, and the ``s`` of the nearest point for the last
layer (a model that adapts to the noise has ``s ≈ σ²``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from numerics import data
from numerics.evaluate import inspector
from numerics.reproduce import plots
from numerics.reproduce.grid import FOCUS
from numerics.reproduce.rules import RULES
from numerics.reproduce.table import MODEL_NAMES, Table, depths_of, fmt

#: ``s`` grid of the ridge path (plus ``s = 0``); its span covers σ² from 1e-5 to 1e5.
S_GRID = np.concatenate([[0.0], np.geomspace(1e-5, 1e5, 241)])
#: How many sequences' weights and ridge paths the plane panel of :func:`fig_weights` draws.
SHOW = 4


def trajectories(
    P: Any, Q: Any, noise: str, sequences: int, n: int, d: int, key: jax.Array
) -> dict[str, np.ndarray]:
    """Arrays for :func:`fig_weights` (float64, ``sequences`` fresh sequences)."""
    with jax.enable_x64(True):
        b = data.sample(key, noise, sequences, n, d, jnp.float64)
        st = inspector.implicit_states(
            jnp.asarray(P, jnp.float64), jnp.asarray(Q, jnp.float64), b.X, b.y
        )
        w = np.asarray(st.w)  # (L+1, B, d)
        Sigma = np.asarray(jnp.einsum("bnd,bne->bde", b.X, b.X))
        alpha = np.asarray(jnp.einsum("bnd,bn->bd", b.X, b.y))
    mu, V = np.linalg.eigh(Sigma)  # (B, d), (B, d, d)
    beta = np.einsum("bdk,bd->bk", V, alpha)
    coef = beta / (mu + S_GRID[:, None, None])  # (S, B, d) in the eigenbasis
    path = np.einsum("bdk,sbk->sbd", V, coef)  # (S, B, d)
    sig = np.asarray(b.sigma)
    oracle = np.einsum("bdk,bk->bd", V, beta / (mu + sig[:, None] ** 2))
    ols = path[0]
    scale = np.linalg.norm(oracle, axis=-1)  # (B,)
    dists = np.linalg.norm(w[:, None] - path, axis=-1)  # (L+1, S, B)
    nrm = np.linalg.norm(ols, axis=-1, keepdims=True)  # (B, 1)
    e1 = ols / nrm
    o = oracle - np.sum(oracle * e1, -1, keepdims=True) * e1
    e2 = o / np.maximum(np.linalg.norm(o, axis=-1, keepdims=True), 1e-300)

    def coords(v: np.ndarray) -> np.ndarray:
        return np.stack([np.sum(v * e1, -1), np.sum(v * e2, -1)], -1) / nrm

    k = min(SHOW, w.shape[1])
    return {
        "dist": dists.min(1) / scale,
        "s_best": S_GRID[np.argmin(dists[-1], axis=0)],
        "sigma": sig,
        "to_oracle": np.linalg.norm(w - oracle, axis=-1) / scale,
        "to_ols": np.linalg.norm(w - ols, axis=-1) / nrm[:, 0],
        "proj": coords(w)[:, :k],
        "path": coords(path)[:, :k],
    }


def depth_gap(t: Table, model: str, noise: str, ref: int) -> list[tuple[int, float, float, float]]:
    """``(L, gap to Bayes, its SE, fraction of the depth-``ref`` gap closed)`` for every depth of
    the table."""
    rows = [
        (L, t[(model, L, noise)].minus_bayes, t[(model, L, noise)].minus_bayes_se)
        for L in depths_of(t, model, noise)
    ]
    g_ref = next((g for L, g, _ in rows if L == ref), None)
    return [(L, g, s, (g_ref - g) / g_ref if g_ref else float("nan")) for L, g, s in rows]


def fig_weights(traj: dict[str, np.ndarray], title: str, path: str | Path) -> None:
    """Implicit weights ``w^l`` against the ridge path ``s ↦ (Σ + sI)^{-1}α``.

    ``traj``: ``dist`` ``(L+1, B)`` relative distance of ``w^l`` to the nearest point of the ridge
    path, ``s_best`` ``(B,)`` that point's ``s`` for the last layer, ``sigma`` ``(B,)``,
    ``to_oracle`` ``(L+1, B)``, ``proj`` ``(L+1, B, 2)`` and ``path`` ``(S, B, 2)``: coordinates in
    the plane (OLS direction, orthogonal part of the oracle ridge) for a few sequences."""
    fig, axes = plots.plt.subplots(1, 3, figsize=(13, 3.8))
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
    plots.legend(axes, 7)
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
    plots.save(fig, title, path)


def write(
    t: Table,
    noises: list[str],
    budget: Any,
    PQ: tuple | None,
    failed: str | None,
    out: Path,
    cmd: str,
) -> tuple[list[str], str]:
    """The study's figures under ``out`` and its section of the report: the gap to Bayes against
    depth on ``noises`` (every depth of the table ``t``), and the implicit weights of ``PQ``, the
    model of DIAG at the budget's largest depth at :data:`numerics.reproduce.grid.FOCUS` (``None``:
    that cell ``failed``).  Returns the files written and the Markdown."""
    L = budget.max_depth
    plots.fig_depth(t, noises, out / "fig_beyond_depth.png")
    files = ["fig_beyond_depth.png"]
    md = [
        f"Gap to the Bayes floor against depth (paired ± SE), and the fraction of the depth-{L} "
        f"gap that deeper models close. Regenerate: `{cmd}`.",
        "",
        f"| model | noise | layers | loss − Bayes | gap closed vs L={L} |",
        "|---|---|--:|--:|--:|",
    ]
    for nz in noises:
        for m in ("diag", "full"):
            for Lk, g, s, f in depth_gap(t, m, nz, L):
                md.append(
                    f"| {MODEL_NAMES[m]} | {nz} | {Lk} | {fmt(g)} ± {fmt(s)} | "
                    f"{'–' if Lk <= L or not math.isfinite(f) else f'{f:.0%}'} |"
                )
    md += ["", "![gap to Bayes vs depth](fig_beyond_depth.png)", ""]
    if PQ is None:
        md.append(f"No implicit weights: DIAG-{L} at {FOCUS} is a failed cell ({failed}).")
    else:
        tr = trajectories(*PQ, FOCUS, 1000, budget.n, budget.d, RULES.tail_key())
        title = f"DIAG-{L} on {FOCUS}: implicit weights w^l (Theorem 4.1) vs the ridge path"
        fig_weights(tr, title, out / "fig_beyond_weights.png")
        files.append("fig_beyond_weights.png")
        rho = np.corrcoef(
            np.log(np.maximum(tr["sigma"], 1e-3) ** 2), np.log(np.maximum(tr["s_best"], 1e-5))
        )[0, 1]
        md += [
            f"Implicit weights of DIAG-{L} on 1000 sequences: median relative distance of `w^{L}` "
            f"to the ridge path {np.median(tr['dist'][-1]):.3f}, to oracle ridge "
            f"{np.median(tr['to_oracle'][-1]):.3f}, to OLS {np.median(tr['to_ols'][-1]):.3f}; "
            f"correlation of log(nearest ridge s) with log σ² {rho:.2f}. Regenerate: `{cmd}`.",
            "",
            "![implicit weights vs ridge path](fig_beyond_weights.png)",
        ]
    return files, "\n".join(md) + "\n"
