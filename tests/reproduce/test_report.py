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


def test_the_report_names_the_committed_full_cells_trained_from_the_diag_start() -> None:
    for name in ("quick", "paper"):
        report = (RESULTS / name / "report.md").read_text()
        line = next(ln for ln in report.splitlines() if "from the DIAG start" in ln)
        fulls = sorted(p.name for p in (RESULTS / name / "models").glob("full-*"))
        assert all(f in line for f in fulls) and f"reproduce --budget {name}" in line
