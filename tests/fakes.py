"""Fakes shared by the tests: small stand-ins for the expensive parts of lintf.  Each section
names the code it stands in for; test modules import fakes from here, never from each other."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import numpy as np

# ------------------------------------------------------------------------------------------------
# Sweep cells for numerics.reproduce.executor: ``functools.partial(fake, ...)`` is a task's
# ``fn(rundir)``.  Each is module-level, so that it pickles by reference and reaches a Dask worker.
# ------------------------------------------------------------------------------------------------

#: the size of a fake cell's state
CELL_SIZE = 16


def checkpointed_cell(rundir: Path, *, seed: int, steps: int = 8, pause: float = 0.0,
                      midway: str | None = None) -> dict[str, bytes]:
    """A deterministic, checkpointed computation standing in for ``train_cell``: ``steps`` steps
    of ``x <- tanh(M x + k)`` from a state drawn by ``seed``, saving ``(x, k)`` to
    ``rundir/checkpoint.npz`` after each step and resuming from it.  Each start appends the step it
    starts from to ``rundir/starts`` (outside the result, so a resumed run returns the same files
    as an uninterrupted one).  ``pause``: seconds of sleep per step.  ``midway``: when the step
    ``steps // 2`` is saved and no file ``midway`` exists yet, write this process's id to it and
    wait (up to 60 s) to be killed."""
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((CELL_SIZE, CELL_SIZE)) / np.sqrt(CELL_SIZE)
    x, k = rng.standard_normal(CELL_SIZE), 0
    ckpt = rundir / "checkpoint.npz"
    if ckpt.exists():
        with np.load(ckpt) as z:
            x, k = z["x"], int(z["k"])
    with open(rundir / "starts", "a") as f:
        f.write(f"{k}\n")
    while k < steps:
        x, k = np.tanh(m @ x + k), k + 1
        buf = io.BytesIO()
        np.savez(buf, x=x, k=k)
        tmp = ckpt.with_suffix(".tmp")
        tmp.write_bytes(buf.getvalue())
        os.replace(tmp, ckpt)
        if midway is not None and k == steps // 2 and not Path(midway).exists():
            Path(midway + ".tmp").write_text(str(os.getpid()))
            os.replace(midway + ".tmp", midway)
            time.sleep(60)
        time.sleep(pause)
    model = io.BytesIO()
    np.save(model, x)
    metrics = {"seed": seed, "steps": steps, "loss": float(x @ x)}
    return {"model.npy": model.getvalue(),
            "metrics.json": json.dumps(metrics, sort_keys=True).encode()}


def failing_cell(rundir: Path, *, why: str = "diverged at step 3") -> dict[str, bytes]:
    """A cell that raises ``RuntimeError(why)``."""
    raise RuntimeError(why)


def interrupted_cell(rundir: Path, *, flag: str, seed: int) -> dict[str, bytes]:
    """A cell stopped by Ctrl-C the first time (it creates ``flag`` and raises
    ``KeyboardInterrupt``), then the :func:`checkpointed_cell` of ``seed``."""
    if not Path(flag).exists():
        Path(flag).touch()
        raise KeyboardInterrupt
    return checkpointed_cell(rundir, seed=seed)


def environment_cell(rundir: Path, *, names: tuple[str, ...]) -> dict[str, bytes]:
    """A cell whose ``metrics.json`` holds the process id and the environment variables ``names``
    it ran with."""
    seen = {"pid": os.getpid(), "env": {k: os.environ.get(k) for k in names}}
    return {"metrics.json": json.dumps(seen, sort_keys=True).encode()}
