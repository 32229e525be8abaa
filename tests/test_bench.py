"""The measurements of :mod:`numerics.bench` on a tiny model, in the default run (``lintf bench``
end to end is in ``tests/cli/test_bench.py``, slow).

The numbers depend on the machine; what is asserted is how they relate: a row's sequences per
second are its batch times its steps per second, its GFLOP/s its steps per second times XLA's count
of one step, and time-to-quality stops at the first chunk that reaches its target.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from numerics import bench
from numerics.train.config import TrainConfig


def test_a_throughput_row_relates_its_rate_batch_and_flops() -> None:
    (row,) = bench.throughput_rows("diag", 1, 16, steps=2, reps=1, plain=False)
    assert (row["model"], row["layers"], row["batch"], row["forward"]) == ("diag", 1, 16, "fast")
    assert row["steps_per_s"] > 0 and row["sequences_per_s"] == pytest.approx(
        16 * row["steps_per_s"]
    )
    assert row["flop_per_step"] > 0
    assert row["gflops"] == pytest.approx(row["steps_per_s"] * row["flop_per_step"] / 1e9)


def test_time_to_quality_stops_at_the_first_chunk_that_reaches_the_target() -> None:
    cfg = TrainConfig(model="diag", layers=1, batch=16, steps=4, chunk=2)
    reached = bench.time_to_quality(cfg, target=1e9)
    assert reached["step"] == 2 and reached["reached"] <= reached["total"]
    # no adjusted loss is below -1; one chunk of the same program, checked once
    missed = bench.time_to_quality(replace(cfg, steps=2), target=-1.0)
    assert missed["reached"] is None and "step" not in missed and missed["loss"] > -1.0
