r"""FULL cells against the DIAG start they hold.

Under ``Stages.floor`` a FULL cell starts from the finished DIAG cell of its depth, and keeps that start where its
best stage ends above it by more than the stage rule allows (:func:`numerics.train.continuation.kept`,
:func:`numerics.reproduce.deeper.check_start`).  This reads every FULL cell's ``metrics.json`` under ``--out``: its
trained model's held-out loss (its best stage's, or the rescued model's) and the start's (``train.start_check``), the
relative difference, and whether the cell kept the start; then the counts, and the rows of the cells whose trained
model is more than ``--above`` over the start:

    python benchmarks/full_start.py --out results/lean --above 0.03
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.stopped_higher import sweep_args  # noqa: E402


def rows(out: Path) -> list[dict]:
    """Every finished FULL cell under ``out/models`` that was checked against its start."""
    found = []
    for path in sorted((out / "models").glob("full-*/metrics.json")):
        m = json.loads(path.read_text())
        t = m.get("train") or {}
        start = t.get("start_check")
        if m.get("failed") or not start or not t.get("stages"):
            continue
        ok = [s for s in t["stages"] if not s.get("blown")] or t["stages"]
        best = start.get("trained", min(s["held_out"] for s in ok))  # the model it was compared with
        found.append({"cell": m["cell"], "best_stage": best, "start": start["held_out"],
                      "relative": best / start["held_out"] - 1, "kept": bool(start.get("kept")),
                      "loss": m["eval"]["loss"]})
    return found


def main(argv: list[str] | None = None) -> int:
    a = sweep_args(__doc__, "over the start", argv)
    if a is None:
        return 2
    found = rows(a.out)
    above = [r for r in found if r["relative"] > 0]
    print(f"{len(found)} FULL cells checked against their DIAG start; the trained model is above the start in "
          f"{len(above)}, by more than {a.above:.0%} in {sum(r['relative'] > a.above for r in found)}; "
          f"{sum(r['kept'] for r in found)} keep the start")
    print("| cell | trained, held out | DIAG start, held out | trained vs start | kept | loss (evaluation) |")
    print("|---|--:|--:|--:|---|--:|")
    for r in sorted((r for r in found if r["relative"] > a.above), key=lambda r: -r["relative"]):
        print(f"| {r['cell']} | {r['best_stage']:.4g} | {r['start']:.4g} | {r['relative']:+.1%} | "
              f"{'yes' if r['kept'] else 'no'} | {r['loss']:.4g} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
