"""The sweep's driver: the ``--out`` marker, which cells it trains, the files it writes, resuming."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from numerics.cli import main
from numerics.errors import LintfError
from numerics.io import atomic_write_json
from numerics.reproduce import grid, sweep
from numerics.reproduce.grid import Cell
from numerics.reproduce.report import write_outputs
from tests.fakes import TINY, FakeCell, fake_baselines, fake_record


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--budget tiny`` on the command line."""
    monkeypatch.setitem(grid.BUDGETS, "tiny", TINY)


def _baselines(out: Path) -> None:
    for nz in TINY.noises:
        atomic_write_json(out / "baselines" / f"{grid.slug(nz)}.json", fake_baselines(nz, TINY))


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize("extra", [[], ["--no-train"], ["--no-train", "--only", "table1"]])
def test_a_non_empty_out_without_the_marker_is_refused_and_left_byte_identical(
    tmp_path: Path, tiny: None, capsys, extra: list[str]
) -> None:
    out = tmp_path / "mine"
    (out / "models" / "diag-L1-uniform1").mkdir(parents=True)
    (out / "models" / "diag-L1-uniform1" / "metrics.json").write_text("{}")
    (out / "baselines").mkdir()
    (out / "baselines" / "uniform1.json").write_text("{}")
    (out / "table1.md").write_text("my own table\n")
    before = _tree(out)
    rc = main(
        [
            "reproduce",
            "--budget",
            "tiny",
            "--out",
            str(out),
            "--runs",
            str(tmp_path / "runs"),
            *extra,
        ]
    )
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "holds no lintf-sweep.json" in err, err
    assert _tree(out) == before


def test_another_budgets_out_is_refused(tmp_path: Path) -> None:
    sweep.claim_out(tmp_path, TINY)
    with pytest.raises(
        LintfError, match="holds the sweep of budget 'tiny'; give budget quick its own --out"
    ):
        sweep.check_out(tmp_path, grid.BUDGETS["quick"])


def test_a_sweep_marks_its_out_and_writes_each_cells_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _baselines(out)
    with pytest.raises(
        LintfError, match="holds no lintf-sweep.json"
    ):  # a baselines folder alone is no proof
        sweep.sweep(TINY, ("table1",), out, tmp_path / "runs", cell_fn=FakeCell())
    out2 = tmp_path / "fresh"
    res = sweep.sweep(TINY, ("table1",), out2, tmp_path / "runs", cell_fn=_with_baselines(out2))
    assert json.loads((out2 / sweep.MARKER).read_text()) == {
        "budget": "tiny",
        "format": 2,
        "kind": "lintf-sweep",
    }
    names = sorted(c.name for c in grid.cells_for(TINY, ("table1",)))
    assert sorted(res.trained) == names and not res.missing and not res.due
    for n in names:
        assert (out2 / "models" / n / "model.npz").read_bytes() == f"model of {n}".encode()
        assert res.cells[n] == fake_record(Cell(*n_parts(n)), TINY)


def n_parts(name: str) -> tuple[str, int, str]:
    return next(
        (c.model, c.layers, c.noise) for c in grid.cells_for(TINY, grid.PARTS) if c.name == name
    )


def _with_baselines(out: Path) -> FakeCell:
    """A fake cell function; the baselines of ``out`` are written first (they would cost minutes to compute)."""
    out.mkdir(parents=True, exist_ok=True)
    sweep.claim_out(out, TINY)
    _baselines(out)
    return FakeCell()


def test_a_resumed_sweep_equals_an_uninterrupted_one(tmp_path: Path) -> None:
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    sweep.sweep(TINY, ("table1",), whole, tmp_path / "runs-whole", cell_fn=_with_baselines(whole))
    _with_baselines(cut)
    with pytest.raises(KeyboardInterrupt):
        sweep.sweep(TINY, ("table1",), cut, tmp_path / "runs-cut", cell_fn=FakeCell(stop_after=2))
    assert len(list((cut / "models").glob("*/metrics.json"))) == 2
    again = sweep.sweep(TINY, ("table1",), cut, tmp_path / "runs-cut", cell_fn=FakeCell())
    assert (
        len(again.trained) == len(grid.cells_for(TINY, ("table1",))) - 2
    )  # the finished cells are not trained
    assert _tree(cut) == _tree(whole)
    calls = [p.read_text() for p in (tmp_path / "runs-cut").rglob("calls")]
    assert calls and all(c == "1\n" for c in calls)  # no cell trained twice


