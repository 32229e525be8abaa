"""DIAG's pattern inside FULL: the projection on it; at a DIAG cell, the batch gradient off it and
the loss of kicks off and on it; FULL's learned ``P^l, Q^l`` against it (the parts of each matrix,
the direction the rests share, the model without its rest, heatmaps, ``lintf inspect`` per layer).
Used by ``benchmarks/full_own_start.py`` (docs/experiments/full-own-start.md).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np

from numerics.model_file import load_model

NOISE = "categorical:1,3"
HELD_OUT = 16384  # the same held-out sequences (stream 2) at every evaluation


def diag_part(M: np.ndarray) -> np.ndarray:
    """``D(M) = diag(p_x I_d, p_y)``, the orthogonal projection of ``M`` on DIAG's pattern: ``p_x``
    the mean of the first ``d`` diagonal entries, ``p_y`` the last."""
    d = M.shape[-1] - 1
    dia = np.diagonal(M, axis1=-2, axis2=-1)
    px = np.repeat(dia[..., :d].mean(-1, keepdims=True), d, axis=-1)
    return np.concatenate([px, dia[..., d:]], axis=-1)[..., :, None] * np.eye(d + 1)


def off_diag_share(M: np.ndarray) -> float:
    """``‖M − D(M)‖_F / ‖M‖_F``."""
    return float(np.linalg.norm(M - diag_part(M)) / np.linalg.norm(M))


def held_out(cfg, params) -> float:  # noqa: ANN001
    """Mean adjusted loss of the first seed of ``params`` on the :data:`HELD_OUT` sequences."""
    from numerics.train.loop import adjusted_losses

    m, o = adjusted_losses(cfg, params, stream=2, sequences=HELD_OUT)
    return float(np.mean(m[0] - o))


def kick(diag: Path, scales: list[float], directions: int) -> dict:
    """The DIAG-4 cell as a FULL model, moved by ``s`` (Frobenius norm over every ``P^l, Q^l``)
    along random directions off DIAG's pattern and on it, held out."""
    from numerics.models.kinds import Full
    from numerics.train.config import TrainConfig

    P, Q, _ = load_model(str(diag))
    W = np.stack([np.asarray(P, float), np.asarray(Q, float)])  # (2, L, H, d+1, d+1)
    cfg = TrainConfig(model="full", layers=W.shape[1], noise=NOISE)

    def loss(V: np.ndarray) -> float:
        return held_out(cfg, Full(np.float32(V[0])[None], np.float32(V[1])[None]))

    rng = np.random.default_rng(0)
    out = {"start": loss(W), "scales": scales, "off": [], "on": []}
    for _ in range(directions):
        N = rng.standard_normal(W.shape)
        for where, D in (("off", N - diag_part(N)), ("on", diag_part(N))):
            out[where].append([loss(W + s * D / np.linalg.norm(D)) for s in scales])
            print(where, np.round(out[where][-1], 5), flush=True)
    return out


def gradient(diag: Path, batches: int) -> dict:
    """The training gradient at the DIAG-4 cell, as a FULL model, over ``batches`` batches of 2048:
    the norm of its mean and its per-batch RMS norm, off DIAG's pattern and on it.  A mean of pure
    noise has norm RMS / sqrt(batches)."""
    from numerics.models.kinds import Full
    from numerics.train.config import TrainConfig
    from numerics.train.objective import data_key, draw, loss_and_grad, noise_values

    P, Q, _ = load_model(str(diag))
    cfg = TrainConfig(model="full", layers=P.shape[0], noise=NOISE)
    params = Full(np.float32(P), np.float32(Q))
    G = []
    for i in range(batches):
        b = draw(cfg, data_key(0, 1, i), 2048, None, noise_values(cfg))
        g = loss_and_grad(params, b, delta=cfg.huber_delta)[1]
        G.append(np.stack([np.asarray(g.P, float), np.asarray(g.Q, float)]))
    G = np.asarray(G)
    out = {"batches": batches}
    for where, H in (("off", G - diag_part(G)), ("on", diag_part(G))):
        rms = float(np.sqrt(np.mean(np.sum(H.reshape(batches, -1) ** 2, axis=1))))
        out[where] = {
            "mean_norm": float(np.linalg.norm(H.mean(0))),
            "batch_rms_norm": rms,
            "noise_mean_norm": float(rms / np.sqrt(batches)),
        }
    return out


