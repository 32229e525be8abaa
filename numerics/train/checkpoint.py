r"""A training run's checkpoint, ``checkpoint.npz`` under ``--out``: what :func:`save_checkpoint`
writes after every chunk and :func:`read_checkpoint` reads back on resume.

The archive holds the state's leaves (``leaf_i``), the states of earlier chunk starts kept for
deeper rollbacks (``history_j_leaf_i``) and ``meta``, a JSON string: the number of leaves, the step,
the loss curve, the rollback log, the skipped losses, the history's marks, the training seconds and
the time it was written.  It is written atomically (:func:`numerics.io.atomic_savez`) and read
through the product's readers (:func:`numerics.archive.read_npz` loads only the arrays the state
needs), with every part of ``meta`` and every leaf checked against the state the config trains, so
a damaged or foreign file is a :class:`ValueError` naming what is wrong, never a traceback.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

from numerics.archive import read_npz
from numerics.errors import LintfError
from numerics.io import atomic_savez, parse_json
from numerics.train.config import TrainConfig
from numerics.train.loop import Result, init_state
from numerics.train.step import TrainState


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


def read_checkpoint(ck: Path, cfg: TrainConfig) -> Result:
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
    # NaN fails both comparisons; an integer past float64 is compared exactly
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x <= _COUNT_MAX:
        raise ValueError(f"its training time is {x!r}, not a number of seconds >= 0")
    return float(x)
