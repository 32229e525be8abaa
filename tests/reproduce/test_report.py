"""The committed grids' tables and claims, regenerated from their records by the current code, equal the
committed files: the records were converted without changing a number."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from numerics.reproduce import grid, sweep
from numerics.reproduce.report import write_outputs
from numerics.reproduce.table import build_table, table_csv

RESULTS = Path(__file__).resolve().parents[2] / "results"


def _copy(name: str, tmp_path: Path) -> Path:
    """The grid's records, baselines and marker (not its models: the tables do not read them)."""
    src, out = RESULTS / name, tmp_path / name
    for p in [
        *src.glob("models/*/metrics.json"),
        *src.glob("baselines/*.json"),
        src / sweep.MARKER,
    ]:
        dest = out / p.relative_to(src)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, dest)
    return out


def _verdicts(report: str) -> list[tuple[str, str]]:
    return re.findall(r"^\| (.+?) \| \*\*(.+?)\*\* \|", report, flags=re.M)


@pytest.mark.parametrize("name", ["quick", "paper"])
def test_the_committed_tables_and_claims_regenerate_unchanged(name: str, tmp_path: Path) -> None:
    out = _copy(name, tmp_path)
    budget = grid.get_budget(name)
    sw = sweep.sweep(budget, ("table1",), out, tmp_path / "runs", train=False)
    assert not sw.missing and not sw.trained
    res = write_outputs(sw, budget, ("table1",), out)
    for f in ("table1.csv", "table1.md"):
        assert (out / f).read_bytes() == (RESULTS / name / f).read_bytes(), f
    committed = _verdicts((RESULTS / name / "report.md").read_text())
    assert committed and [(c.text, c.status()) for c in res["claims"]] == committed


def test_the_table_shows_the_records_numbers(tmp_path: Path) -> None:
    """A changed loss in one record changes its row of the table: the comparison above can fail."""
    out = _copy("quick", tmp_path)
    budget = grid.get_budget("quick")
    path = out / "models" / "diag-L2-uniform5" / "metrics.json"
    data = json.loads(path.read_text())
    data["eval"]["loss"] += 0.01
    path.write_text(json.dumps(data))
    sw = sweep.sweep(budget, ("table1",), out, tmp_path / "runs", train=False)
    changed = table_csv(build_table(sw.cells, sw.baselines)).splitlines()
    same = (RESULTS / "quick" / "table1.csv").read_text().splitlines()
    assert [a for a, b in zip(changed, same) if a != b] == [
        next(ln for ln in same if ln.startswith("DIAG,2,uniform:5")).replace(
            f"{data['eval']['loss'] - 0.01:.6g}", f"{data['eval']['loss']:.6g}"
        )
    ]


def test_the_report_names_the_committed_cells_trained_from_the_diag_start() -> None:
    """Exactly the committed cells whose record says ``start: "diag"`` are named as trained from the
    DIAG start, with the command that trains them again; a grid without one has no such line."""
    for name in ("quick", "paper"):
        report = (RESULTS / name / "report.md").read_text()
        lines = [
            ln
            for ln in report.splitlines()
            if "cells were trained from the DIAG start" in ln and "retrains" in ln
        ]
        records = (RESULTS / name / "models").glob("*/metrics.json")
        diag = {p.parent.name for p in records if json.loads(p.read_text())["start"] == "diag"}
        if not diag:
            assert lines == [], name
            continue
        (line,) = lines
        named = set(re.findall(r"\b(?:full|diag|gdpp)-L\d+-\w+", line))
        assert named == diag and f"reproduce --budget {name}" in line