def test_a_record_of_another_start_is_due_and_retrained(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cell_fn = _with_baselines(out)
    sweep.sweep(TINY, ("table1",), out, tmp_path / "runs", cell_fn=cell_fn)
    c = Cell("diag", 2, "uniform:1")
    old = replace(
        fake_record(c, TINY), start="shallower", plan=grid.plan_of(c, TINY) | {"start": "shallower"}
    )
    (out / "models" / c.name / "metrics.json").write_bytes(old.to_json())
    seen = sweep.sweep(TINY, ("table1",), out, tmp_path / "runs", train=False)
    assert seen.due == [c.name] and seen.cells[c.name].start == "shallower" and not seen.trained
    res = sweep.sweep(TINY, ("table1",), out, tmp_path / "runs2", cell_fn=FakeCell())
    assert res.trained == [c.name] and res.cells[c.name].start == "random" and not res.due


def test_nan_in_a_baselines_file_never_reaches_the_tables(tmp_path: Path) -> None:
    out = tmp_path / "out"
    sweep.sweep(TINY, ("table1",), out, tmp_path / "runs", cell_fn=_with_baselines(out))
    bad = fake_baselines("uniform:1", TINY)
    bad["methods"]["AdaRR"]["loss"] = float("nan")
    (out / "baselines" / "uniform1.json").write_text(json.dumps(bad))
    with pytest.raises(
        LintfError, match=r"uniform1.json.*(methods.AdaRR.loss is nan|NaN is not a JSON number)"
    ):
        sweep.sweep(TINY, ("table1",), out, tmp_path / "runs", train=False)
    assert not (out / "table1.csv").exists()


@pytest.mark.slow  # a local cluster of two worker processes, each importing JAX (about 10 s)
def test_jobs_processes_write_the_same_files_as_one(tmp_path: Path) -> None:
    """The sweep hands its cells to the executor, which writes their files.  In the default run,
    ``tests/reproduce/test_executor.py::test_jobs_starts_single_threaded_workers_with_their_share_of_the_cores``
    checks that the executor's ``jobs=2`` processes write the serial run's files, and
    ``tests/cli/test_reproduce_jobs.py::test_a_kill_of_the_command_reaches_its_jobs_processes``
    that a sweep of ``--jobs 2`` starts its processes."""
    one, two = tmp_path / "one", tmp_path / "two"
    sweep.sweep(TINY, ("table1",), one, tmp_path / "r1", cell_fn=_with_baselines(one))
    sweep.sweep(TINY, ("table1",), two, tmp_path / "r2", cell_fn=_with_baselines(two), jobs=2)
    assert _tree(two) == _tree(one)


def test_the_report_of_a_sweep_names_the_cells_of_an_earlier_recipe(tmp_path: Path) -> None:
    out = tmp_path / "out"
    sweep.sweep(TINY, ("table1",), out, tmp_path / "runs", cell_fn=_with_baselines(out))
    c = Cell("diag", 1, "categorical:1,3")
    old = replace(
        fake_record(c, TINY), start="shallower", plan=grid.plan_of(c, TINY) | {"start": "shallower"}
    )
    (out / "models" / c.name / "metrics.json").write_bytes(old.to_json())
    for nz in TINY.noises:  # the GD++ floor's cache, so that the report does not evaluate it
        atomic_write_json(
            out / "baselines" / f"floor-{grid.slug(nz)}.json",
            {
                "noise": nz,
                "eval_sequences": TINY.eval_sequences,
                "n": 20,
                "d": 10,
                "loss": 0.1,
                "se": 0.01,
                "minus_Bayes": 0.05,
                "minus_Bayes_se": 0.01,
            },
        )
    write_outputs(
        sweep.sweep(TINY, ("table1",), out, tmp_path / "runs", train=False), TINY, ("table1",), out
    )
    report = (out / "report.md").read_text()
    assert (
        "cells continued from the finished cell one layer shallower, an earlier recipe" in report
        and c.name in report
    )


def test_without_training_baselines_are_computed_only_for_a_setting_with_a_finished_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    sweep.sweep(TINY, ("table1",), out, tmp_path / "runs", cell_fn=_with_baselines(out))
    for p in [*out.glob("models/*categorical*"), *out.glob("baselines/*")]:
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    computed = []  # the baselines of a setting cost minutes: a stand-in says which are asked for
    monkeypatch.setattr(
        sweep,
        "baselines_for",
        lambda nz, budget, out: computed.append(nz) or fake_baselines(nz, budget),
    )
    seen = sweep.sweep(TINY, ("table1",), out, tmp_path / "runs", train=False)
    assert computed == list(seen.baselines) == ["uniform:1"]
