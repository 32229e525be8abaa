"""Fakes shared by the tests: small stand-ins for the expensive parts of lintf.  Each section
names the code it stands in for; test modules import fakes from here, never from each other."""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from numerics.reproduce.grid import CATEGORICAL, Budget, Cell, Schedule, plan_of, start_of
from numerics.reproduce.record import Record

# ------------------------------------------------------------------------------------------------
# Sweep cells for numerics.reproduce.executor: ``functools.partial(fake, ...)`` is a task's
# ``fn(rundir)``.  Each is module-level, so that it pickles by reference and reaches a Dask worker.
# ------------------------------------------------------------------------------------------------

#: the size of a fake cell's state
CELL_SIZE = 16


def checkpointed_cell(
    rundir: Path, *, seed: int, steps: int = 8, pause: float = 0.0, midway: str | None = None
) -> dict[str, bytes]:
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
    return {
        "model.npy": model.getvalue(),
        "metrics.json": json.dumps(metrics, sort_keys=True).encode(),
    }


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


# ------------------------------------------------------------------------------------------------
# The reproduction's sweep (numerics.reproduce.sweep): a tiny budget, and cell functions that make
# records without training.
# ------------------------------------------------------------------------------------------------

#: Seconds, not meaning: two stages of 20 steps of batch 64, small evaluations.
TINY_SCHEDULE = Schedule(steps=20, batch=64, seeds=1, most=2, held_out=256, scale_pool=2048)
TINY = Budget(
    "tiny",
    ("diag",),
    (1, 2),
    ("uniform:1", CATEGORICAL),
    TINY_SCHEDULE,
    seeds=2,
    eval_sequences=500,
    tune_sequences=500,
    profile_sequences=100,
    profile_points=3,
    select_sequences=256,
    rescue_pool=4096,
)


def number(name: str, salt: str = "") -> float:
    """A deterministic number in (0.01, 1.01) of a cell name."""
    return 0.01 + int(hashlib.sha256((name + salt).encode()).hexdigest()[:8], 16) / 2**32


def fake_record(cell: Cell, budget: Budget, failed: str | None = None) -> Record:
    """A record of ``cell`` under ``budget`` with numbers made from its name."""
    loss, L = number(cell.name), cell.layers
    layers = {
        k: [number(cell.name, f"{k}{i}") for i in range(L + 1)]
        for k in ("loss", "se", "minus_Bayes", "minus_Bayes_se", "raw")
    }
    layers["loss"][-1] = loss
    ev = {
        "loss": loss,
        "se": 0.01,
        "minus_Bayes": loss - 0.005,
        "minus_Bayes_se": 0.01,
        "Bayes": 0.005,
        "raw": 1.0,
        "sequences": budget.eval_sequences,
        "layers": layers,
        "tail": {
            "failed": None,
            "max": 1.0,
            "mean": loss,
            "se": 0.01,
            "sequences": budget.eval_sequences,
        },
    }
    sig = [0.0, 1.0, 2.0]
    profile = {
        "sigma": sig,
        "loss": [[loss] * 3 for _ in range(L + 1)],
        "se": [[0.01] * 3 for _ in range(L + 1)],
    }
    training = {
        "steps": 20,
        "converged": True,
        "chosen_stage": 1,
        "stages": [{"stage": 1, "steps": 20}],
    }
    return Record(
        cell=cell.name,
        model=cell.model,
        layers=L,
        noise=cell.noise,
        budget=budget.name,
        start=start_of(cell),
        plan=plan_of(cell, budget),
        failed=failed,
        eval=ev,
        profile=profile,
        training=training,
        provenance={"device": "cpu", "seconds": 1.0, "notes": []},
    )


class FakeCell:
    """A cell function ``(cell, budget, rundir) -> files`` that trains nothing: it records each call in
    ``rundir/calls`` and, once ``stop_after`` cells are done in this process, raises ``KeyboardInterrupt`` (an
    interrupted sweep)."""

    def __init__(self, stop_after: int | None = None) -> None:
        self.done, self.stop_after = 0, stop_after

    def __call__(self, cell: Cell, budget: Budget, rundir: Path) -> dict[str, bytes]:
        if self.stop_after is not None and self.done >= self.stop_after:
            raise KeyboardInterrupt
        rundir.mkdir(parents=True, exist_ok=True)
        with open(rundir / "calls", "a") as f:
            f.write("1\n")
        self.done += 1
        return {
            "model.npz": f"model of {cell.name}".encode(),
            "metrics.json": fake_record(cell, budget).to_json(),
        }


def fake_baselines(noise: str, budget: Budget) -> dict:
    """A baselines file's content for ``noise`` under ``budget``."""
    methods = {
        m: {"loss": 0.3 + i / 10, "se": 0.01, "minus_Bayes": 0.29 + i / 10, "minus_Bayes_se": 0.01}
        for i, m in enumerate(("ConstRR", "AdaRR", "TunedRR", "Bayes"))
    }
    methods["Bayes"] |= {"minus_Bayes": 0.0, "minus_Bayes_se": 0.0}
    curve = {"loss": [0.1, 0.2, 0.3], "se": [0.01] * 3}  # copied per method below
    return {
        "noise": noise,
        "eval_sequences": budget.eval_sequences,
        "tune_sequences": budget.tune_sequences,
        "profile_sequences": budget.profile_sequences,
        "profile_points": budget.profile_points,
        "methods": methods,
        "profile": {"sigma": [0.0, 1.0, 2.0]}
        | {m: {k: list(v) for k, v in curve.items()} for m in methods},
    }


# ------------------------------------------------------------------------------------------------
# Implementations under test (numerics.testing)
# ------------------------------------------------------------------------------------------------

Forward = Callable[[Any, Any, Any], Any]


def near_miss(forward: Forward, rel: float, tokens: bool) -> Forward:
    """``forward`` with every layer's output off by the relative ``rel``: the tokens past the input
    (``tokens``: ``forward`` returns ``(L+1, B, n+1, d+1)``) or the predictions ``(B,)``."""

    def off(X: Any, y: Any, x_query: Any) -> np.ndarray:
        out = np.asarray(forward(X, y, x_query))
        return np.concatenate([out[:1], out[1:] * (1 + rel)]) if tokens else out * (1 + rel)

    return off


# ------------------------------------------------------------------------------------------------
# The command line (numerics.cli): a `lintf train` that takes a second (one DIAG layer, n = 4,
# d = 2, four steps of batch 8), as the options after the command's name.
# ------------------------------------------------------------------------------------------------

TINY_TRAIN = [
    "--model", "diag", "--layers", "1", "--n", "4", "--d", "2", "--steps", "4", "--chunk-steps", "2",
    "--batch", "8", "--eval-sequences", "16", "--no-baselines", "--json",
]  # fmt: skip

# ------------------------------------------------------------------------------------------------
# The console command (numerics.cli.main with no arguments: SIGINT handling, process set-up) with
# the budget TINY above registered as ``--budget tiny``: ``python -c TINY_CONSOLE reproduce ...``,
# run from the repository's root.  TINY is registered as the command loads its modules, after the
# process set-up (JAX not imported before it) and inside the command's SIGINT handling, so that an
# interrupt at any moment meets the command's own handler, as it does in ``lintf``.
# ------------------------------------------------------------------------------------------------

TINY_CONSOLE = """
import sys
from numerics import cli
load = cli._load
def _load(module):
    if module == "numerics.cli.reproduce":
        from numerics.reproduce import grid
        from tests.fakes import TINY
        grid.BUDGETS["tiny"] = TINY
    return load(module)
cli._load = _load
sys.exit(cli.main())
"""
