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
