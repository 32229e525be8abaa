"""The loss curve of a training run (``loss.png`` in its run directory)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from numerics.io import atomic_write_bytes
from numerics.train.config import TrainConfig


def plot_curve(path: Path, cfg: TrainConfig, res: Any) -> None:
    """The training loss of every seed against the step (log scale), written atomically to
    ``path``."""
    import io  # lazy: start-up

    import matplotlib  # lazy: start-up

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: start-up

    curve = np.asarray(res.curve)
    fig, ax = plt.subplots(figsize=(5, 3.2), dpi=120)
    for k in range(curve.shape[1] - 1 if curve.ndim == 2 else 0):
        ax.plot(curve[:, 0], curve[:, k + 1], lw=1, label=f"seed {k}")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("train loss ½(y−ŷ)²")
    ax.set_title(f"{cfg.kind!r}-{cfg.layers}, {cfg.noise}")
    if cfg.seeds <= 8:
        ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())
