r"""How long a finished grid would take trained from nothing in one ``lintf reproduce --jobs N``, from its records.

A grid's report states its machine time: the union of the intervals during which its cells' runs ran
(:func:`numerics.reproduce.timing.machine_seconds`).  A grid trained in several sweeps, some cells again on their own,
has stretches in which one process ran while the other cores idled, so that union is not what one sweep of the grid
costs.  This script sums the seconds of every run behind each cell (:func:`numerics.reproduce.timing.runs`: the
kept run, the parts of stopped processes, failed attempts, runs gone on from), lets ``--jobs`` processes take the
chains of cells in turn as ``lintf reproduce --jobs`` does, each chain lasting its cells' seconds
(:func:`numerics.reproduce.schedule.share_out`), and prints each process's sum: the longest is the replayed sweep's
machine time, on the machine and at the load that recorded the seconds.  ``--ratio`` scales it to another machine
(the median stage ratio of ``benchmarks/stage_seconds.py``).

    python benchmarks/grid_schedule.py --budget lean --out results/lean --jobs 2 --ratio 1.43

``--add CELL=SECONDS`` counts seconds that a cell's records omit (a run stopped without a record of its part):

    python benchmarks/grid_schedule.py --budget lean --out results/lean --jobs 2 --add diag-L7-uniform0=1500

It also prints how much of the recorded machine time ran with one process, with two, and so on.  With
``--finished`` it replays the cells a grid still training holds so far, and with ``--reference`` the same cells of
another finished grid beside them:

    python benchmarks/grid_schedule.py --budget brisk --out results/brisk --jobs 2 --finished --reference results/lean
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from numerics.errors import LintfError  # noqa: E402
from numerics.io import atomic_write_json, read_json  # noqa: E402
from numerics.reproduce.budgets import PARTS, cells_for, get_budget  # noqa: E402
from numerics.reproduce.schedule import share_out  # noqa: E402
from numerics.reproduce.timing import by_device, machine_seconds, moments, runs  # noqa: E402


def concurrency(records: list[dict[str, Any]]) -> dict[int, float]:
    """Seconds of the union of the runs' ``"wall"`` intervals during which exactly ``k`` runs ran, by ``k``."""
    held: dict[int, float] = {}
    for lo, hi, on in moments([(None, *r["wall"]) for r in runs(records) if r.get("wall")]):
        if on:
            held[len(on)] = held.get(len(on), 0.0) + hi - lo
    return dict(sorted(held.items()))


def finished(budget_name: str, out: Path) -> set[str]:
    """The cells of the budget's grid that ``out`` holds a record of."""
    return {c.name for c in cells_for(get_budget(budget_name), PARTS)
            if (out / "models" / c.name / "metrics.json").is_file()}


def replay(budget_name: str, out: Path, jobs: int, ratio: float = 1.0, only: set[str] | None = None,
           added: dict[str, float] | None = None) -> dict[str, Any]:
    """The replayed sweep of the grid under ``out``: its cells' seconds, the processes' sums and the machine time;
    of the cells named in ``only`` alone where given (a grid still training: :func:`finished`); ``added`` gives
    seconds that a cell's records omit (a run stopped without a record of its part)."""
    budget = get_budget(budget_name)
    cells = [c for c in cells_for(budget, PARTS) if only is None or c.name in only]
    paths = {c.name: out / "models" / c.name / "metrics.json" for c in cells}
    missing = [n for n, p in paths.items() if not p.is_file()]
    if missing and only is not None:
        raise SystemExit(f"grid_schedule.py: error: --reference {out} lacks {len(missing)} of the finished cells "
                         f"(first: {missing[0]})")
    if missing:
        raise SystemExit(f"grid_schedule.py: error: --out {out} lacks {len(missing)} of the {len(cells)} cells of "
                         f"budget {budget_name} (first: {missing[0]}); replay a finished grid")
    records = {}
    for n, p in paths.items():
        try:
            records[n] = read_json(p)
            for r in runs([records[n]]):
                float(r.get("seconds") or 0.0)
                if r.get("wall") is not None and len([float(t) for t in r["wall"]]) != 2:
                    raise ValueError(f"wall {r['wall']!r} is not [start, end]")
        except (OSError, ValueError, TypeError, AttributeError, LintfError) as e:
            raise SystemExit(f"grid_schedule.py: error: {p} is not a cell record: {e}") from None
    devices = by_device(records.values())
    if len(devices) > 1:
        raise SystemExit(f"grid_schedule.py: error: the cells under --out {out} ran on {len(devices)} devices "
                         f"({', '.join(sorted(devices))}); a replay needs the seconds of one machine")
    seconds = {n: sum(float(r.get("seconds") or 0.0) for r in runs([m])) for n, m in records.items()}
    for n, extra in (added or {}).items():
        if n not in seconds:
            raise SystemExit(f"grid_schedule.py: error: --add names {n}, which is not a cell of the replay")
        seconds[n] += extra
    groups = [[c.name for c in g] for g in share_out(budget, cells, jobs, lambda c: seconds[c.name])]
    sums = [sum(seconds[n] for n in g) for g in groups]
    return {"budget": budget_name, "out": str(out), "jobs": int(jobs), "ratio": float(ratio), "cells": len(cells),
            "cell_hours": sum(seconds.values()) / 3600, "recorded_hours": machine_seconds(records.values()) / 3600,
            "recorded_by_processes": {k: v / 3600 for k, v in concurrency(list(records.values())).items()},
            "process_hours": [s / 3600 for s in sums], "process_cells": [len(g) for g in groups],
            "replayed_hours": max(sums) / 3600, "scaled_hours": max(sums) * ratio / 3600,
            **({"added_seconds": dict(added)} if added else {})}


