"""The convergence check: a longer run of a finished cell is compared, and no cell changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from numerics.io import atomic_write_json
from numerics.reproduce import convergence, grid, sweep
from numerics.reproduce.grid import Cell
from tests.fakes import TINY, FakeCell, fake_baselines


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _with_baselines(out: Path) -> FakeCell:
    """A fake cell function; the baselines of ``out`` are written first (they would cost minutes to compute)."""
    out.mkdir(parents=True, exist_ok=True)
    sweep.claim_out(out, TINY)
    for nz in TINY.noises:
        atomic_write_json(out / "baselines" / f"{grid.slug(nz)}.json", fake_baselines(nz, TINY))
    return FakeCell()


class _Longer(FakeCell):
    """A fake cell function whose longer run ends ``shift`` higher."""

    def __init__(self, shift: float) -> None:
        super().__init__()
        self.shift = shift

    def __call__(self, cell: Cell, budget, rundir: Path) -> dict[str, bytes]:  # noqa: ANN001
        files = super().__call__(cell, budget, rundir)
        rec = json.loads(files["metrics.json"])
        rec["eval"]["loss"] += self.shift
        return files | {"metrics.json": json.dumps(rec).encode()}


@pytest.mark.parametrize("shift, holds", [(0.0, True), (0.5, False)])
def test_the_convergence_check_reports_and_changes_no_cell(
    tmp_path: Path, shift: float, holds: bool
) -> None:
    out = tmp_path / "out"
    sweep.sweep(TINY, ("table1",), out, tmp_path / "runs", cell_fn=_with_baselines(out))
    before = _tree(out / "models")
    name = "diag-L2-uniform1"
    res = convergence.check(TINY, out, tmp_path / "runs", (name,), cell_fn=_Longer(shift))
    assert res["cells"][name]["holds"] is holds and _tree(out / "models") == before
    assert (tmp_path / "runs" / "tiny-x2" / name / "calls").exists()  # its own run directory
    assert json.loads((out / "convergence.json").read_text())["cells"][name]["holds"] is holds


@pytest.mark.parametrize(
    "loss2, se, holds",
    [
        (1.025, 0.001, True),  # within the stopping rule's 3 % of the loss
        (1.04, 0.001, False),  # 4 %, and 14 SEs of the difference
        (1.2, 0.1, True),  # 20 %, but within 2 SEs of the difference (0.2 <= 2 * 0.141)
        (1.3, 0.1, False),
    ],
)
def test_two_runs_agree_within_the_stopping_rules_share_or_its_standard_errors(
    loss2: float, se: float, holds: bool
) -> None:
    """Agreement is the stopping rule of the stages (a relative change or a count of SEs), with the
    two runs' SEs added in quadrature."""
    assert convergence.holds(1.0, se, loss2, se) is holds
