"""How long a sweep took: the training runs behind its cells and the machine time they spent.

A cell's ``metrics.json`` records its run's ``"seconds"``, the ``"wall"`` interval (Unix time) during which it ran and
its ``"device"``; a cell trained again after failed attempts keeps theirs under ``"attempts"``, and one that went on
from a record made under a smaller cap on its stages keeps the earlier runs under ``"continued"``, and one that took its
convergence check's longer run keeps the run it replaced under ``"adopted"``.  Sweeps that run
side by side overlap, so machine time is the union of the intervals, not their sum.

A process stopped part-way through a cell (killed, or the session ended) leaves no ``metrics.json``; the next process
resumes the cell from its checkpoints.  Each run therefore marks its run directory with ``segment.json`` (when it
started, on which device) while it trains, and removes the mark when it is done.  A process that finds a mark left
behind counts the stopped process from its start to the last checkpoint it wrote (each checkpoint records the time it
was written, so a copied run directory keeps it): the run's ``"interrupted"`` lists these ``[start, end, device]``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from numerics.io import atomic_write_json, read_json

SEGMENT = "segment.json"
ALWAYS = ("seconds", "wall", "device")  # what a record keeps of each run behind it (None where the run lacks it) ...
RUN_FIELDS = (*ALWAYS, "host", "interrupted")  # ... and where the run has them


def runs(cells: Any) -> Any:
    """Every training run behind ``cells``: each cell's kept attempt, the parts of processes stopped part-way through
    it (``"interrupted"``), its failed attempts (``"attempts"``), the runs it went on from (``"continued"``) and the
    run it replaced with a longer one (``"adopted"``), and theirs in turn (a failed attempt that went on from a
    record)."""
    for m in cells:
        yield m
        for a, b, device in m.get("interrupted") or ():
            yield {"seconds": b - a, "wall": [a, b], "device": device}
        gone = (m.get("adopted") or {}).get("replaced")
        yield from runs((*m.get("attempts", ()), *m.get("continued", ()), *((gone,) if gone else ())))


def run_record(m: dict[str, Any]) -> dict[str, Any]:
    """What a record keeps of the run ``m`` behind it (a failed attempt, a run gone on from), so that :func:`runs`
    counts it: its ``"seconds"``, ``"wall"`` and ``"device"``, and its ``"host"`` and ``"interrupted"`` where it has
    them."""
    return {f: m.get(f) for f in ALWAYS} | {f: m[f] for f in RUN_FIELDS[len(ALWAYS):] if m.get(f)}


def begin_segment(run: Path, device: str) -> list[list[Any]]:
    """Mark ``run`` (a cell's attempt's run directory) as trained by this process from now, on ``device``; returns
    the ``[start, end, device]`` of the processes that marked it before and stopped part-way (:func:`reached`), to be
    kept as the run's ``"interrupted"``.  A mark whose process wrote no checkpoint counts nothing."""
    path = run / SEGMENT
    mark = read_json(path) if path.exists() else {}
    gone = [list(g) for g in mark.get("interrupted", ())]
    end = reached(run, float(mark["start"])) if "start" in mark else None
    if end is not None:
        gone.append([float(mark["start"]), end, mark.get("device")])
    atomic_write_json(path, {"start": time.time(), "device": device, "interrupted": gone})
    return gone


def end_segment(run: Path, seconds: float, wall0: float, device: str, stopped: list[list[Any]]) -> dict[str, Any]:
    """Remove :func:`begin_segment`'s mark, as the run is done; the timing its record keeps (:data:`RUN_FIELDS`): its
    ``seconds``, the interval ``"wall"`` (Unix time, from ``wall0``) during which it ran, so that cells of processes
    side by side overlap, its ``device``, the CPU it ran on (:func:`host`) and the processes ``stopped`` part-way
    through it."""
    (run / SEGMENT).unlink(missing_ok=True)
    return {"seconds": seconds, "wall": [wall0, time.time()], "device": device, "host": host()} \
        | ({"interrupted": stopped} if stopped else {})


