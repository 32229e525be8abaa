r"""What a finished run writes into its run directory (:mod:`numerics.train.rundir`): the best
seed's held-out losses and the baselines' table in ``metrics.json``, its model in ``model.npz``,
and the loss curve of every seed in ``loss.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import numpy as np

from numerics import baselines as nb
from numerics.errors import LintfError
from numerics.io import atomic_write_bytes, atomic_write_json
from numerics.model_file import save_model
from numerics.models import universal
from numerics.models.family_io import save_member
from numerics.train.config import TrainConfig, config_dict
from numerics.train.loop import Result, adjusted_losses, finite_adjusted, nanmean

#: Sequences for the baselines in metrics.json (evaluation / tuning).  At uniform:5 TunedRR's
#: adjusted loss then has a standard error of ~0.005 and the table takes ~14 s (load 4.3 on 2
#: cores); for the paper-grade value use ``lintf baselines`` (100 000 sequences).
BASELINE_SEQUENCES = 20_000
BASELINE_TUNE_SEQUENCES = 20_000


def baseline_table(cfg: TrainConfig) -> dict[str, Any] | None:
    """:func:`numerics.baselines.table` for the run's setting (ConstRR, AdaRR, TunedRR, Bayes, ...).

    OLS-based baselines (OLS, AdaRR, TunedRR) need ``n > d``; otherwise only the others are
    listed."""
    methods = nb.NAMES if cfg.n > cfg.d else tuple(m for m in nb.NAMES if m not in nb.OLS_BASED)
    return nb.table(
        cfg.noise,
        n=cfg.n,
        d=cfg.d,
        sequences=BASELINE_SEQUENCES,
        seed=cfg.seed,
        tune_sequences=BASELINE_TUNE_SEQUENCES,
        methods=methods,
    )


def finalize(
    out: str | Path, cfg: TrainConfig, res: Result, baselines: bool = True
) -> dict[str, Any]:
    """Select the best seed, evaluate it on fresh sequences, write metrics, model and plot."""
    out = Path(out)
    params = res.state.params
    sel_model, sel_oracle = adjusted_losses(cfg, params, stream=2, sequences=cfg.select_sequences)
    select = nanmean(np.where(np.isfinite(sel_model), sel_model - sel_oracle[None], np.nan), axis=1)
    if not np.all(np.isfinite(select)):
        raise LintfError(f"non-finite selection loss {select.tolist()}; refusing to save")
    best = int(np.argmin(select))
    best_params = jax.tree_util.tree_map(lambda a: a[best], params)
    # every seed is evaluated (one compiled program for selection and eval); the best one is
    # reported
    ev_model, ev_oracle = adjusted_losses(cfg, params, stream=3, sequences=cfg.eval_sequences)
    # A deep model is a high-degree polynomial of the data: a rare sequence can overflow (inf).  The
    # adjusted loss is reported over finite sequences, with the count of the others beside it.
    fin = np.isfinite(ev_model[best])
    adjusted, se, nonfinite = finite_adjusted(ev_model[best], ev_oracle)
    per_seed = nanmean(np.where(np.isfinite(ev_model), ev_model - ev_oracle[None], np.nan), axis=1)
    metrics = {
        "model": cfg.model,
        "layers": cfg.layers,
        "heads": cfg.heads,
        "noise": cfg.noise,
        "adjusted_loss": adjusted,
        "se": se,
        "loss": float(ev_model[best][fin].mean()),
        "oracle_loss": float(ev_oracle[fin].mean()),
        "nonfinite_sequences": nonfinite,
        "skipped_steps": res.skipped,
        "rejected_steps": np.asarray(res.state.rejected).tolist(),
        # sequences left out of the squared loss in the final phase (dead in float32): 0 for a model
        # worth keeping
        "dropped_final": int(np.asarray(res.state.dropped)[best]),
        "dropped_final_per_seed": np.asarray(res.state.dropped).tolist(),
        "eval_sequences": int(fin.sum()),
        "best_seed": best,
        "selection_adjusted": select.tolist(),
        "eval_adjusted_per_seed": per_seed.tolist(),
        "steps": int(res.state.step),
        "steps_per_s": res.steps_per_s,
        # training seconds over every call that trained the run (a resumed run adds to them); null
        # where a checkpoint without its time left the earlier calls' unknown, as their rate is
        "seconds": res.seconds if np.isfinite(res.steps_per_s) else None,
        "devices": res.devices,
        "baselines": baseline_table(cfg) if baselines else None,
        "curve": {"columns": ["step"] + [f"seed_{k}" for k in range(cfg.seeds)], "rows": res.curve},
        "rollbacks": res.rollbacks,
    }
    meta = {
        "kind": cfg.model,
        "config": config_dict(cfg),
        "adjusted_loss": adjusted,
    }
    if cfg.kind.own_forward:  # a family member: its native arrays only (numerics.models.family_io)
        save_member(out / "model.npz", best_params, meta)
    else:
        P, Q = universal(best_params, cfg.d)
        native = {f"native_{k}": np.asarray(v) for k, v in best_params._asdict().items()}
        save_model(out / "model.npz", P, Q, meta=meta, **native)
    atomic_write_json(out / "metrics.json", metrics)
    plot_curve(out / "loss.png", cfg, res)
    return metrics


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
