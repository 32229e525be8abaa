"""``benchmarks/full_start.py`` compares every FULL cell's trained model with the DIAG start it was checked against,
on held-out sequences; a stage whose training diverged (no model, no loss) is not a candidate."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

full_start = runpy.run_path(str(Path(__file__).resolve().parents[2] / "benchmarks" / "full_start.py"))


def _cell(out: Path, name: str, stages: list[float | None], start: float, kept: bool = False) -> None:
    rows = [{"held_out": v, "blown": v is None} | ({"diverged": "rollbacks"} if v is None else {}) for v in stages]
    (out / "models" / name).mkdir(parents=True)
    (out / "models" / name / "metrics.json").write_text(json.dumps(
        {"cell": name, "failed": None, "eval": {"loss": 0.5},
         "train": {"stages": rows, "start_check": {"held_out": start, "kept": kept}}}))


def test_the_trained_model_is_the_best_stage_that_did_not_diverge(tmp_path, capsys) -> None:
    _cell(tmp_path, "full-L11-uniform5", [0.02, None, 0.012], start=0.01, kept=True)  # 20 % above: keeps the start
    _cell(tmp_path, "full-L3-uniform5", [0.02, 0.009], start=0.01)
    rows = {r["cell"]: r for r in full_start["rows"](tmp_path)}
    assert rows["full-L11-uniform5"]["best_stage"] == 0.012 and rows["full-L11-uniform5"]["kept"]
    assert abs(rows["full-L11-uniform5"]["relative"] - 0.2) < 1e-12
    assert abs(rows["full-L3-uniform5"]["relative"] + 0.1) < 1e-12
    assert full_start["main"](["--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("2 FULL cells checked against their DIAG start; the trained model is above the start in 1,")
    assert out[0].endswith("1 keep the start") and out[3].startswith("| full-L11-uniform5 | 0.012 | 0.01 | +20.0% | yes")
