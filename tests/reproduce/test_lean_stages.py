"""``benchmarks/lean_stages.py compare`` sets a sweep's cells beside a reference sweep's, paired on the evaluation
sequences: a copy of the reference is as good with a zero difference, a cell made worse is not, and it refuses to
compare a sweep with itself or to mix its log with another reference's."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from numerics import models
from numerics.io import load_model, save_model
from numerics.models.constructions import gd
from numerics.reproduce import experiments as ex
from tests.reproduce.test_experiments import TEST, StubTrainer

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "lean_stages.py"
_spec = importlib.util.spec_from_file_location("lean_stages", SCRIPT)
lean_stages = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lean_stages)

CELL = ex.Cell("diag", 1, "uniform:1")


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lean")
    ex.run_cell(CELL, TEST, root / "ref", root / "runs", trainer=StubTrainer())
    return root / "ref"


def compare(out: Path, reference: Path, log: Path, *flags: str) -> int:
    return lean_stages.main(["compare", "--budget", "test", "--reference-budget", "test", "--out", str(out),
                             "--reference", str(reference), "--log", str(log), *flags, CELL.name])


def test_a_copy_is_as_good_and_a_worse_model_is_not(reference: Path, tmp_path: Path, capsys):
    """The reference holds one GD step; the compared cell first a copy of it, then the zero model (ŷ = 0)."""
    ref, out, log = tmp_path / "ref", tmp_path / "out", tmp_path / "log.json"
    shutil.copytree(reference, ref)
    P, Q, meta = load_model(ref / "models" / CELL.name / "model.npz")
    gd_P, gd_Q = (np.asarray(x, np.float64) for x in models.universal(gd(0.05, 1), TEST.d))
    save_model(ref / "models" / CELL.name / "model.npz", gd_P, gd_Q, meta)
    shutil.copytree(ref, out)
    assert compare(out, ref, log) == 0
    row = json.loads(log.read_text())["cells"][0]
    assert row["diff"] == 0 and row["as_good"] and row["work"] == row["reference_work"] > 0
    save_model(out / "models" / CELL.name / "model.npz", 0 * gd_P, 0 * gd_Q, meta)  # a changed file: compared again
    assert compare(out, ref, log) == 0
    row = json.loads(log.read_text())["cells"][0]
    assert row["diff"] > 3 * row["diff_se"] > 0 and not row["as_good"]
    assert "0 of 1 cells as good" in capsys.readouterr().out


def test_it_refuses_the_reference_itself_and_a_log_of_another_reference(reference: Path, tmp_path: Path, capsys):
    assert compare(reference, reference, tmp_path / "log.json") == 2
    assert "--out must differ from --reference" in capsys.readouterr().err
    out, log = tmp_path / "out", tmp_path / "log.json"
    shutil.copytree(reference, out)
    assert compare(out, reference, log) == 0
    other = tmp_path / "other"
    shutil.copytree(reference, other)
    assert compare(out, other, log) == 2
    assert "was made with other stages or another reference" in capsys.readouterr().err


@pytest.mark.parametrize("flag, value, says", [("--rel", "0", "rel must be in (0, 1)"), ("--rel", "1", "rel must"),
                                               ("--rel", "nan", "rel must"), ("--rel", "-0.01", "rel must"),
                                               ("--least", "0", "--least must be in 1..2"), ("--least", "3", "--least")])
def test_a_probe_refuses_a_stage_rule_outside_its_range(flag: str, value: str, says: str, tmp_path: Path, capsys):
    argv = ["probe", "--budget", "test", "--reference-budget", "test", "--steps", "20", "--batch", "64", flag, value,
            "--out", str(tmp_path / "out"), "--runs", str(tmp_path / "runs"), "--reference", str(tmp_path / "ref"),
            "--log", str(tmp_path / "log.json"), CELL.name]
    assert lean_stages.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and not (tmp_path / "log.json").exists()


def test_stored_compares_the_losses_the_metrics_hold(reference: Path, tmp_path: Path, capsys):
    """The same model with a ``metrics.json`` that says 10 % higher: evaluated, the two are equal; ``--stored`` reads
    the stored losses, without a paired SE, calls it worse, and keeps its log apart from an evaluated one's."""
    out, log, stored = tmp_path / "out", tmp_path / "log.json", tmp_path / "stored.json"
    shutil.copytree(reference, out)
    path = out / "models" / CELL.name / "metrics.json"
    m = json.loads(path.read_text())
    m["eval"]["loss"] *= 1.1
    path.write_text(json.dumps(m))
    assert compare(out, reference, log) == 0
    assert json.loads(log.read_text())["cells"][0]["diff"] == 0
    assert compare(out, reference, stored, "--stored") == 0
    row = json.loads(stored.read_text())["cells"][0]
    assert row["diff"] == pytest.approx(0.1 * row["reference"], rel=1e-9) and row["diff_se"] is None
    assert not row["as_good"] and "(stored +" in capsys.readouterr().out
    assert compare(out, reference, log, "--stored") == 2


def test_a_heavy_tailed_difference_is_not_covered_by_its_se():
    """Higher by 10 %, with a paired SE as large as the difference (a tail carries it): worse, though the convergence
    check's 2-SE allowance would pass it; within 3 % or the float32 floor it is as good, and a failed cell never."""
    row = {"failed": None, "reference": 1.0, "diff": 0.1, "diff_se": 0.1, "floor": 0.0}
    assert not lean_stages.as_good(row)
    assert lean_stages.as_good(row | {"diff": 0.029}) and lean_stages.as_good(row | {"floor": 0.2})
    assert lean_stages.as_good(row | {"diff": -5.0}) and not lean_stages.as_good(row | {"failed": "x", "diff": 0.0})


