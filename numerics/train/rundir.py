r"""A training run directory: atomic checkpoints, resume, best-seed selection, metrics, model, plot.

Layout of ``--out DIR``:

* ``config.json``: the :class:`numerics.train.TrainConfig`, written with the first checkpoint; a restart
  with a different config into the same directory is refused (one-line error).  Nothing is written before
  the first checkpoint, so a run that stops earlier (out of memory, interrupted) blocks no later command; a
  ``config.json`` without a checkpoint or a result beside it is replaced.  A corrupt ``config.json`` or
  ``checkpoint.npz`` is refused with a one-line error that says which file to delete, never overwritten.
* ``checkpoint.npz``: the full training state after the last good chunk, the loss curve and the
  rollback log, written atomically (:func:`numerics.io.atomic_savez`) after every chunk.  A killed
  run restarted with the same command continues from it and ends with the same numbers, because
  batch ``t`` is drawn from a key derived from ``(seed, t)``.
* ``metrics.json``: adjusted eval loss of the best seed with its standard error on
  ``eval_sequences`` fresh sequences, every seed's selection loss, the baselines' table
  (:func:`numerics.baselines.table` on ``BASELINE_SEQUENCES`` fresh sequences of the same setting;
  ``null`` with ``--no-baselines``), the loss curve, the rollbacks.
* ``model.npz``: universal ``P, Q`` (:func:`numerics.io.save_model`, which refuses non-finite
  values) plus the native parameters of the best seed.
* ``loss.png``: training loss per chunk, every seed.
"""

from __future__ import annotations

import json
import math
import os
import time
import zipfile
from pathlib import Path
from typing import Any

import jax
import numpy as np

from numerics.errors import LintfError
from numerics.io import atomic_savez, atomic_write_json, save_model
from numerics.models import universal
from numerics.models.family_io import save_member
from numerics.train import (
    Result,
    TrainConfig,
    TrainState,
    adjusted_losses,
    config_dict,
    finite_adjusted,
    nanmean,
    train,
)
from numerics.train.curve import plot_curve


def _claimed(out: Path) -> bool:
    """A run directory is claimed by its ``config.json`` only once a checkpoint or a result sits beside it: a run that
    stopped before its first checkpoint leaves nothing that blocks the same or a corrected command."""
    return (out / "config.json").exists() and any((out / f).exists() for f in _RESULTS)


_RESULTS = ("checkpoint.npz", "model.npz", "metrics.json")


