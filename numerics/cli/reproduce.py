r"""``lintf reproduce [--budget quick|overnight|paper] [--only table1,fig1,...] [--noise NOISE ... |
--cell CELL ...
| --no-train] [--out DIR] [--jobs N | --scheduler ADDR] [--json]``.

Trains every cell the requested parts need that ``--out`` does not hold yet
(:mod:`numerics.reproduce.sweep`; an interrupted cell resumes from its checkpoints under
``--runs``), evaluates the baselines on the same sequences, then writes ``table1.csv``,
``table1.md``, the figures and ``report.md`` into ``--out``.  A non-empty ``--out`` without the
sweep's marker (``lintf-sweep.json``) is refused before any work.

Example (the qualitative picture, minutes)::

    python -m numerics.cli reproduce --budget quick --out results/quick
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

from numerics.io import strict_json
from numerics.train import devices


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--budget",
        default="quick",
        help="quick (default; the qualitative picture), overnight (the paper's grid on a 2-core CPU "
        "overnight) or paper (the reference)",
    )
    p.add_argument(
        "--only",
        default=None,
        help="comma list out of table1,fig1,fig2,fig3,fig4,fig5,fig7,beyond (default: all)",
    )
    p.add_argument("--out", default=None, help="results directory (default results/BUDGET)")
    p.add_argument(
        "--runs",
        default="runs/reproduce",
        help="training run directories with checkpoints (default runs/reproduce; git-ignored)",
    )
    p.add_argument(
        "--json", action="store_true", help="print a JSON summary instead of progress and text"
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="train on a local Dask cluster of this many worker processes, each taking the next cell "
        "when it comes free (default 1: in this process; 2 keeps two cores busy; the cores are "
        "shared out unless LINTF_HOST_DEVICES is set)",
    )
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDR",
        help="send the cells to a running Dask cluster: its scheduler's address (tcp://HOST:8786) "
        "or scheduler file, instead of --jobs; --runs must then be a directory the workers "
        "share, or each worker keeps its own (docs/cluster.md)",
    )
    only = (
        p.add_mutually_exclusive_group()
    )  # --noise and --cell choose the cells to train; --no-train none
    only.add_argument(
        "--noise",
        action="append",
        metavar="NOISE",
        help="train only the cells of this noise setting of the budget (repeat for more); the tables "
        "and report still cover every finished cell",
    )
    only.add_argument(
        "--cell",
        action="append",
        metavar="CELL",
        help="train only this cell, named as under OUT/models/ (such as diag-L7-uniform5; repeat for "
        "more); cells are independent, so processes given different cells can share one --out",
    )
    p.add_argument(
        "--convergence",
        action="store_true",
        help="with --cell: train those finished cells again with every stage twice as long and "
        "compare (writes OUT/convergence.json; the cells themselves are not changed)",
    )
    only.add_argument(
        "--no-train",
        action="store_true",
        help="write the tables, figures and report from the cells finished so far, training none",
    )


def _out(args: argparse.Namespace) -> str:
    return args.out if args.out is not None else f"results/{args.budget}"


def run(args: argparse.Namespace) -> int:
    from numerics.reproduce import grid  # lazy: start-up
    from numerics.reproduce import sweep as sw_mod  # lazy: start-up
    from numerics.reproduce.report import write_outputs  # lazy: start-up

    budget = grid.get_budget(args.budget)
    parts = grid.parse_parts(args.only)
    out = Path(_out(args))
    if args.jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {args.jobs}")
    if args.scheduler is not None and args.jobs != 1:
        raise ValueError(
            f"--jobs {args.jobs} and --scheduler {args.scheduler} exclude each other: the cluster "
            "at --scheduler brings its own workers"
        )
    if args.convergence and not args.cell:
        raise ValueError("--convergence needs --cell: name the finished cells to train again")
    sw_mod.check_out(out, budget)  # before any work: a foreign --out is refused
    if getattr(
        args, "_console", False
    ):  # the processes of --jobs and a resumed sweep share compiled programs
        devices.compile_cache(Path(args.runs) / "xla-cache")
        # a program the cache cannot hold (a full disk) is compiled again next time, nothing more; lintf's own
        # files that cannot be written are the one-line error
        warnings.filterwarnings(
            "ignore", message="Error (reading|writing) persistent compilation cache"
        )
    t0 = time.perf_counter()
    if args.convergence:
        from numerics.reproduce import convergence  # lazy: start-up

        res = convergence.check(budget, out, Path(args.runs), tuple(dict.fromkeys(args.cell)))
        for line in convergence_lines(res):
            print(line)
        return 0

    def show(event: str, info: dict) -> None:
        if args.json:
            return
        if event == "start":
            print(
                f"reproduce --budget {budget.name}: {info['total']} cells, {len(info['todo'])} to train",
                file=sys.stderr,
                flush=True,
            )
        elif event == "cell":
            result = (
                f"FAILED ({info['failed']})"
                if info["failed"]
                else f"adjusted loss {info['loss']:.4f}"
            )
            print(f"{info['name']}: {result}", file=sys.stderr, flush=True)
        elif event == "baselines":
            print(f"baselines {info['noise']}", file=sys.stderr, flush=True)

    sw = sw_mod.sweep(
        budget,
        parts,
        out,
        args.runs,
        train=not args.no_train,
        noises=args.noise,
        only=args.cell,
        jobs=args.jobs,
        scheduler=args.scheduler,
        progress=None if args.json else show,
    )
    sw_mod.claim_out(out, budget)
    res = write_outputs(sw, budget, parts, out)
    secs = time.perf_counter() - t0
    if args.json:
        print(
            strict_json(
                {
                    "budget": budget.name,
                    "parts": list(parts),
                    "out": str(out),
                    "cells": len(sw.cells),
                    "trained": sw.trained,
                    "missing": sw.missing,
                    "due": sw.due,
                    "seconds": secs,
                    "files": res["files"],
                    "claims": [
                        {
                            "claim": c.key,
                            "text": c.text,
                            "verdict": c.verdict,
                            "evidence": list(c.evidence),
                            "waiting": list(c.waiting),
                        }
                        for c in res["claims"]
                    ],
                },
                indent=2,
            )
        )
        return 0
    print(
        f"{len(sw.cells)} cells ({len(sw.trained)} trained now"
        + (f", {len(sw.missing)} not trained" if sw.missing else "")
        + (f", {len(sw.due)} due for retraining" if sw.due else "")
        + f") in {secs:.0f} s; wrote {', '.join(res['files'])} to {out}/"
    )
    for c in res["claims"]:
        print(f"  {c.status():>14}: {c.text}")
    return 0


def convergence_lines(res: dict) -> list[str]:
    """One line per cell of the convergence check's entries ``res`` (this run's and earlier ones,
    :func:`numerics.reproduce.record.read_convergence`); a longer run without a loss (``null`` or
    absent) shows ``n/a``."""

    def num(v: float | None, spec: str) -> str:
        return "n/a" if v is None else format(v, spec)

    return [
        f"{name}: {num(e['loss'], '.4g')} -> {num(e.get('loss_longer'), '.4g')} "
        f"({num(e.get('relative'), '+.1%')}), " + ("holds" if e["holds"] else "does not hold")
        for name, e in res["cells"].items()
    ]
