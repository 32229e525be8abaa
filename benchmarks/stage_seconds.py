r"""Compare the seconds of the same stages of a sweep on two machines.

Every finished cell records, for each stage, its steps and its seconds (``"train"."stages"`` in ``metrics.json``:
training, the scale fit and the held-out evaluation).  For every cell of ``OUT`` that ``REFERENCE`` holds too, this
pairs the stages with the same number and the same steps and prints their seconds side by side, then the median
ratio over the first stages (they include compiling the cell's programs where the process had not compiled them
yet) and over the later ones (programs compiled), and the sum of each side.  With ``--runs`` it also sums the
seconds of the training steps alone, from each stage directory's ``metrics.json``:

    python benchmarks/stage_seconds.py runs/speed/out --reference results/lean --runs runs/speed/runs \
        --log benchmarks/logs/lean-stages/another-machine-speed.json

Both sweeps should have run the same way (two processes side by side, one host device each) on machines with
nothing else running: the seconds are wall-clock.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path
from statistics import median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from numerics.io import atomic_write_json, read_json  # noqa: E402


def train_seconds(runs: Path | None, budget: str, cell: str, stage: int) -> float | None:
    """The seconds the stage's training steps took (its steps over its ``steps_per_s``), from the stage directory
    of ``runs``; ``None`` without it."""
    path = None if runs is None else runs / budget / cell / f"stage{stage}" / "metrics.json"
    if path is None or not path.is_file():
        return None
    m = read_json(path)
    return m["steps"] / m["steps_per_s"] if m.get("steps") and m.get("steps_per_s") else None


def stage_pairs(out: Path, reference: Path, runs: Path | None = None,
                since: float | None = None) -> list[dict[str, Any]]:
    """A row per stage that both sweeps trained with the same steps, for every cell of ``out``; with ``runs`` (the
    ``--runs`` of ``out``'s sweep), each row also holds the seconds of the stage's training steps alone.  With
    ``since`` (Unix seconds), only the cells of ``out`` that started then or later and ran in one process (no
    ``"interrupted"`` part, no ``"continued"`` record: a stage resumed from a checkpoint counts only the seconds after
    it)."""
    rows = []
    for metrics in sorted((out / "models").glob("*/metrics.json")):
        ref = reference / "models" / metrics.parent.name / "metrics.json"
        if not ref.is_file():
            continue
        here, there = read_json(metrics), read_json(ref)
        if since is not None and (here.get("interrupted") or here.get("continued") or not here.get("wall")
                                  or here["wall"][0] < since):
            continue
        theirs = {s["stage"]: s for s in there["train"]["stages"]}
        for s in here["train"]["stages"]:
            t = theirs.get(s["stage"])
            if t is not None and t["steps"] == s["steps"] and s.get("seconds") and t.get("seconds"):
                rows.append({"cell": here["cell"], "stage": s["stage"], "steps": s["steps"], "seconds": s["seconds"],
                             "reference_seconds": t["seconds"], "ratio": s["seconds"] / t["seconds"],
                             "host": here.get("host"),
                             "train_seconds": train_seconds(runs, here.get("budget", ""), here["cell"], s["stage"])})
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    first = [r["ratio"] for r in rows if r["stage"] == 1]
    later = [r["ratio"] for r in rows if r["stage"] > 1]
    return {"stages": len(rows), "cells": len({r["cell"] for r in rows}),
            "hosts": sorted({r["host"] for r in rows if r["host"]}),
            "median_ratio_first": median(first) if first else None,
            "median_ratio_later": median(later) if later else None,
            "seconds": sum(r["seconds"] for r in rows), "reference_seconds": sum(r["reference_seconds"] for r in rows),
            "train_seconds": (sum(r["train_seconds"] for r in rows)
                              if rows and all(r["train_seconds"] is not None for r in rows) else None)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="the OUT of a sweep (its models/*/metrics.json)")
    ap.add_argument("--reference", type=Path, required=True, help="the OUT of the sweep to compare with")
    ap.add_argument("--runs", type=Path, help="the --runs of OUT's sweep: also split each stage's seconds into its "
                                              "training steps and the rest (the scale fit, the evaluations)")
    ap.add_argument("--since", help="only cells of OUT started at or after this time (ISO 8601 with its UTC offset, "
                                     "e.g. 2026-11-28T21:11:00+00:00, or Unix seconds) that ran in one process")
    ap.add_argument("--log", type=Path, help="write the rows and the summary here as JSON")
    args = ap.parse_args(argv)
    since = None
    if args.since is not None:
        try:
            since = float(args.since)
        except ValueError:
            try:
                when = datetime.fromisoformat(args.since)
            except ValueError:
                ap.error(f"--since must be an ISO 8601 time or Unix seconds, got {args.since!r}")
            if when.tzinfo is None:
                ap.error(f"--since needs a UTC offset (e.g. +00:00), got {args.since!r}")
            since = when.timestamp()
    for p, name in ((args.out, "out"), (args.reference, "reference")):
        if not (p / "models").is_dir():
            ap.error(f"{name} {str(p)!r} holds no models/ directory of a sweep")
    if args.runs is not None and not args.runs.is_dir():
        ap.error(f"runs {str(args.runs)!r} is not a directory")
    rows = stage_pairs(args.out, args.reference, args.runs, since)
    if not rows:
        ap.error(f"no stage of {str(args.out)!r} has a stage of the same steps in {str(args.reference)!r}")
    print("| cell | stage | steps | seconds | reference | ratio |\n|---|--:|--:|--:|--:|--:|")
    for r in rows:
        print(f"| {r['cell']} | {r['stage']} | {r['steps']} | {r['seconds']:.1f} | {r['reference_seconds']:.1f} "
              f"| {r['ratio']:.2f} |")
    s = summary(rows)
    first, later = (f"{s[k]:.2f}" if s[k] is not None else "none" for k in ("median_ratio_first", "median_ratio_later"))
    print(f"\n{s['stages']} stages of {s['cells']} cells: {s['seconds']:.0f} s here against "
          f"{s['reference_seconds']:.0f} s; median ratio {first} over first stages, "
          f"{later} over later ones (host: {', '.join(s['hosts']) or 'not recorded'})")
    if s["train_seconds"] is not None:
        print(f"training steps: {s['train_seconds']:.0f} s of the {s['seconds']:.0f} s here "
              f"({s['train_seconds'] / s['seconds']:.0%}); the rest is the scale fit and the evaluations")
    if args.log:
        atomic_write_json(args.log, {"out": str(args.out), "reference": str(args.reference), "summary": s,
                                     "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