def matrix_parts(M: np.ndarray) -> dict:
    """``M``'s share on DIAG's pattern; where the rest sits (the traceless ``x`` block, the column
    ``x ← y``, the row ``y ← x``); the rest's singular values, and its rank: how many of them
    reach a tenth of the largest."""
    d, rest = M.shape[-1] - 1, M - diag_part(M)
    sv = np.linalg.svd(rest, compute_uv=False)
    n = np.linalg.norm
    return {
        "norm": float(n(M)),
        "diag_share": float(n(diag_part(M)) / n(M)),
        "rest_share": off_diag_share(M),
        "rest_xx": float(n(rest[:d, :d])),
        "rest_x_from_y": float(n(rest[:d, d])),
        "rest_y_from_x": float(n(rest[d, :d])),
        "rest_sv": sv[:4].tolist(),
        "rest_rank": int(np.sum(sv >= 0.1 * sv[0])),
    }


def ablate(P: np.ndarray, Q: np.ndarray, sequences: int) -> dict:
    """Adjusted loss of FULL's ``(P, Q)`` and of ``(D(P), D(Q))`` on the same evaluation
    sequences."""
    from numerics.models.kinds import Full
    from numerics.train.config import TrainConfig
    from numerics.train.loop import adjusted_losses, finite_adjusted

    cfg = TrainConfig(model="full", layers=P.shape[0], noise=NOISE, eval_sequences=sequences)
    out = {}
    for name, (p, q) in (("full", (P, Q)), ("diag_part", (diag_part(P), diag_part(Q)))):
        params = Full(np.float32(p)[None, :, None], np.float32(q)[None, :, None])
        m, o = adjusted_losses(cfg, params, stream=3, sequences=sequences)
        mean, se, bad = finite_adjusted(m[0], o)
        out[name] = {"adjusted_loss": mean, "se": se, "nonfinite": bad}
    return out


def plot_weights(P: np.ndarray, Q: np.ndarray, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    L = P.shape[0]
    fig, axes = plt.subplots(2, L, figsize=(2.6 * L, 5.2))
    for row, (name, W) in enumerate((("P", P), ("Q", Q))):
        for l in range(L):
            v = float(np.abs(W[l]).max())
            im = axes[row, l].imshow(W[l], cmap="RdBu_r", vmin=-v, vmax=v)
            axes[row, l].set_title(f"{name}^{l + 1}  (max {v:.2g})", fontsize=8)
            axes[row, l].set_xticks([])
            axes[row, l].set_yticks([])
        fig.colorbar(im, ax=axes[row, -1], fraction=0.046)
    fig.suptitle(title, fontsize=9)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def weights(model: Path, diag: Path, sequences: int, figure: Path, lintf: str) -> dict:
    """FULL's ``P^l, Q^l`` (head 0): parts, the shared direction ``v``, the model without its rest
    on ``sequences`` evaluation sequences, the heatmaps (``figure``), and ``lintf inspect`` of the
    model and of the DIAG model ``diag``."""
    P, Q, _ = load_model(str(model))
    P, Q = np.asarray(P, float)[:, 0], np.asarray(Q, float)[:, 0]
    plot_weights(P, Q, figure, f"FULL-{P.shape[0]} at {NOISE} from its own start ({model.stem})")
    inspect = {}
    for label, path in (("full", model), ("diag_cell", diag)):
        out = subprocess.run(
            [lintf, "inspect", str(path), "--noise", NOISE, "--sequences", "4096", "--json"],
            capture_output=True,
            text=True,
            check=True,
        )
        inspect[label] = json.loads(out.stdout)["layers"]
    d = P.shape[-1] - 1
    col = P[:, :d, d]  # the columns x <- y of every P^l: the largest is the direction v
    v = col[np.argmax(np.linalg.norm(col, axis=1))]
    v = v / np.linalg.norm(v)

    def along_v(M: np.ndarray) -> dict:  # |cos| with v of where M's rest reads and writes
        U, _, Vt = np.linalg.svd((M - diag_part(M))[:d, :d])
        return {
            "xx_left": float(abs(U[:, 0] @ v)),
            "xx_right": float(abs(Vt[0] @ v)),
            "x_from_y": float(abs(M[:d, d] @ v) / np.linalg.norm(M[:d, d])),
            "y_from_x": float(abs(M[d, :d] @ v) / np.linalg.norm(M[d, :d])),
        }

    return {
        "model": model.name,
        "P": [matrix_parts(p) for p in P],
        "Q": [matrix_parts(q) for q in Q],
        "cos_v": {"P": [along_v(p) for p in P], "Q": [along_v(q) for q in Q]},
        "ablation": ablate(P, Q, sequences),
        "inspect": inspect,
    }
