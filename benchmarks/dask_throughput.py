r"""What the Dask executor costs per cell, against a plain pool of processes doing the same.

Each task sleeps a known number of seconds on its worker (:func:`sleep_cell`) and returns a small
cell, which the client writes under ``OUT/models/<name>/``.  Two routes run the same tasks through
the same worker function (:func:`numerics.reproduce.executor.work`) and the same writes:

* ``dask``: :func:`numerics.reproduce.executor.run` given the address of a local cluster of two
  single-threaded worker processes (:func:`numerics.reproduce.executor.local_cluster`, the
  cluster of ``jobs=2``): each sweep connects, checks the workers, submits, and writes;
* ``pool``: a ``concurrent.futures.ProcessPoolExecutor`` of two spawned processes, the results
  written by this process as they come (:func:`pool_run`).

Both routes start their processes once per repetition (the ``start`` rows: the local cluster up
and its workers holding lintf; the pool's processes up and holding lintf) and run every sweep of
the plan on them, the two routes alternating, the first of each pair switching between sweeps, so
that a change in the machine's load hits both.  For ``n`` tasks of ``s`` seconds the ideal wall
time with two workers is ``ceil(n / 2) * s``; a sweep's overhead per task is its wall time less
that, over ``n``.  Sleeping tasks leave the cores to the scheduler and the client, so the overhead
is the executor's, not the competition of a task for a core.

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

#: (seconds each task sleeps, number of tasks); no task measures a sweep's own fixed cost
PLAN = ((0.0, 0), (0.0, 40), (0.5, 12), (2.0, 6))


def sleep_cell(rundir: Path, seconds: float, seed: int) -> dict[str, bytes]:
    """A cell that sleeps ``seconds`` and returns a ``metrics.json`` of a few bytes."""
    time.sleep(seconds)
    return {"metrics.json": json.dumps({"seed": seed, "seconds": seconds}).encode()}


def ready(seconds: float) -> None:
    """A pause in a pool process: one for each process, so that every process has started (and
    imported this file and lintf, as a Dask worker has) before the sweeps."""
    time.sleep(seconds)


def tasks(seconds: float, n: int) -> list[executor.Task]:
    return [(f"t{i}", functools.partial(sleep_cell, seconds=seconds, seed=i)) for i in range(n)]


def pool_run(todo: list[executor.Task], out: Path, pool: ProcessPoolExecutor) -> None:
    """The plain route: the pool's processes run :func:`executor.work`; this process writes."""
    futures = [pool.submit(executor.work, name, fn, None) for name, fn in todo]
    for f in as_completed(futures):
        executor.write_cell(out, *f.result())


def timed(route: str, todo: list[executor.Task], engine) -> float:  # noqa: ANN001
    """The wall seconds of one sweep of ``todo`` by ``route`` on ``engine`` (cluster or pool)."""
    out = Path(tempfile.mkdtemp(prefix="lintf-dask-bench-"))
    try:
        t0 = time.perf_counter()
        if route == "dask":
            executor.run(todo, out=out, scheduler=engine.scheduler_address, progress=False)
        else:
            pool_run(todo, out, engine)
        wall = time.perf_counter() - t0
        assert len(list(out.glob("models/*/metrics.json"))) == len(todo)
        return wall
    finally:
        shutil.rmtree(out, ignore_errors=True)


def start(route: str, jobs: int):  # noqa: ANN201
    """The route's processes, started and holding lintf, and the seconds that took."""
    t0 = time.perf_counter()
    if route == "dask":
        engine = executor.local_cluster(jobs)
        executor.run(
            [],
            out=tempfile.mkdtemp(prefix="lintf-dask-bench-"),
            scheduler=engine.scheduler_address,
            progress=False,
        )  # workers import lintf
    else:
        engine = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))
        list(engine.map(ready, [0.5] * jobs))
    return engine, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="repetitions of the plan (default 3)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes per route (default 2)")
    ap.add_argument("--log", default=None, help="write the runs and the summary to this JSON file")
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.jobs < 1:
        ap.error(f"--repeat and --jobs must be 1 or more, got {args.repeat} and {args.jobs}")
    load = os.getloadavg()
    runs = []
    for rep in range(args.repeat):
        engines = {}
        for route in ("dask", "pool") if rep % 2 == 0 else ("pool", "dask"):
            engines[route], secs = start(route, args.jobs)
            runs.append({"route": route, "start": True, "repeat": rep, "wall": secs})
            print(f"{route:>4} start: {secs:7.2f} s", file=sys.stderr, flush=True)
        for k, (seconds, n) in enumerate(PLAN):
            for route in ("dask", "pool") if (rep + k) % 2 == 0 else ("pool", "dask"):
                wall = timed(route, tasks(seconds, n), engines[route])
                runs.append(
                    {"route": route, "seconds": seconds, "tasks": n, "repeat": rep, "wall": wall}
                )
                print(
                    f"{route:>4} {n:3d} x {seconds:3.1f} s: {wall:7.2f} s",
                    file=sys.stderr,
                    flush=True,
                )
        engines["dask"].close()
        engines["pool"].shutdown()
    summary = summarise(runs, args.jobs)
    print(
        f"{'route':>5} {'sweep':>12} {'ideal s':>8} {'median wall s':>14} {'overhead/task s':>16}"
    )
    for row in summary:
        per = "-" if row["per_task"] is None else f"{row['per_task']:.3f}"
        sweep = "start" if row["tasks"] is None else f"{row['tasks']:3d} x {row['seconds']:3.1f} s"
        print(f"{row['route']:>5} {sweep:>12} {row['ideal']:8.2f} {row['wall']:14.2f} {per:>16}")
    if args.log:
        atomic_write_json(
            args.log,
            {
                "command": "python benchmarks/dask_throughput.py " + " ".join(sys.argv[1:]),
                "machine": {
                    "cores": len(os.sched_getaffinity(0)),
                    "python": platform.python_version(),
                    "load_average_before": load,
                    "load_average_after": os.getloadavg(),
                },
                "runs": runs,
                "summary": summary,
            },
        )
    return 0


def summarise(runs: list[dict], jobs: int) -> list[dict]:
    """Per route: the median start-up, and per sweep of the plan the median wall time, the ideal
    and the overhead per task (wall less ideal, over the tasks)."""
    rows = []
    for route in ("dask", "pool"):
        starts = [r["wall"] for r in runs if r["route"] == route and r.get("start")]
        rows.append(
            {
                "route": route,
                "seconds": None,
                "tasks": None,
                "ideal": 0.0,
                "wall": round(statistics.median(starts), 3),
                "walls": [round(w, 3) for w in starts],
                "per_task": None,
            }
        )
        for seconds, n in PLAN:
            walls = [
                r["wall"]
                for r in runs
                if not r.get("start")
                and (r["route"], r["seconds"], r["tasks"]) == (route, seconds, n)
            ]
            ideal = math.ceil(n / jobs) * seconds
            wall = statistics.median(walls)
            rows.append(
                {
                    "route": route,
                    "seconds": seconds,
                    "tasks": n,
                    "ideal": ideal,
                    "wall": round(wall, 3),
                    "walls": [round(w, 3) for w in walls],
                    "per_task": round((wall - ideal) / n, 4) if n else None,
                }
            )
    return rows


if __name__ == "__main__":  # the workers of both routes are spawned processes that import this file
    sys.exit(main())
