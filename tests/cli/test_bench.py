"""``lintf bench`` (:mod:`numerics.cli.bench` over :mod:`numerics.bench`) end to end on a tiny model: its JSON, its FLOP count, time-to-quality and bad input.

The benchmark's numbers are machine-dependent and are not asserted; what is asserted is the shape of
what it reports and the relations that hold on any machine.  The runs take about 45 s (one benchmark on a host
split into 2 devices, and a second in process), so they are in the slow suite (``make test-slow``); the bad-input
checks stay in the default one.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from numerics.cli import build_parser, main
from numerics.train.devices import ENV

ROOT = Path(__file__).resolve().parents[2]

D, N = 10, 20  # the benchmark's sizes (the training defaults)
BENCH = [
    "bench",
    "--models",
    "diag",
    "--layers",
    "3",
    "--batch",
    "64",
    "--steps",
    "2",
    "--max-steps",
    "4",
]


@pytest.fixture(scope="module")
def report():
    """One benchmark run shared by the tests below: the console command on a host split into 2 devices
    (as ``lintf`` runs on this 2-core machine), read back from its ``--json`` output."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"} | {
        ENV: "2",
        "JAX_PLATFORMS": "cpu",
    }
    out = subprocess.run(
        [sys.executable, "-m", "numerics.cli", *BENCH, "--ttq", "--target", "1e9", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.slow
def test_throughput_rows_relate_rates_and_flops(report):
    runs = [(r["forward"], r["devices"]) for r in report["throughput"]]
    # the plain pass on the fast pass's 2 devices, and on one: the plain jitted reference implementation
    assert runs == [("fast", 2), ("plain", 2), ("plain", 1)] and report["devices"] == 2
    assert report["matmul_gflops"] > 0
    rows = {(r["forward"], r["devices"]): r for r in report["throughput"]}
    for r in rows.values():
        assert (r["model"], r["layers"], r["batch"]) == ("diag", 3, 64)
        assert r["steps_per_s"] > 0
        assert r["sequences_per_s"] == pytest.approx(64 * r["steps_per_s"])
        assert r["gflops"] == pytest.approx(r["steps_per_s"] * r["flop_per_step"] / 1e9)
    # the fast pass's two (d+1)^3 Gram-map products per layer but the last, forward, and three backward
    fast, plain, plain1 = rows[("fast", 2)], rows[("plain", 2)], rows[("plain", 1)]
    assert fast["flop_per_step"] >= 64 * (3 - 1) * 5 * 2 * (D + 1) ** 3
    # the plain pass carries all n+1 tokens: more arithmetic than the Gram pass, on one device as on two
    assert plain["flop_per_step"] > fast["flop_per_step"]
    assert plain1["flop_per_step"] == pytest.approx(plain["flop_per_step"], rel=0.05)
    assert report["speedup"] == {"diag": pytest.approx(fast["steps_per_s"] / plain["steps_per_s"])}
    assert report["speedup_vs_plain_one_device"] == {
        "diag": pytest.approx(fast["steps_per_s"] / plain1["steps_per_s"])
    }


@pytest.mark.slow
def test_time_to_quality_reports_the_first_chunk_that_reaches_the_target(report):
    (row,) = report["ttq"]
    assert row["reached"] and row["step"] == 4  # one chunk of --max-steps 4 reaches a target of 1e9
    assert row["loss"] <= row["target"] == 1e9 and row["train_s"] <= row["total_s"]


@pytest.mark.slow
def test_reproduce_line_parses_to_the_same_arguments(report):
    words = shlex.split(report["reproduce"])
    assert words[:4] == [
        f"{ENV}=2",
        "python",
        "-m",
        "numerics.cli",
    ]  # the device split is part of the command
    again, first = (
        build_parser().parse_args(words[4:]),
        build_parser().parse_args([*BENCH, "--ttq", "--target", "1e9", "--json"]),
    )
    assert vars(again) == vars(first)


@pytest.mark.slow
def test_unreachable_target_is_reported_not_reached(capsys):
    assert main([*BENCH, "--no-plain", "--steps", "1", "--ttq", "--target", "-1", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["ttq"]
    assert not row["reached"] and row["step"] is None and row["train_s"] is None


@pytest.mark.parametrize(
    "args, message",
    [
        (["--models", "bogus"], "model kind must be one of"),
        (["--models", ","], "--models must name at least one"),
        (["--steps", "0"], "--steps must be >= 1"),
        (["--layers", "0"], "--layers must be >= 1"),
        (["--models", "full,diag,full"], "--models names full more than once"),
        (
            ["--target", "0.05"],
            "--target 0.05 sets the time-to-quality run; add --ttq, or leave it out",
        ),
        (
            ["--noise", "uniform:3", "--max-steps", "10"],
            "--noise uniform:3 and --max-steps 10 set the time-to-quality run; add --ttq, or leave them out",
        ),
        (["--eval-sequences", "5000"], "--eval-sequences 5000 sets the time-to-quality run"),
    ],
)
def test_bad_input_is_one_line(capsys, monkeypatch, args, message):
    from numerics import bench

    def no_work(*a, **k):
        raise AssertionError("bench measured before its arguments were checked")

    monkeypatch.setattr(bench, "matmul_gflops", no_work)  # the first measurement
    assert main(["bench", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
