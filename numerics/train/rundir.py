r"""A training run directory: its claim, its checkpoints and resume; the checkpoint's format, its
writer and its reader are :mod:`numerics.train.checkpoint`, and what a finished run writes
(best-seed selection, metrics, model, plot) is :mod:`numerics.train.results`.

Layout of ``--out DIR``:

* ``config.json``: the :class:`numerics.train.config.TrainConfig`, written with the first
  checkpoint; a restart with a different config into the same directory is refused (one-line error).
  Nothing is written before the first checkpoint, so a run that stops earlier (out of memory,
  interrupted) blocks no later command; a ``config.json`` without a checkpoint or a result beside it
  is replaced.  A corrupt ``config.json`` or ``checkpoint.npz`` is refused with a one-line error
  that says which file to delete, never overwritten.
* ``checkpoint.npz``: the full training state after the last good chunk, the loss curve and the
  rollback log, written atomically (:func:`numerics.io.atomic_savez`) after every chunk.  A killed
  run restarted with the same command continues from it and ends with the same numbers, because
  batch ``t`` is drawn from a key derived from ``(seed, t)``.
* ``metrics.json``: adjusted eval loss of the best seed with its standard error on
  ``eval_sequences`` fresh sequences, every seed's selection loss, the baselines' table
  (:func:`numerics.baselines.table` on :data:`numerics.train.results.BASELINE_SEQUENCES` fresh
  sequences of the same setting; ``null`` with ``--no-baselines``), the loss curve, the rollbacks.
* ``model.npz``: universal ``P, Q`` (:func:`numerics.model_file.save_model`, which refuses
  non-finite values) plus the native parameters of the best seed.
* ``loss.png``: training loss per chunk, every seed.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from numerics.errors import LintfError
from numerics.io import atomic_write_json, json_file, read_json
from numerics.models.kinds import KIND_OBJECTS
from numerics.train.checkpoint import read_checkpoint, save_checkpoint
from numerics.train.config import CONFIG_EXTRAS, TrainConfig, config_dict
from numerics.train.loop import Result, train
from numerics.train.results import baseline_table, finalize
from numerics.train.step import TrainState


def _claimed(out: Path) -> bool:
    """A run directory is claimed by its ``config.json`` only once a checkpoint or a result sits
    beside it: a run that stopped before its first checkpoint leaves nothing that blocks the same or
    a corrected command."""
    return (out / "config.json").exists() and any((out / f).exists() for f in _RESULTS)


_RESULTS = ("checkpoint.npz", "model.npz", "metrics.json")


def prepare(out: str | Path, cfg: TrainConfig, flag: str = "--out") -> Result | None:
    """Validate ``out`` for ``cfg`` without writing anything; return the run its checkpoint holds
    (to resume), else ``None``.

    One-line errors: ``out`` is not a writable directory; it holds a run with another config, or
    files a run writes without a run (they are never overwritten); its ``config.json`` or
    ``checkpoint.npz`` is corrupt (the message says which file to delete).  ``flag`` is the option
    that named ``out`` (``--runs`` for a sweep's cell)."""
    out = Path(out)
    _output_dir(out, flag)
    theirs = [] if _claimed(out) else [f for f in (*_RESULTS, "loss.png") if (out / f).exists()]
    if theirs:
        raise LintfError(
            f"{flag} {str(out)!r} holds {', '.join(theirs)} but no lintf run (no config.json "
            "beside a checkpoint or result); give a new or empty directory (nothing is overwritten)"
        )
    cfg_path, ck = out / "config.json", out / "checkpoint.npz"
    if cfg_path.exists():
        try:
            have = json_file(cfg_path)
            if not isinstance(have, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
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
        return read_checkpoint(ck, cfg)
    except (OSError, ValueError, LintfError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise LintfError(
            f"{flag}: {str(ck)!r} is corrupt ({reason}); delete it to restart this run from step 0"
        ) from None


def _output_dir(out: Path, flag: str) -> None:
    """``out`` is a directory, or can be made as one: not a file, and its nearest existing ancestor
    a writable directory."""
    if out.exists() and not out.is_dir():
        raise LintfError(f"{flag} {str(out)!r} is a file; give a directory")
    p = Path(os.path.abspath(out))
    while not p.exists():
        p = p.parent
    if not p.is_dir() or not os.access(p, os.W_OK | os.X_OK):
        raise LintfError(f"{flag} {str(out)!r}: {str(p)!r} is not a writable directory")


def _a_config(have: dict[str, Any]) -> bool:
    """``have`` (a ``config.json`` without a run beside it) is one that :func:`claim` wrote: it
    names the model, depth, noise, steps and batch of a run, its model is a lintf kind, and it holds
    nothing but training options.  Another is the user's, and is not replaced."""
    return (
        {"model", "layers", "noise", "steps", "batch"} <= set(have)
        and have["model"] in KIND_OBJECTS
        and set(have) <= {f.name for f in fields(TrainConfig)} | CONFIG_EXTRAS
    )


def _differences(have: dict[str, Any], want: dict[str, Any]) -> list[str]:
    """The keys in which a run directory's config ``have`` and the config asked for ``want`` differ.
    The start's content defines a run, not where its file lies: a start found at another path with
    the same ``warm_start_sha256`` (a sweep moved or copied, or its ``--out`` spelled another way)
    is the same run."""
    diff = sorted(k for k in set(have) | set(want) if have.get(k) != want.get(k))
    if "warm_start" in diff and "warm_start_sha256" not in diff and want.get("warm_start_sha256"):
        diff.remove("warm_start")
    return diff


def claim(out: str | Path, cfg: TrainConfig, flag: str = "--out") -> None:
    """Create ``out`` and write its ``config.json`` (atomically), unless it is claimed already:
    called just before the first checkpoint is written, so a run that dies earlier leaves nothing
    behind."""
    out = Path(out)
    if not _claimed(out):
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LintfError(
                f"{flag} {str(out)!r} is not a writable directory: {exc.strerror}"
            ) from None
        atomic_write_json(out / "config.json", config_dict(cfg))


def run(
    cfg: TrainConfig,
    out: str | Path,
    progress: bool = True,
    baselines: bool = True,
    stop_at: int | None = None,
    flag: str = "--out",
) -> dict[str, Any] | None:
    """Train into ``out`` (resuming if a matching checkpoint exists) and finalize; ``stop_at`` stops
    early without finalizing (used to simulate a killed run); ``flag`` names ``out`` in errors
    (:func:`prepare`)."""
    resume = prepare(out, cfg, flag)
    done = Path(out) / "metrics.json"
    if (
        resume is not None
        and int(resume.state.step) == cfg.steps
        and done.exists()
        and (Path(out) / "model.npz").exists()
    ):
        # finished before: its results as they are, not evaluated and written again,
        metrics = read_json(done)
        if not isinstance(metrics, dict):
            raise LintfError(
                f"{str(done)!r} is corrupt (not a JSON object); delete it and rerun to make it "
                "again"
            )
        # except the baselines it was trained without
        if baselines and metrics.get("baselines") is None:
            metrics["baselines"] = baseline_table(cfg)
            atomic_write_json(done, metrics)
        return metrics

    def ck(s: TrainState, r: Result) -> None:
        claim(out, cfg, flag)
        save_checkpoint(out, s, r)

    cols = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TextColumn("loss {task.fields[loss]:.4g}"),
        TextColumn("{task.fields[rate]:.1f} steps/s"),
        TimeRemainingColumn(),
    )
    # progress=False: the bar is kept up to date but never shown
    with Progress(*cols, transient=False, disable=not progress) as bar:
        start = 0 if resume is None else int(resume.state.step)
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
    if int(res.state.step) < cfg.steps:
        return None
    return finalize(out, cfg, res, baselines=baselines)
