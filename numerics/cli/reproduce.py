r"""``lintf reproduce [--budget quick|paper] [--only table1,fig1,...] [--noise NOISE ... | --cell CELL ...] [--out results/]
[--convergence] [--json]``.

Trains every cell the requested parts need (:mod:`numerics.reproduce.experiments`; finished cells under
``OUT/models/`` are reused, an interrupted cell resumes from its checkpoint under ``--runs``),
evaluates the baselines and the Bayes floor on the same sequences, then writes ``table1.csv``,
``table1.md``, the figures and ``report.md`` (:mod:`numerics.reproduce.report`) into ``OUT``.

Example (the qualitative picture; see ``numerics.reproduce.budgets.BUDGETS`` for what it covers)::

    python -m numerics.cli reproduce --budget quick --out results
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import warnings
from pathlib import Path

from numerics.errors import LintfError
from numerics.io import strict_json


#: The files ``lintf reproduce`` writes at the top of ``--out`` (and ``fig*.png``).
SWEEP_FILES = ("report.md", "table1.md", "table1.csv", "convergence.json")


def sweep_out(path: str, flag: str = "--out", budget: str | None = None) -> None:
    """An existing ``path`` that holds files a sweep writes is a sweep's own (it holds a finished cell under
    ``models/``, a setting's baselines under ``baselines/``, or a ``report.md`` that ``lintf reproduce`` wrote);
    otherwise the sweep would replace files it did not write.  A
    ``report.md`` that ``lintf reproduce`` did not write, or wrote for a budget other than ``budget``, is refused
    too: the sweep would replace it."""
    p = Path(path)
    if not p.is_dir():
        return
    report, head = p / "report.md", None
    try:
        if report.is_file():
            with report.open(errors="replace") as f:
                head = f.readline()
    except OSError:
        head = ""
    if head is not None and not head.startswith("# Reproduction report: budget"):
        raise LintfError(f"{flag} {path!r} holds report.md, which lintf reproduce did not write; give a new or empty "
                         "directory (nothing is overwritten)")
    made = re.match(r"# Reproduction report: budget `([^`]*)`", head or "")
    if budget is not None and made and made.group(1) != budget:
        raise LintfError(f"{flag} {path!r} holds the report of budget {made.group(1)}; give budget {budget} its own "
                         f"{flag} (nothing is overwritten)")
    if head is not None or any((p / "models").glob("*/metrics.json")) or any((p / "baselines").glob("*.json")):
        return  # a sweep's own: its report, a finished cell or a setting's baselines (an empty folder proves nothing)
    theirs = sorted(f.name for f in p.iterdir()
                    if f.name in SWEEP_FILES or (f.name.startswith("fig") and f.name.endswith(".png")))
    if theirs:
        raise LintfError(f"{flag} {path!r} holds {', '.join(theirs)}, which lintf reproduce did not write (no finished "
                         "cell in models/, no baselines/, no sweep report.md); give a new or empty directory (nothing "
                         "is overwritten)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--budget", default="quick",
                   help="quick (default; about 14 min on 2 cores with --jobs 2), paper (tens of hours), lean (the "
                        "paper budget's grid and evaluation with shorter stages; hours: its report.md states how many), "
                        "brisk (the lean budget at half its batch, DIAG cells of depth >= 5 in four stages at least) "
                        "or test")
    p.add_argument("--only", default=None,
                   help="comma list out of table1,fig1,fig2,fig3,fig4,fig5,fig7,beyond (default: all)")
    p.add_argument("--out", default="results", help="results directory (default results)")
    p.add_argument("--runs", default="runs/reproduce",
                   help="training run directories with checkpoints (default runs/reproduce; git-ignored)")
    p.add_argument("--json", action="store_true", help="print a JSON summary instead of progress and text")
    p.add_argument("--jobs", type=int, default=1,
                   help="train in this many processes side by side, each taking the next chain of cells left when it "
                        "comes free (a cell goes with the cells it starts from; the most layers first), then write the "
                        "report from all "
                        "(default 1; 2 keeps two cores busy). The processes share out the cores: cores // N host "
                        "devices each, unless LINTF_HOST_DEVICES is set")
    only = p.add_mutually_exclusive_group()  # --noise and --cell choose the cells to train; the others train none
    only.add_argument("--noise", action="append", metavar="NOISE",
                      help="train only the cells of this noise setting of the budget (repeat for more; default: all); "
                           "the tables and report still cover every finished cell. Processes given different "
                           "settings can share one --out")
    only.add_argument("--cell", action="append", metavar="CELL",
                      help="train only this cell, named as under OUT/models/ (such as diag-L7-uniform5; repeat for "
                           "more); a FULL cell needs its DIAG cell finished or named too. With --convergence, check "
                           "only this finished cell. Processes given different cells can share one --out")
    only.add_argument("--no-train", action="store_true",
                      help="write the tables, figures and report from the cells finished so far, training none")
    p.add_argument("--convergence", action="store_true",
                   help="retrain the budget's convergence cells (or those of --cell) with every stage twice as long "
                        "and compare (finished cells only; writes OUT/convergence.json) instead of sweeping")


def _fmt(s: float) -> str:
    s = max(0.0, float(s))
    return f"{int(s // 3600)}h{int(s % 3600 // 60):02d}m" if s >= 3600 else f"{int(s // 60)}m{int(s % 60):02d}s"


class ProgressDisplay:
    """Cells done / total, time of the last cell, mean time per trained cell and the ETA (rich when on a terminal).

    The ETA covers the cells this process trains (not those of other sweeps given other ``--noise`` settings) and
    weighs each by the layers it trains (its depth; a Fig. 5 cell's replicas too): the time per layer of the deepest
    cells trained so far (:func:`numerics.reproduce.timing.deepest_rate`), times the layers still to train."""

    def __init__(self, label: str, rich: bool, quiet: bool) -> None:
        self.label, self.rich, self.quiet = label, rich, quiet
        self.bar = self.task = None
        self.times: list[float] = []
        self.todo: list[str] = []
        self.layers: list[int] = []  # layers each cell in todo trains
        self.depths: list[int] = []  # and its depth
        self.trained: list[tuple[int, int, float]] = []  # (depth, layers, seconds) of each cell trained here

    def __call__(self, event: str, info: dict) -> None:
        if self.quiet:
            return
        if event == "start":
            self.total, self.done, self.todo = info["total"], info["done"], list(info["todo"])
            self.layers, self.depths = list(info["layers"]), list(info["depths"])
            rest = self.total - self.done - len(self.todo)
            msg = (f"{self.label}: {self.total} cells, {self.done} finished earlier, {len(self.todo)} to train"
                   + (f", {rest} not trained here" if rest else ""))
            if self.rich:
                from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

                self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                    TextColumn("{task.completed}/{task.total} cells"), TextColumn("{task.fields[stat]}"),
                                    TimeElapsedColumn(), transient=False)
                self.bar.start()
                self.bar.console.print(msg)
                self.task = self.bar.add_task(self._next(), total=self.total, completed=self.done, stat="")
            else:
                print(msg, file=sys.stderr, flush=True)
        elif event == "cell":
            self.times.append(info["seconds"])
            self.done += 1
            if self.todo:
                k = self.todo.index(info["name"]) if info["name"] in self.todo else 0
                self.todo.pop(k)
                self.trained.append((self.depths.pop(k), self.layers.pop(k), info["seconds"]))
            mean = sum(self.times) / len(self.times)
            from numerics.reproduce.timing import deepest_rate

            rate = deepest_rate(self.trained)
            stat = (f"last {_fmt(info['seconds'])}, mean {_fmt(mean)}/cell"
                    + (f", ETA {_fmt(rate[1] * sum(self.layers))}" if rate else ""))
            if self.bar is not None:
                self.bar.update(self.task, completed=self.done, stat=stat, description=self._next())
            else:
                result = f"FAILED ({info['failed']})" if info.get("failed") else f"adjusted loss {info['loss']:.4f}"
                print(f"[{self.done}/{self.total}] {info['name']}: {result}; {stat}", file=sys.stderr, flush=True)
        elif event == "more":  # a finished cell sent back to training: one more to train, one fewer finished
            self.todo.append(info["name"])
            self.layers.append(info["layers"])
            self.depths.append(info["depth"])
            self.done -= 1
        elif event == "baselines":
            if self.bar is not None:
                self.bar.update(self.task, description=f"baselines {info['noise']}")
            else:
                print(f"baselines {info['noise']}", file=sys.stderr, flush=True)

    def _next(self) -> str:
        return self.todo[0] if self.todo else "done"

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def run(args: argparse.Namespace) -> int:
    from numerics.reproduce import experiments as ex
    from numerics.reproduce.report import write_outputs

    for name, given in (("--noise", args.noise), ("--no-train", args.no_train), ("--only", args.only is not None)):
        if args.convergence and given:
            raise ValueError(f"--convergence: not allowed with argument {name}")
    if args.jobs > 1 and args.cell:
        raise ValueError(f"--jobs {args.jobs} splits the cells left between processes itself; with --cell, start "
                         "one process per group of cells instead")
    if args.jobs > 1 and (args.no_train or args.convergence):
        raise ValueError(f"--jobs {args.jobs} trains the sweep in several processes; it does not apply to "
                         f"{'--no-train' if args.no_train else '--convergence'}")
    sweep_out(args.out, budget=args.budget)  # before any work: a foreign --out is refused
    budget = ex.get_budget(args.budget)
    parts = ex.parse_parts(args.only)
    if getattr(args, "_console", False):  # the processes of --jobs and a resumed sweep share compiled programs
        from numerics.train import devices

        devices.compile_cache(Path(args.runs) / "xla-cache")
        # a program the cache cannot hold (a full disk) is compiled again next time, nothing more; lintf's own
        # files that cannot be written are the one-line error
        warnings.filterwarnings("ignore", message="Error (reading|writing) persistent compilation cache")
    t0 = time.perf_counter()
    if args.convergence:
        return _convergence(budget, args)
    if args.jobs > 1 and not args.no_train:
        rc = _jobs(budget, parts, args)
        if rc:
            return rc  # below, the serial pass checks what the processes could not (a floor another one changed)
    show = ProgressDisplay(f"reproduce --budget {budget.name}", rich=sys.stderr.isatty(), quiet=args.json)
    try:
        sw = ex.sweep(budget, parts, args.out, args.runs, progress=show, train=not args.no_train, noises=args.noise,
                      only=args.cell)
    finally:
        show.stop()
    # the report covers every part whose cells are finished, not only those redrawn now
    done = ex.finished_parts(budget, Path(args.out))
    shown = tuple(p for p in ex.PARTS if p in parts or p in done)
    view = sw if set(shown) == set(parts) else ex.sweep(budget, shown, args.out, args.runs, train=False)
    res = write_outputs(view, budget, parts, args.out, args.out, shown=shown)
    secs = time.perf_counter() - t0
    if args.json:
        print(strict_json({"budget": budget.name, "parts": list(parts), "out": args.out, "cells": len(sw.cells),
                          "trained": sw.trained, "missing": sw.missing, "seconds": secs, "files": res["files"],
                          "claims": [{"claim": c.key, "text": c.text, "verdict": c.verdict, "evidence": list(c.evidence),
                                      "waiting": list(c.waiting)}
                                     for c in res["claims"]]}, indent=2))
        return 0
    print(f"{len(sw.cells)} cells ({len(sw.trained)} trained now"
          + (f", {len(sw.missing)} not trained" if sw.missing else "") + f") in {_fmt(secs)}; wrote "
          f"{', '.join(res['files'])} to {args.out}/")
    for c in res["claims"]:
        print(f"  {c.status():>14}: {c.text}")
    return 0


class _Killed(Exception):
    """This process got ``signum`` (SIGTERM) while its ``--jobs`` processes ran."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _jobs(budget, parts: tuple[str, ...], args: argparse.Namespace) -> int:  # noqa: ANN001
    """Train the sweep in ``args.jobs`` processes side by side (``lintf reproduce --cell ...`` each), every one taking
    the next chain of cells left (:func:`numerics.reproduce.experiments.queue_cells`) when it comes free.  After a
    process fails no chain is started, the others finish theirs.  An interrupt (SIGINT) or a kill (SIGTERM) of this
    process reaches every one, so none goes on training into ``--out`` beside a sweep started after it."""
    import signal
    import subprocess

    from numerics.reproduce import experiments as ex
    from numerics.train import devices as hostdevices

    queue = ex.queue_cells(budget, parts, Path(args.out), args.noise)
    jobs = min(args.jobs, len(queue))
    if not args.json:
        print(f"reproduce --budget {budget.name}: " + (f"{sum(map(len, queue))} cells left in {len(queue)} chain(s), "
              f"{jobs} process(es) side by side, each taking the next chain when it comes free" if queue else
              "no cell left to train"), file=sys.stderr, flush=True)
    cmd = [sys.executable, "-m", "numerics.cli", "reproduce", "--budget", budget.name, "--out", str(args.out),
           "--runs", str(args.runs), *(["--only", args.only] if args.only else []), *(["--json"] if args.json else [])]
    env = hostdevices.for_processes(jobs)  # the cores shared out, not every process on every core
    running: dict = {}  # process -> its chain
    failed: list[tuple[tuple[str, ...], int]] = []

    def killed(signum: int, frame: object) -> None:
        raise _Killed(signum)

    previous = signal.signal(signal.SIGTERM, killed)
    try:
        while running or (queue and not failed):
            while queue and not failed and len(running) < jobs:
                g = queue.pop(0)
                running[subprocess.Popen([*cmd, *(a for name in g for a in ("--cell", name))],
                                         stdout=subprocess.DEVNULL, env=env)] = g
            for p in [p for p in running if p.poll() is not None]:
                g = running.pop(p)
                if p.returncode:
                    failed.append((g, p.returncode))
            if running:
                time.sleep(0.5)
    except (KeyboardInterrupt, _Killed) as stop:
        sig = stop.signum if isinstance(stop, _Killed) else signal.SIGINT
        for p in running:
            if p.poll() is None:
                p.send_signal(sig)
        for p in running:
            p.wait()
        if isinstance(stop, _Killed):
            return 128 + sig
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    for g, c in failed:
        print(f"lintf reproduce: error: the process for {', '.join(g)} exited with status {c}; its finished cells are "
              "kept" + (f", and the {len(queue)} chain(s) not started wait" if queue else "")
              + "; rerun the same command to resume", file=sys.stderr)
    return failed[0][1] if failed else 0


def _convergence(budget, args: argparse.Namespace) -> int:  # noqa: ANN001
    from numerics.reproduce import convergence

    def show(event: str, info: dict) -> None:
        e = info["entry"]
        if args.json:
            return
        line = ("not finished" if e is None else "failed" if e.get("failed") else
                f"{e['loss']:.4g} -> {e['loss_longer']:.4g} ({e['relative']:+.1%}), "
                f"{'holds' if e['holds'] else 'does not hold'}")
        if e and e.get("adopted"):  # the cell took the longer run of a check that did not hold (convergence.adopt)
            a = e["adopted"]
            line += f" (it holds its ×{a['factor']} run: the budget's run moved by {a['relative']:+.1%} when doubled)"
        if e and e.get("seeds"):  # the longer run ended higher: decided over master seeds (convergence.over_seeds)
            sd = e["seeds"]
            line += (f"; over master seeds {', '.join(str(k - 1) for k in sd['attempts'])}: " + (
                f"failed: {sd['failed']}" if sd.get("failed") else
                f"mean {sd['loss']:.4g} -> {sd['loss_longer']:.4g} "
                f"({sd['relative']:+.1%} ± {sd['change_se'] / sd['loss']:.1%})"))
        print(f"{info['name']}: {line}", file=sys.stderr, flush=True)

    cells = convergence.named(budget, Path(args.out), args.cell) if args.cell else None
    res = convergence.check(budget, args.out, args.runs, cells=cells, progress=show)
    print(strict_json(res, indent=2) if args.json else convergence.markdown(res), end="\n" if args.json else "")
    return 0
