"""Shared fakes of the reproduction's tests: a tiny budget, and cell functions that make records
without training.

Test modules import these names (never each other)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from numerics.reproduce.grid import CATEGORICAL, Budget, Cell, Schedule, plan_of, start_of
from numerics.reproduce.record import Record

#: Seconds, not meaning: two stages of 20 steps of batch 64, small evaluations.
TINY_SCHEDULE = Schedule(steps=20, batch=64, seeds=1, most=2, held_out=256, scale_pool=2048)
TINY = Budget("tiny", ("diag",), (1, 2), ("uniform:1", CATEGORICAL), TINY_SCHEDULE, seeds=2, eval_sequences=500,
              tune_sequences=500, profile_sequences=100, profile_points=3, select_sequences=256)


def number(name: str, salt: str = "") -> float:
    """A deterministic number in (0.01, 1.01) of a cell name."""
    return 0.01 + int(hashlib.sha256((name + salt).encode()).hexdigest()[:8], 16) / 2**32


def fake_record(cell: Cell, budget: Budget, failed: str | None = None) -> Record:
    """A record of ``cell`` under ``budget`` with numbers made from its name."""
    loss, L = number(cell.name), cell.layers
    layers = {k: [number(cell.name, f"{k}{i}") for i in range(L + 1)]
              for k in ("loss", "se", "minus_Bayes", "minus_Bayes_se", "raw")}
    layers["loss"][-1] = loss
    ev = {"loss": loss, "se": 0.01, "minus_Bayes": loss - 0.005, "minus_Bayes_se": 0.01, "Bayes": 0.005,
          "raw": 1.0, "sequences": budget.eval_sequences, "layers": layers,
          "tail": {"failed": None, "max": 1.0, "mean": loss, "se": 0.01, "sequences": budget.eval_sequences}}
    sig = [0.0, 1.0, 2.0]
    profile = {"sigma": sig, "loss": [[loss] * 3 for _ in range(L + 1)], "se": [[0.01] * 3 for _ in range(L + 1)]}
    training = {"steps": 20, "converged": True, "chosen_stage": 1, "stages": [{"stage": 1, "steps": 20}]}
    return Record(cell=cell.name, model=cell.model, layers=L, noise=cell.noise, budget=budget.name,
                  start=start_of(cell), plan=plan_of(cell, budget), failed=failed, eval=ev, profile=profile,
                  training=training, provenance={"device": "cpu", "seconds": 1.0, "notes": []})


class FakeCell:
    """A cell function ``(cell, budget, rundir) -> files`` that trains nothing: it records each call
    in ``rundir/calls`` and, once ``stop_after`` cells are done in this process, raises
    ``KeyboardInterrupt`` (an interrupted sweep)."""

    def __init__(self, stop_after: int | None = None) -> None:
        self.done, self.stop_after = 0, stop_after

    def __call__(self, cell: Cell, budget: Budget, rundir: Path) -> dict[str, bytes]:
        if self.stop_after is not None and self.done >= self.stop_after:
            raise KeyboardInterrupt
        rundir.mkdir(parents=True, exist_ok=True)
        with open(rundir / "calls", "a") as f:
            f.write("1\n")
        self.done += 1
        return {"model.npz": f"model of {cell.name}".encode(), "metrics.json": fake_record(cell, budget).to_json()}


def fake_baselines(noise: str, budget: Budget) -> dict:
    """A baselines file's content for ``noise`` under ``budget``."""
    methods = {m: {"loss": 0.3 + i / 10, "se": 0.01, "minus_Bayes": 0.29 + i / 10, "minus_Bayes_se": 0.01}
               for i, m in enumerate(("ConstRR", "AdaRR", "TunedRR", "Bayes"))}
    methods["Bayes"] |= {"minus_Bayes": 0.0, "minus_Bayes_se": 0.0}
    curve = {"loss": [0.1, 0.2, 0.3], "se": [0.01] * 3}  # copied per method below
    return {"noise": noise, "eval_sequences": budget.eval_sequences, "tune_sequences": budget.tune_sequences,
            "profile_sequences": budget.profile_sequences, "profile_points": budget.profile_points,
            "methods": methods, "profile": {"sigma": [0.0, 1.0, 2.0]} | {m: {k: list(v) for k, v in curve.items()} for m in methods}}
