r"""What the Dask executor costs per cell, against a plain pool of processes doing the same.

Each task sleeps a known number of seconds on its worker (:func:`sleep_cell`) and returns a small
cell, which the client writes under ``OUT/models/<name>/``.  Two routes run the same tasks through
the same worker function (:func:`numerics.reproduce.executor.work`) and the same writes:

* ``dask``: :func:`numerics.reproduce.executor.run` with ``jobs=2`` (a ``LocalCluster`` of two
  single-threaded worker processes, started and stopped by the call);
* ``pool``: a ``concurrent.futures.ProcessPoolExecutor`` of two spawned processes, results
  written by this process as they come (:func:`pool_run`).

For each duration ``s`` and ``n`` tasks, the ideal wall time with two workers is
``ceil(n / 2) * s``; the overhead of a sweep is its wall time less that, less the route's fixed
cost (the same route with no task: starting and stopping its processes).  The routes alternate,
the first of each pair switching between repetitions, so a change in the machine's load hits both.
Sleeping tasks leave the cores to the scheduler and the client, so the overhead is the executor's,
not the competition of a task for a core.

    python benchmarks/dask_throughput.py --repeat 3 --log benchmarks/logs/dask-throughput.json
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import multiprocessing
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from numerics.io import atomic_write_json  # noqa: E402
from numerics.reproduce import executor  # noqa: E402

#: (seconds each task sleeps, number of tasks)
PLAN = ((0.0, 40), (0.5, 12), (2.0, 6))


def sleep_cell(rundir: Path, seconds: float, seed: int) -> dict[str, bytes]:
    """A cell that sleeps ``seconds`` and returns a ``metrics.json`` of a few bytes."""
    time.sleep(seconds)
    return {"metrics.json": json.dumps({"seed": seed, "seconds": seconds}).encode()}


def tasks(seconds: float, n: int) -> list[executor.Task]:
    return [(f"t{i}", functools.partial(sleep_cell, seconds=seconds, seed=i)) for i in range(n)]


def pool_run(todo: list[executor.Task], out: Path, jobs: int) -> None:
    """The plain route: ``jobs`` spawned processes run :func:`executor.work`; this process writes."""
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(executor.work, name, fn, None) for name, fn in todo]
        for f in as_completed(futures):
            executor.write_cell(out, *f.result())


def timed(route: str, todo: list[executor.Task], jobs: int) -> float:
    out = Path(tempfile.mkdtemp(prefix="lintf-dask-bench-"))
    try:
        t0 = time.perf_counter()
        if route == "dask":
            executor.run(todo, out=out, jobs=jobs, progress=False)
        else:
            pool_run(todo, out, jobs)
        wall = time.perf_counter() - t0
        assert len(list(out.glob("models/*/metrics.json"))) == len(todo)
        return wall
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="pairs of runs per duration (default 3)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes of each route (default 2)")
    ap.add_argument("--log", default=None, help="write the runs and the summary to this JSON file")
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.jobs < 1:
        ap.error(f"--repeat and --jobs must be 1 or more, got {args.repeat} and {args.jobs}")
    plan = ((0.0, 0), *PLAN)  # no task: the fixed cost of each route
    runs = []
    for rep in range(args.repeat):
        for seconds, n in plan:
            order = ("dask", "pool") if (rep + int(seconds * 2) + n) % 2 == 0 else ("pool", "dask")
            for route in order:
                wall = timed(route, tasks(seconds, n), args.jobs)
                runs.append({"route": route, "seconds": seconds, "tasks": n, "repeat": rep, "wall": wall})
                print(f"{route:>4} {n:3d} x {seconds:3.1f} s: {wall:7.2f} s", file=sys.stderr, flush=True)
    summary = summarise(runs, args.jobs)
    print(f"{'route':>5} {'tasks':>10} {'ideal s':>8} {'median wall s':>14} {'overhead / task s':>18}")
    for row in summary:
        print(f"{row['route']:>5} {row['tasks']:3d} x {row['seconds']:3.1f} s {row['ideal']:8.2f} "
              f"{row['wall']:14.2f} {row['per_task'] if row['per_task'] is not None else '-':>18}")
    if args.log:
        atomic_write_json(args.log, {
            "command": "python benchmarks/dask_throughput.py " + " ".join(argv or sys.argv[1:]),
            "machine": {"cores": len(os.sched_getaffinity(0)), "python": platform.python_version(),
                        "load_before": os.getloadavg()},
            "runs": runs, "summary": summary})
    return 0


def summarise(runs: list[dict], jobs: int) -> list[dict]:
    """Per route and plan row: the median wall time, the ideal, and the overhead per task beyond the route's
    fixed cost (the median wall time of its runs with no task)."""
    rows = []
    for route in ("dask", "pool"):
        fixed = statistics.median(r["wall"] for r in runs if r["route"] == route and r["tasks"] == 0)
        for seconds, n in ((0.0, 0), *PLAN):
            walls = [r["wall"] for r in runs if (r["route"], r["seconds"], r["tasks"]) == (route, seconds, n)]
            ideal = math.ceil(n / jobs) * seconds
            wall = statistics.median(walls)
            per_task = round((wall - fixed - ideal) / n, 4) if n else None
            rows.append({"route": route, "seconds": seconds, "tasks": n, "ideal": ideal, "wall": round(wall, 3),
                         "walls": [round(w, 3) for w in walls], "per_task": per_task})
    return rows


if __name__ == "__main__":  # the workers of both routes are spawned processes that import this file
    sys.exit(main())