def render(r: dict[str, Any]) -> str:
    lines = [f"{r['cells']} cells of budget {r['budget']} under {r['out']}: {r['cell_hours']:.2f} h of cell time",
             f"recorded machine time {r['recorded_hours']:.2f} h, of which "
             + ", ".join(f"{h:.2f} h with {k} process{'es' if k > 1 else ''}"
                         for k, h in r["recorded_by_processes"].items())]
    for i, (h, n) in enumerate(zip(r["process_hours"], r["process_cells"])):
        lines.append(f"process {i + 1} of {r['jobs']}: {n} cells, {h:.2f} h")
    lines.append(f"one sweep with --jobs {r['jobs']}: {r['replayed_hours']:.2f} h of machine time"
                 + (f", {r['scaled_hours']:.2f} h at ratio {r['ratio']:g}" if r["ratio"] != 1 else ""))
    return "\n".join(lines)


def replay_parser(prog: str, doc: str) -> argparse.ArgumentParser:
    """The options of a replay of a finished grid's records: ``--budget``, ``--out``, ``--jobs``, ``--ratio``, ``--log``
    (:func:`replay_args` checks them)."""
    p = argparse.ArgumentParser(prog=prog, description=doc.splitlines()[0])
    p.add_argument("--budget", default="lean", help="the budget whose grid --out holds (default lean)")
    p.add_argument("--out", type=Path, required=True, help="the grid's --out (its models/<cell>/metrics.json)")
    p.add_argument("--jobs", type=int, default=2, help="processes of the replayed sweep (1 to 64; default 2)")
    p.add_argument("--ratio", type=float, default=1.0,
                   help="seconds on the target machine per recorded second (finite, > 0; default 1)")
    p.add_argument("--log", type=Path, help="also write the numbers as JSON here")
    return p


def replay_args(p: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``p``'s arguments, a bad ``--jobs``, ``--ratio`` or ``--budget`` refused in one line."""
    args = p.parse_args(argv)
    if not 1 <= args.jobs <= 64:
        p.error(f"--jobs must be in 1..64, got {args.jobs}")
    if not (args.ratio > 0 and args.ratio < float("inf")):
        p.error(f"--ratio must be finite and > 0, got {args.ratio}")
    try:
        get_budget(args.budget)
    except ValueError as e:
        p.error(str(e))
    return args


def main(argv: list[str] | None = None) -> int:
    p = replay_parser("grid_schedule.py", __doc__)
    p.add_argument("--finished", action="store_true",
                   help="replay the cells --out holds so far, of a grid still training, instead of refusing it")
    p.add_argument("--reference", type=Path,
                   help="with --finished, replay the same cells of this finished grid of the same cells too")
    p.add_argument("--add", action="append", default=[], metavar="CELL=SECONDS",
                   help="seconds that CELL's records omit (the part of a run stopped without a record), counted in "
                        "its process (repeatable)")
    args = replay_args(p, argv)
    added: dict[str, float] = {}
    for spec in args.add:
        cell, _, secs = spec.partition("=")
        try:
            added[cell] = added.get(cell, 0.0) + float(secs)
        except ValueError:
            p.error(f"--add must be CELL=SECONDS with SECONDS a number >= 0, got {spec!r}")
        if not 0 <= added[cell] < float("inf"):
            p.error(f"--add must be CELL=SECONDS with SECONDS a number >= 0, got {spec!r}")
        if cell not in {c.name for c in cells_for(get_budget(args.budget), PARTS)}:
            p.error(f"--add must name a cell of budget {args.budget} as under OUT/models/ (CELL=SECONDS), got {spec!r}")
    if args.reference is not None and not args.finished:
        p.error("--reference goes with --finished")
    only = finished(args.budget, args.out) if args.finished else None
    if only is not None and not only:
        p.error(f"--out {args.out} holds no finished cell of budget {args.budget}")
    r = replay(args.budget, args.out, args.jobs, args.ratio, only, added)
    print(render(r))
    if args.reference is not None:
        ref = replay(args.budget, args.reference, args.jobs, 1.0, only)
        print(f"the same cells under {args.reference}: {ref['cell_hours']:.2f} h of cell time, "
              f"{ref['replayed_hours']:.2f} h as one sweep with --jobs {args.jobs}; "
              f"{r['cell_hours'] / ref['cell_hours']:.2f} times as long under {args.out}")
        r["reference"] = {k: ref[k] for k in ("out", "cell_hours", "replayed_hours", "process_hours")}
    if args.log:
        atomic_write_json(args.log, r)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