def prepare(out: str | Path, cfg: TrainConfig, flag: str = "--out") -> dict[str, Any] | None:
    """Validate ``out`` for ``cfg`` without writing anything; return the resume payload of its checkpoint, else ``None``.

    One-line errors: ``out`` is not a writable directory; it holds a run with another config, or files a run writes
    without a run (they are never overwritten); its ``config.json`` or ``checkpoint.npz`` is corrupt (the message
    says which file to delete).  ``flag`` is the option that named ``out`` (``--runs`` for a sweep's cell)."""
    out = Path(out)
    _output_dir(out, flag)
    theirs = [] if _claimed(out) else [f for f in (*_RESULTS, "loss.png") if (out / f).exists()]
    if theirs:
        raise LintfError(
            f"{flag} {str(out)!r} holds {', '.join(theirs)} but no lintf run (no config.json beside a "
            "checkpoint or result); give a new or empty directory (nothing is overwritten)"
        )
    cfg_path, ck = out / "config.json", out / "checkpoint.npz"
    if cfg_path.exists():
        try:
            have = json.loads(cfg_path.read_text())
            if not isinstance(have, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            fix = (
                f"restore it, or delete {str(out)!r} to start this run over"
                if _claimed(out)
                else f"delete {str(cfg_path)!r} to start this run"
            )
            raise LintfError(f"{flag}: {str(cfg_path)!r} is corrupt ({exc}); {fix}") from None
        want = json.loads(json.dumps(config_dict(cfg)))
        diff = _differences(have, want)
        if _claimed(out) and diff:
            raise LintfError(
                f"{flag} {str(out)!r} holds a run with a different config ({', '.join(diff)}); "
                f"use another {flag} or the same arguments"
            )
        if diff and not _a_config(have):
            raise LintfError(
                f"{flag} {str(out)!r} holds a config.json that is not a lintf run's; give a new or "
                "empty directory (nothing is overwritten)"
            )
    if not ck.exists():
        return None
    try:
        return _read_checkpoint(ck, cfg)
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise LintfError(
            f"{flag}: {str(ck)!r} is corrupt ({reason}); delete it to restart this run from step 0"
        ) from None


def _output_dir(out: Path, flag: str) -> None:
    """``out`` is a directory, or can be made as one: not a file, and its nearest existing ancestor a writable
    directory."""
    if out.exists() and not out.is_dir():
        raise LintfError(f"{flag} {str(out)!r} is a file; give a directory")
    p = Path(os.path.abspath(out))
    while not p.exists():
        p = p.parent
    if not p.is_dir() or not os.access(p, os.W_OK | os.X_OK):
        raise LintfError(f"{flag} {str(out)!r}: {str(p)!r} is not a writable directory")


def _a_config(have: dict[str, Any]) -> bool:
    """``have`` (a ``config.json`` without a run beside it) is one that :func:`claim` wrote: it names the model,
    depth, noise, steps and batch of a run, its model is a lintf kind, and it holds nothing but training options.
    Another is the user's, and is not replaced."""
    from dataclasses import fields

    from numerics.models.kinds import KIND_OBJECTS
    from numerics.train.config import CONFIG_EXTRAS

    return (
        {"model", "layers", "noise", "steps", "batch"} <= set(have)
        and have["model"] in KIND_OBJECTS
        and set(have) <= {f.name for f in fields(TrainConfig)} | CONFIG_EXTRAS
    )


def _differences(have: dict[str, Any], want: dict[str, Any]) -> list[str]:
    """The keys in which a run directory's config ``have`` and the config asked for ``want`` differ.  The start's
    content defines a run, not where its file lies: a start found at another path with the same ``warm_start_sha256``
    (a sweep moved or copied, or its ``--out`` spelled another way) is the same run."""
    diff = sorted(k for k in set(have) | set(want) if have.get(k) != want.get(k))
    if "warm_start" in diff and "warm_start_sha256" not in diff and want.get("warm_start_sha256"):
        diff.remove("warm_start")
    return diff


def _read_checkpoint(ck: Path, cfg: TrainConfig) -> dict[str, Any]:
    """The resume payload of ``ck``, after checking every leaf against the state ``cfg`` trains (shape, dtype,
    finiteness) and the step against ``cfg.steps``."""
    from numerics.train import init_state

    if not zipfile.is_zipfile(ck):
        raise ValueError("not an .npz archive")
    shapes = jax.eval_shape(lambda: init_state(cfg, template=True))
    template = jax.tree_util.tree_leaves(shapes)
    with np.load(ck, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        n_leaves, n_hist = int(meta["leaves"]), int(meta.get("history", 0))
        if n_leaves != len(template):
            raise ValueError(f"{n_leaves} state arrays, this config has {len(template)}")
        leaves = [np.array(z[f"leaf_{i}"]) for i in range(n_leaves)]
        history = [
            [np.array(z[f"history_{j}_leaf_{i}"]) for i in range(n_leaves)] for j in range(n_hist)
        ]
    for state in (leaves, *history):
        for i, (x, t) in enumerate(zip(state, template)):
            if x.shape != t.shape or x.dtype != t.dtype:
                raise ValueError(
                    f"array {i} is {x.dtype}{list(x.shape)}, this config needs {t.dtype}{list(t.shape)}"
                )
            if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
                raise ValueError(f"array {i} holds non-finite values")
    step = int(meta["step"])
    if (
        not 0 < step <= cfg.steps
        or int(jax.tree_util.tree_structure(shapes).unflatten(leaves).step) != step
    ):
        raise ValueError(f"step {step} is outside [1, {cfg.steps}] or disagrees with the state")
    return {
        "leaves": leaves,
        "step": step,
        "curve": list(meta["curve"]),
        "rollbacks": list(meta["rollbacks"]),
        "skipped": int(meta.get("skipped", 0)),
        "history": history,
        "history_marks": meta.get("history_marks", []),
        "seconds": _seconds(meta.get("seconds", 0.0)),
    }


def _seconds(x: Any) -> float:
    """A checkpoint's training time: a finite number >= 0 (0 where it is missing, as in checkpoints without it)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
        raise ValueError(f"its training time is {x!r}, not a number of seconds >= 0")
    return float(x)


def claim(out: str | Path, cfg: TrainConfig, flag: str = "--out") -> None:
    """Create ``out`` and write its ``config.json`` (atomically), unless it is claimed already: called just before
    the first checkpoint is written, so a run that dies earlier leaves nothing behind."""
    out = Path(out)
    if not _claimed(out):
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LintfError(
                f"{flag} {str(out)!r} is not a writable directory: {exc.strerror}"
            ) from None
        atomic_write_json(out / "config.json", config_dict(cfg))


def save_checkpoint(out: str | Path, state: TrainState, res: Result) -> None:
    """Write the state atomically; refuses a non-finite state (the divergence guard never produces one)."""
    leaves = [np.asarray(x) for x in jax.tree_util.tree_leaves(state)]
    if not all(np.all(np.isfinite(x)) for x in leaves if np.issubdtype(x.dtype, np.floating)):
        raise LintfError("refusing to checkpoint a non-finite training state")
    meta = {
        "leaves": len(leaves),
        "step": int(state.step),
        "curve": res.curve,
        "rollbacks": res.rollbacks,
        "skipped": res.skipped,
        "history": len(res.history),
        "history_marks": [[n, k] for _, n, k in res.history],
        "seconds": res.seconds,
        "time": time.time(),
    }  # when it was written: a stopped sweep's time counts to it
    history = {
        f"history_{j}_leaf_{i}": np.asarray(x)
        for j, (h, _, _) in enumerate(res.history)
        for i, x in enumerate(jax.tree_util.tree_leaves(h))
    }  # earlier chunk starts, for deeper rollbacks
    atomic_savez(
        Path(out) / "checkpoint.npz",
        meta=np.asarray(json.dumps(meta)),
        **{f"leaf_{i}": x for i, x in enumerate(leaves)},
        **history,
    )


#: Sequences for the baselines in metrics.json (evaluation / tuning).  At uniform:5 TunedRR's adjusted
#: loss then has a standard error of ~0.005 and the table takes ~14 s (load 4.3 on 2 cores); for the
#: paper-grade value use ``lintf baselines`` (100 000 sequences).
BASELINE_SEQUENCES = 20_000
BASELINE_TUNE_SEQUENCES = 20_000


def _baselines(cfg: TrainConfig) -> dict[str, Any] | None:
    """:func:`numerics.baselines.table` for the run's setting (ConstRR, AdaRR, TunedRR, Bayes, ...).

    OLS-based baselines (OLS, AdaRR, TunedRR) need ``n > d``; otherwise only the others are listed."""
    from numerics.baselines import NAMES, OLS_BASED, table

    methods = NAMES if cfg.n > cfg.d else tuple(m for m in NAMES if m not in OLS_BASED)
    return table(
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
    # every seed is evaluated (one compiled program for selection and eval); the best one is reported
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
        # sequences left out of the squared loss in the final phase (dead in float32): 0 for a model worth keeping
        "dropped_final": int(np.asarray(res.state.dropped)[best]),
        "dropped_final_per_seed": np.asarray(res.state.dropped).tolist(),
        "eval_sequences": int(fin.sum()),
        "best_seed": best,
        "selection_adjusted": select.tolist(),
        "eval_adjusted_per_seed": per_seed.tolist(),
        "steps": int(res.state.step),
        "steps_per_s": res.steps_per_s,
        "devices": res.devices,
        "baselines": _baselines(cfg) if baselines else None,
        "curve": {"columns": ["step"] + [f"seed_{k}" for k in range(cfg.seeds)], "rows": res.curve},
        "rollbacks": res.rollbacks,
    }
    meta = {
        "kind": cfg.model,
        "config": config_dict(cfg),
        "adjusted_loss": metrics["adjusted_loss"],
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


def run(
    cfg: TrainConfig,
    out: str | Path,
    progress: bool = True,
    baselines: bool = True,
    stop_at: int | None = None,
    flag: str = "--out",
) -> dict[str, Any] | None:
    """Train into ``out`` (resuming if a matching checkpoint exists) and finalize; ``stop_at`` stops
    early without finalizing (used to simulate a killed run); ``flag`` names ``out`` in errors (:func:`prepare`)."""
    resume = prepare(out, cfg, flag)
    done = Path(out) / "metrics.json"
    if (
        resume is not None
        and int(resume["step"]) == cfg.steps
        and done.exists()
        and (Path(out) / "model.npz").exists()
    ):
        from numerics.io import read_json

        metrics = read_json(
            done
        )  # finished before: its results as they are, not evaluated and written again,
        if (
            baselines and metrics.get("baselines") is None
        ):  # except the baselines it was trained without
            metrics["baselines"] = _baselines(cfg)
            atomic_write_json(done, metrics)
        return metrics

    def ck(s: TrainState, r: Result) -> None:
        claim(out, cfg, flag)
        save_checkpoint(out, s, r)

    if progress:
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        cols = (
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TextColumn("loss {task.fields[loss]:.4g}"),
            TextColumn("{task.fields[rate]:.1f} steps/s"),
            TimeRemainingColumn(),
        )
        with Progress(*cols, transient=False) as bar:
            start = 0 if resume is None else int(resume["step"])
            task = bar.add_task(
                f"{cfg.model}-{cfg.layers}",
                total=cfg.steps,
                completed=start,
                loss=float("nan"),
                rate=0.0,
            )
            t0 = time.perf_counter()

            def tick(s: TrainState, r: Result) -> None:
                done = int(s.step)
                rate = (done - start) / max(time.perf_counter() - t0, 1e-9)
                bar.update(task, completed=done, loss=min(r.curve[-1][1:]), rate=rate)

            res = train(cfg, resume, on_chunk=tick, checkpoint=ck, stop_at=stop_at)
    else:
        res = train(cfg, resume, checkpoint=ck, stop_at=stop_at)
    if int(res.state.step) < cfg.steps:
        return None
    return finalize(out, cfg, res, baselines=baselines)
