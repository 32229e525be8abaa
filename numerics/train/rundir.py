r"""A training run directory: its claim, atomic checkpoints and resume; what a finished run writes
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
* ``model.npz``: universal ``P, Q`` (:func:`numerics.io.save_model`, which refuses non-finite
  values) plus the native parameters of the best seed.
* ``loss.png``: training loss per chunk, every seed.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

import jax
import numpy as np
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from numerics.archive import read_npz
from numerics.errors import LintfError
from numerics.io import atomic_savez, atomic_write_json, json_file, parse_json, read_json
from numerics.models.kinds import KIND_OBJECTS
from numerics.train.config import CONFIG_EXTRAS, TrainConfig, config_dict
from numerics.train.loop import Result, init_state, train
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
        return _read_checkpoint(ck, cfg)
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


def _read_checkpoint(ck: Path, cfg: TrainConfig) -> Result:
    """The run ``ck`` holds, after checking its archive (:func:`numerics.archive.read_npz`: only the
    arrays the state needs are loaded), its ``meta`` (:func:`_checkpoint_meta`), every leaf against
    the state ``cfg`` trains (shape, dtype, finiteness) and the step against ``cfg.steps``."""
    shapes = jax.eval_shape(lambda: init_state(cfg, template=True))
    template, structure = jax.tree_util.tree_flatten(shapes)
    found = read_npz(ck, "the archive", ("meta",))
    if "meta" not in found or found["meta"].dtype.kind != "U" or found["meta"].ndim != 0:
        raise ValueError("it holds no meta string")
    meta = _checkpoint_meta(parse_json(str(found["meta"]), "its meta", nonfinite=True))
    n_leaves, n_hist = meta["leaves"], meta.get("history", 0)
    if n_leaves != len(template):
        raise ValueError(f"{n_leaves} state arrays, this config has {len(template)}")
    names = [f"leaf_{i}" for i in range(n_leaves)]
    names += [f"history_{j}_leaf_{i}" for j in range(n_hist) for i in range(n_leaves)]
    z = read_npz(ck, "the archive", tuple(names))
    if len(z) != len(names):
        raise ValueError(f"it lacks array {next(n for n in names if n not in z)!r}")
    leaves = [z[f"leaf_{i}"] for i in range(n_leaves)]
    history = [[z[f"history_{j}_leaf_{i}"] for i in range(n_leaves)] for j in range(n_hist)]
    for state in (leaves, *history):
        for i, (x, t) in enumerate(zip(state, template)):
            if x.shape != t.shape or x.dtype != t.dtype:
                raise ValueError(
                    f"array {i} is {x.dtype}{list(x.shape)}, this config needs "
                    f"{t.dtype}{list(t.shape)}"
                )
            if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
                raise ValueError(f"array {i} holds non-finite values")
    step, state = meta["step"], structure.unflatten(leaves)
    if not 0 < step <= cfg.steps or int(state.step) != step:
        raise ValueError(f"step {step} is outside [1, {cfg.steps}] or disagrees with the state")
    return Result(
        state,
        curve=meta["curve"],
        rollbacks=meta["rollbacks"],
        seconds=_seconds(meta.get("seconds", 0.0)),
        skipped=meta.get("skipped", 0),
        history=[
            (structure.unflatten(h), n, k)
            for h, (n, k) in zip(history, meta.get("history_marks", []))
        ],
    )


#: Largest count a checkpoint's ``meta`` may give (state arrays, steps, rollbacks, skipped losses).
_COUNT_MAX = 2**53


def _checkpoint_meta(meta: Any) -> dict[str, Any]:
    """A checkpoint's parsed ``meta`` (:func:`save_checkpoint`), its parts of the types a resumed
    run uses: counts are integers in ``[0, 2**53]``; ``curve`` a list of ``[end step, loss per
    seed]`` (a loss may be NaN); ``rollbacks`` a list of objects; ``history_marks`` a list of two
    counts each.  Else a :class:`ValueError` naming the part."""

    def count(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= _COUNT_MAX

    if not isinstance(meta, dict):
        raise ValueError("its meta is not a JSON object")
    for k in ("leaves", "step", "history", "skipped"):
        if (k in meta or k in ("leaves", "step")) and not count(meta.get(k)):
            raise ValueError(f"its meta's {k} is {str(meta.get(k))[:40]}, not a count")
    curve, marks = meta.get("curve"), meta.get("history_marks", [])
    if not isinstance(curve, list) or not all(
        isinstance(c, list) and c and count(c[0]) and all(isinstance(x, float) for x in c[1:])
        for c in curve
    ):
        raise ValueError("its meta's curve is not a list of [end step, loss per seed]")
    if not isinstance(meta.get("rollbacks"), list) or not all(
        isinstance(r, dict) for r in meta["rollbacks"]
    ):
        raise ValueError("its meta's rollbacks is not a list of objects")
    if not isinstance(marks, list) or not all(
        isinstance(m, list) and len(m) == 2 and all(map(count, m)) for m in marks
    ):
        raise ValueError("its meta's history_marks is not a list of pairs of counts")
    return meta


def _seconds(x: Any) -> float:
    """A checkpoint's training time: a finite number >= 0 (0 where it is missing, as in checkpoints
    without it)."""
    if (
        isinstance(x, bool)
        or not isinstance(x, (int, float))
        or abs(x) > _COUNT_MAX  # an integer past float64 (math.isfinite would overflow)
        or not math.isfinite(x)
        or x < 0
    ):
        raise ValueError(f"its training time is {x!r}, not a number of seconds >= 0")
    return float(x)


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


def save_checkpoint(out: str | Path, state: TrainState, res: Result) -> None:
    """Write the state atomically; refuses a non-finite state (the divergence guard never produces
    one)."""
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

    if progress:
        cols = (
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TextColumn("loss {task.fields[loss]:.4g}"),
            TextColumn("{task.fields[rate]:.1f} steps/s"),
            TimeRemainingColumn(),
        )
        with Progress(*cols, transient=False) as bar:
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
    else:
        res = train(cfg, resume, checkpoint=ck, stop_at=stop_at)
    if int(res.state.step) < cfg.steps:
        return None
    return finalize(out, cfg, res, baselines=baselines)
