"""``benchmarks/stopped_higher.py`` lists the cells whose kept stage is not their last, with the last stage's rise
over the kept one; a last stage whose training diverged has no held-out loss and is listed as diverged."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "stopped_higher.py"
_spec = importlib.util.spec_from_file_location("stopped_higher", SCRIPT)
stopped_higher = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(stopped_higher)


def _cell(out: Path, name: str, losses: list[float | None], chosen: int) -> None:
    stages = [{"held_out": v, "blown": v is None} | ({"diverged": "rollbacks"} if v is None else {}) for v in losses]
    (out / "models" / name).mkdir(parents=True)
    (out / "models" / name / "metrics.json").write_text(json.dumps(
        {"cell": name, "failed": None, "train": {"stages": stages, "chosen_stage": chosen, "steps": 100}}))


def test_a_diverged_last_stage_is_listed_as_diverged(tmp_path, capsys):
    _cell(tmp_path, "diag-L11-uniform5", [0.02, 0.01, None], 2)
    _cell(tmp_path, "diag-L3-uniform5", [0.02, 0.01, 0.0105], 2)  # 5 % above its kept stage
    _cell(tmp_path, "diag-L2-uniform5", [0.02, 0.01], 2)  # kept its last stage: not listed
    rows = stopped_higher.rows(tmp_path, 0.03)
    assert [r["cell"] for r in rows] == ["diag-L11-uniform5", "diag-L3-uniform5"]
    assert rows[0]["change"] == float("inf") and rows[0]["last_loss"] is None
    assert abs(rows[1]["change"] - 0.05) < 1e-12
    assert stopped_higher.main(["--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "| diag-L11-uniform5 | 3 | 2 | 100 | 0.01 | diverged | diverged |" in lines[2]
    assert "| 0.0105 | +5.0% |" in lines[3] and len(lines) == 4
