r"""Cells whose training stopped because a stage ended above the stage it started from.

A cell's stage rule (:func:`numerics.train.continuation.converged`) counts a stage that ends *above* its start as
converged and keeps the better stage.  When that last stage ended well above, an unstable stage may have ended a
cell that more steps would still improve, which the convergence check can tell
(``lintf reproduce --convergence --cell NAME``).  This lists, from the cells' ``metrics.json``, every finished cell
whose kept stage is not its last, with the kept and last stages' held-out losses, the last stage's relative change
("diverged" for a last stage whose training diverged, which has no model), and the scale the last stage's fit gave
its update (below 1: its pool exploded at ``c = 1``):

    python benchmarks/stopped_higher.py --out results/paper --above 0.03
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def rows(out: Path, above: float) -> list[dict]:
    """The cells under ``out/models`` whose last stage ended more than ``above`` (relative) over their kept stage."""
    found = []
    for path in sorted((out / "models").glob("*/metrics.json")):
        m = json.loads(path.read_text())
        t = m.get("train") or {}
        stages = t.get("stages") or []
        if m.get("failed") or not stages or t.get("chosen_stage", len(stages)) in (0, len(stages)):  # 0: its start
            continue
        kept, last = stages[t["chosen_stage"] - 1], stages[-1]
        if last["held_out"] is None:  # the last stage diverged: no model, no held-out loss
            change = float("inf")
        else:
            change = last["held_out"] / kept["held_out"] - 1 if kept["held_out"] else 0.0
        if change > above:
            found.append({"cell": m["cell"], "stages": len(stages), "kept": t["chosen_stage"], "steps": t["steps"],
                          "kept_loss": kept["held_out"], "last_loss": last["held_out"], "change": change,
                          "last_scale": (last.get("scale") or {}).get("scale", 1.0),
                          "adopted": bool(m.get("adopted"))})
    return sorted(found, key=lambda r: -r["change"])


def sweep_args(doc: str, above: str, argv: list[str] | None) -> argparse.Namespace | None:
    """``--out`` (a sweep's, with ``models/``) and ``--above`` (``>= 0``, relative: ``above`` says of what), or
    ``None`` after a one-line error."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="a sweep's --out (its models/ is read)")
    ap.add_argument("--above", type=float, default=0.03, help=f"relative rise {above} to list (default 0.03)")
    a = ap.parse_args(argv)
    if not (a.out / "models").is_dir():
        print(f"error: --out {a.out} has no models/ directory", file=sys.stderr)
        return None
    if not a.above >= 0:
        print(f"error: --above must be >= 0, got {a.above}", file=sys.stderr)
        return None
    return a


def main(argv: list[str] | None = None) -> int:
    a = sweep_args(__doc__, "of the last stage", argv)
    if a is None:
        return 2
    print("| cell | stages | kept | steps | kept held-out | last held-out | last vs kept | last stage's c | adopted |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|---|")
    for r in rows(a.out, a.above):
        last = "diverged" if r["last_loss"] is None else f"{r['last_loss']:.4g}"
        change = "diverged" if r["last_loss"] is None else f"{r['change']:+.1%}"
        print(f"| {r['cell']} | {r['stages']} | {r['kept']} | {r['steps']} | {r['kept_loss']:.4g} | "
              f"{last} | {change} | {r['last_scale']:.3g} | "
              f"{'yes' if r['adopted'] else 'no'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