def host() -> str:
    """The CPU this process runs on, as the operating system names it (``model name`` in ``/proc/cpuinfo``, else
    :func:`platform.processor` or :func:`platform.machine`): two machines' CPUs round float32 training differently,
    so a cell trained on another host is another draw of its recipe (docs/experiments/another-machine.md)."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    except OSError:
        names = []
    return (names[0] if names else "") or platform.processor() or platform.machine() or "unknown"


def reached(run: Path, since: float) -> float | None:
    """The latest time (Unix) a checkpoint under ``run`` records at or after ``since``, leaving out later attempts'
    directories (``attempt<k>``, which mark themselves); ``None`` if there is none."""
    times = []
    for path in run.rglob("checkpoint.npz"):
        if path.relative_to(run).parts[0].startswith("attempt"):
            continue
        try:
            with np.load(path) as z:
                t = json.loads(str(z["meta"])).get("time")
        except (OSError, ValueError, KeyError):
            continue  # unreadable: the training run resumes without it, and its time is not counted
        if isinstance(t, (int, float)) and t >= since:
            times.append(float(t))
    return max(times, default=None)


def machine_seconds(cells: Any) -> float:
    """Seconds the machine spent on ``cells`` (their ``metrics.json``): the length of the union of the intervals
    ``"wall"`` during which they ran, so that cells of processes that ran side by side (``--jobs``, ``--noise``,
    ``--cell``) count once, plus the ``"seconds"`` of cells stored without ``"wall"``; every run of :func:`runs`
    counts."""
    return union_seconds(runs(cells))


def union_seconds(flat: Any) -> float:
    """The length of the union of the runs' ``"wall"`` intervals, plus the ``"seconds"`` of runs stored without one;
    ``flat`` holds single runs (:func:`runs`), whose own earlier runs are not counted again."""
    flat = list(flat)  # read twice below
    spans = sorted(tuple(m["wall"]) for m in flat if m.get("wall"))
    total, end = 0.0, -float("inf")
    for a, b in spans:
        total += max(0.0, b - max(a, end))
        end = max(end, b)
    return total + sum(m.get("seconds", 0.0) for m in flat if not m.get("wall"))


def machine_shares(cells: Any) -> list[float]:
    """Each cell's share of :func:`machine_seconds`: every moment is split evenly among the runs that ran then,
    and a cell gets the parts of its runs (its kept attempt and its failed ones, :func:`runs`); the shares add up
    to :func:`machine_seconds`."""
    owned = [(i, r) for i, m in enumerate(cells) for r in runs([m])]
    shares = [0.0] * (1 + max((i for i, _ in owned), default=-1))
    for lo, hi, on in moments([(i, *r["wall"]) for i, r in owned if r.get("wall")]):
        for i in on:
            shares[i] += (hi - lo) / len(on)
    for i, r in owned:
        if not r.get("wall"):
            shares[i] += r.get("seconds", 0.0)
    return shares


def moments(spans: list[tuple[Any, float, float]]) -> Any:
    """``(lo, hi, owners)`` for each stretch between consecutive ends of the ``(owner, start, end)`` spans: the owners
    of the spans that cover it (empty where none does)."""
    cuts = sorted({t for _, a, b in spans for t in (a, b)})
    for lo, hi in zip(cuts, cuts[1:]):
        yield lo, hi, [o for o, a, b in spans if a <= lo and hi <= b]


def by_device(cells: Any) -> dict[str, tuple[int, float]]:
    """Cells and :func:`machine_seconds` per device (``"device"`` of each run, :func:`runs`; runs stored without one
    ran on a CPU): a cell continued on another device counts on both."""
    groups: dict[str, dict[int, list[Any]]] = {}
    for i, m in enumerate(cells):
        for r in runs([m]):
            groups.setdefault(r.get("device") or m.get("device") or "cpu", {}).setdefault(i, []).append(r)
    return {k: (len(v), union_seconds(r for rs in v.values() for r in rs)) for k, v in sorted(groups.items())}


def layers_to_train(names: Any, budget: Any) -> int:
    """The layers the named cells of ``budget`` train (:func:`numerics.reproduce.budgets.train_layers`)."""
    from numerics.reproduce.budgets import PARTS, cells_for, train_layers

    cells = {c.name: c for c in cells_for(budget, PARTS)}
    return sum(train_layers(cells[n], budget) for n in names)




def deepest_rate(done: Iterable[tuple[int, int, float]]) -> tuple[int, float] | None:
    """``(depth, seconds per layer)`` of the deepest cells trained so far, from ``(depth, layers trained, seconds)``
    of each trained cell (:func:`numerics.reproduce.budgets.train_layers`), or ``None`` before one.  The rate of
    the deepest cells, not of all: a cell's time per layer grows with its depth (deeper cells train more stages, and
    from depth :data:`numerics.reproduce.budgets.TAIL_DEPTH` run the tail check), so the cells left, which a sweep
    reaches last, cost at least that."""
    done = list(done)
    if not done:
        return None
    deepest = max(d for d, _, _ in done)
    layers = sum(n for d, n, _ in done if d == deepest)
    seconds = sum(s for d, _, s in done if d == deepest)
    return (deepest, seconds / layers) if layers and seconds > 0 else None


__all__ = ["RUN_FIELDS", "SEGMENT", "begin_segment", "by_device", "deepest_rate", "end_segment", "host",
           "layers_to_train", "machine_seconds", "machine_shares", "moments", "reached", "run_record", "runs",
           "union_seconds"]
