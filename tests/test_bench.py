"""``lintf bench`` end to end on a tiny model: its JSON, its FLOP count, time-to-quality and bad input.

The benchmark's numbers are machine-dependent and are not asserted; what is asserted is the shape of
what it reports and the relations that hold on any machine.
"""

from __future__ import annotations

import contextlib
import io
import json
import shlex

import pytest

from numerics.cli import build_parser, main

D, N = 10, 20  # the benchmark's sizes (the training defaults)
BENCH = ["bench", "--models", "diag", "--layers", "3", "--batch", "64", "--steps", "2", "--max-steps", "4"]


@pytest.fixture(scope="module")
def report():
    """One benchmark run shared by the tests below, read back from its ``--json`` output."""
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main([*BENCH, "--ttq", "--target", "1e9", "--json"]) == 0
    return json.loads(out.getvalue())


def test_throughput_rows_relate_rates_and_flops(report):
    rows = {r["forward"]: r for r in report["throughput"]}
    assert set(rows) == {"fast", "plain"} and report["devices"] >= 1 and report["matmul_gflops"] > 0
    for r in rows.values():
        assert (r["model"], r["layers"], r["batch"]) == ("diag", 3, 64)
        assert r["steps_per_s"] > 0
        assert r["sequences_per_s"] == pytest.approx(64 * r["steps_per_s"])
        assert r["gflops"] == pytest.approx(r["steps_per_s"] * r["flop_per_step"] / 1e9)
    # the fast pass's two (d+1)^3 Gram-map products per layer but the last, forward, and three backward
    assert rows["fast"]["flop_per_step"] >= 64 * (3 - 1) * 5 * 2 * (D + 1) ** 3
    # the plain pass carries all n+1 tokens: more arithmetic than the Gram pass
    assert rows["plain"]["flop_per_step"] > rows["fast"]["flop_per_step"]
    assert report["speedup"] == {"diag": pytest.approx(rows["fast"]["steps_per_s"] / rows["plain"]["steps_per_s"])}


def test_time_to_quality_reports_the_first_chunk_that_reaches_the_target(report):
    (row,) = report["ttq"]
    assert row["reached"] and row["step"] == 4  # one chunk of --max-steps 4 reaches a target of 1e9
    assert row["loss"] <= row["target"] == 1e9 and row["train_s"] <= row["total_s"]


def test_reproduce_line_parses_to_the_same_arguments(report):
    words = shlex.split(report["reproduce"])
    assert words[:3] == ["python", "-m", "numerics.cli"]
    again, first = build_parser().parse_args(words[3:]), build_parser().parse_args([*BENCH, "--ttq", "--target", "1e9", "--json"])
    assert vars(again) == vars(first)


def test_unreachable_target_is_reported_not_reached(capsys):
    assert main([*BENCH, "--no-plain", "--steps", "1", "--ttq", "--target", "-1", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["ttq"]
    assert not row["reached"] and row["step"] is None and row["train_s"] is None


@pytest.mark.parametrize("args, message", [
    (["--models", "bogus"], "model kind must be one of"),
    (["--models", ","], "--models must name at least one"),
    (["--steps", "0"], "--steps must be >= 1"),
    (["--layers", "0"], "--layers must be >= 1"),
])
def test_bad_input_is_one_line(capsys, args, message):
    assert main(["bench", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