_SPEED = Path(__file__).resolve().parents[2] / "benchmarks" / "stage_seconds.py"
_speed_spec = importlib.util.spec_from_file_location("stage_seconds", _SPEED)
stage_seconds = importlib.util.module_from_spec(_speed_spec)
_speed_spec.loader.exec_module(stage_seconds)


def _sweep(root: Path, cells: dict[str, list[tuple[int, int, float]]], host: str | None = None) -> Path:
    """An OUT whose cells hold only the stages' ``(stage, steps, seconds)`` of their ``metrics.json``."""
    for cell, stages in cells.items():
        d = root / "models" / cell
        d.mkdir(parents=True)
        (d / "metrics.json").write_text(json.dumps({"cell": cell, "budget": "lean", "train": {"stages": [
            {"stage": k, "steps": n, "seconds": s} for k, n, s in stages]}} | ({"host": host} if host else {})))
    return root


def test_stage_seconds_pairs_the_same_stages_of_the_same_cells(tmp_path, capsys):
    """Stages pair by cell, number and steps: a stage the reference trained with other steps, a stage it did not
    train and a cell it does not hold are left out; the ratios are split into first and later stages."""
    ref = _sweep(tmp_path / "ref", {"a": [(1, 1500, 10.0), (2, 1500, 5.0), (3, 3000, 8.0)], "b": [(1, 1500, 20.0)]})
    out = _sweep(tmp_path / "out", {"a": [(1, 1500, 30.0), (2, 1500, 10.0), (3, 6000, 1.0), (4, 6000, 1.0)],
                                    "b": [(1, 1500, 40.0), (2, 1500, 9.0)], "c": [(1, 1500, 1.0)]}, host="CPU X")
    assert stage_seconds.main([str(out), "--reference", str(ref), "--log", str(tmp_path / "log.json")]) == 0
    log = json.loads((tmp_path / "log.json").read_text())
    assert [(r["cell"], r["stage"]) for r in log["rows"]] == [("a", 1), ("a", 2), ("b", 1)]
    assert log["summary"] == {"stages": 3, "cells": 2, "hosts": ["CPU X"], "median_ratio_first": 2.5,
                              "median_ratio_later": 2.0, "seconds": 80.0, "reference_seconds": 35.0,
                              "train_seconds": None}
    assert "median ratio 2.50 over first stages, 2.00 over later ones (host: CPU X)" in capsys.readouterr().out
    # --runs: each stage directory's steps over its steps per second (a stage without one leaves the sum out)
    runs = tmp_path / "runs"
    for cell, k, rate in (("a", 1, 100.0), ("a", 2, 150.0), ("b", 1, 300.0)):
        (runs / "lean" / cell / f"stage{k}").mkdir(parents=True)
        (runs / "lean" / cell / f"stage{k}" / "metrics.json").write_text(json.dumps({"steps": 1500,
                                                                                      "steps_per_s": rate}))
    assert stage_seconds.main([str(out), "--reference", str(ref), "--runs", str(runs), "--log",
                               str(tmp_path / "log.json")]) == 0
    assert json.loads((tmp_path / "log.json").read_text())["summary"]["train_seconds"] == 15.0 + 10.0 + 5.0
    assert "training steps: 30 s of the 80 s here (38%)" in capsys.readouterr().out
    (runs / "lean" / "b" / "stage1" / "metrics.json").unlink()
    assert stage_seconds.stage_pairs(out, ref, runs)[2]["train_seconds"] is None
    with pytest.raises(SystemExit):
        stage_seconds.main([str(out), "--reference", str(tmp_path / "nothing")])


def test_stage_seconds_since_keeps_the_cells_that_started_later_in_one_process(tmp_path, capsys):
    """``--since``: a cell that started earlier, or that a stopped process left part of, is left out."""
    ref = _sweep(tmp_path / "ref", {c: [(1, 1500, 10.0)] for c in ("early", "late", "resumed")})
    out = _sweep(tmp_path / "out", {c: [(1, 1500, 20.0)] for c in ("early", "late", "resumed")})
    t0 = 1_800_000_000.0  # 2027-01-15T08:00:00+00:00
    for cell, extra in (("early", {"wall": [t0 - 1, t0 + 20]}), ("late", {"wall": [t0, t0 + 20]}),
                        ("resumed", {"wall": [t0 + 5, t0 + 25], "interrupted": [[t0 + 1, t0 + 4, "cpu"]]})):
        m = out / "models" / cell / "metrics.json"
        m.write_text(json.dumps(json.loads(m.read_text()) | extra))
    assert len(stage_seconds.stage_pairs(out, ref)) == 3
    for since in (str(t0), "2027-01-15T08:00:00+00:00"):
        assert stage_seconds.main([str(out), "--reference", str(ref), "--since", since,
                                   "--log", str(tmp_path / "log.json")]) == 0
        assert [r["cell"] for r in json.loads((tmp_path / "log.json").read_text())["rows"]] == ["late"]
    assert "median ratio 2.00 over first stages, none over later ones" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        stage_seconds.main([str(out), "--reference", str(ref), "--since", "yesterday"])
    assert "--since must be an ISO 8601 time or Unix seconds, got 'yesterday'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        stage_seconds.main([str(out), "--reference", str(ref), "--since", "2027-01-15T08:00:00"])
    assert "--since needs a UTC offset" in capsys.readouterr().err
    continued = out / "models" / "late" / "metrics.json"
    continued.write_text(json.dumps(json.loads(continued.read_text()) | {"continued": [{"seconds": 1.0}]}))
    assert stage_seconds.stage_pairs(out, ref, since=t0) == []  # a record gone on from another run is left out
