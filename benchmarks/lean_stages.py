r"""Cells trained with shorter stages than a sweep's, compared with that sweep's cells sequence by sequence.

``probe`` trains the named cells as the sweep does (:func:`numerics.reproduce.experiments.run_cell`) but with the
budget's stages replaced by ``--steps``, ``--batch``, ``--seeds`` and ``--most`` (the same stage rule: stage ``k``
doubles the steps so far; the cell is converged when doubling moves the held-out loss by less than 3 % (``--rel``)
or 2 paired SE, after at least ``--least`` stages; by default as many stages as stay within the budget's most
steps).  FULL starts from the DIAG cell of its depth under ``--reference``, as the sweep starts it, so a FULL row
leaves out that DIAG cell's work; Fig. 5's replicas are not trained::

    python benchmarks/lean_stages.py probe --reference results/paper --steps 1500 --batch 1024 --seeds 1 \
        --out /tmp/lean --runs /tmp/lean-runs --log benchmarks/logs/lean-stages/s1500-b1024.json full-L3-uniform2 ...

``compare`` takes the finished cells of a whole sweep (``lintf reproduce --budget lean --out results/lean``), or the
named ones::

    python benchmarks/lean_stages.py compare --budget lean --out results/lean --reference results/paper \
        --log benchmarks/logs/lean-stages/grid.json

With ``--stored`` it evaluates nothing: each side's loss is the one its ``metrics.json`` holds, the sweep's own
evaluation on the same 100 000 sequences, made on the device that trained the cell.  The difference of the two
means is then the paired difference up to that device's rounding, and there is no paired SE (``as_good`` needs
none); it compares cells trained elsewhere (an accelerator's sweep) without a CPU evaluation of each.

Both evaluate the new model and the reference cell's model on the same 100 000 fresh float64 sequences (the sweeps'
evaluation sequences, :func:`numerics.reproduce.convergence.losses`) and print the paired difference, beside the work
of each run in sequence-steps (steps × batch × seeds, summed over stages), its time, and the scale each stage's fit
gave the update (below 1: the stage's pool exploded) and the rescue's.  A cell is *as good* when it is lower than the
reference, or higher by no more than 3 % of the reference or the float32 floor
(:func:`numerics.reproduce.convergence.as_good`: the convergence check's rule, one-sided and without its allowance of
paired SEs); a cell that failed its evaluation is not.  The log is rewritten after each cell, so a stopped run keeps
its rows; a cell already in the log with the same two model files is not evaluated again.  A log made with other
stages or another reference is refused.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from numerics.io import atomic_write_json, read_json
from numerics.reproduce.budgets import PARTS, Budget, Cell, cells_for, get_budget, stages_signature, start_choices
from numerics.reproduce.convergence import as_good as rule
from numerics.reproduce.convergence import float32_floor, losses, paired
from numerics.reproduce.experiments import load_cell, run_cell


def work(train: dict, batch: int, seeds: int) -> int:
    """Sequence-steps of a training summary: stage 1 trains ``seeds`` seeds, the later stages one."""
    return sum(int(s["steps"] or 0) * batch * (seeds if int(s["stage"]) == 1 else 1) for s in train["stages"])


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def run_facts(m: dict, budget: Budget) -> dict:
    """What a stored cell's ``metrics.json`` says of its run: steps, stages, work, time, device, fit scales."""
    t = m["train"]
    return {"steps": t["steps"], "stages": len(t["stages"]), "work": work(t, budget.stages.batch, budget.stages.seeds),
            "seconds": m["seconds"], "train_seconds": t["seconds"], "device": m.get("device"),
            "scales": [(s.get("scale") or {}).get("scale", 1.0) for s in t["stages"]],
            "rescue": (m.get("rescue") or {}).get("scale")}


def compare(cell: Cell, budget: Budget, out: Path, reference: Path, ref_budget: Budget, stored: bool = False) -> dict:
    """The cell under ``out`` against the reference's: paired difference ``new − reference`` on the evaluation
    sequences (``stored``: the difference of the losses the two ``metrics.json`` hold, without an SE), and the facts
    of both runs (:func:`run_facts`); :func:`as_good` judges it."""
    ref_path, new_path = (d / "models" / cell.name / "model.npz" for d in (reference, out))
    new, ref = (read_json(d / "models" / cell.name / "metrics.json") for d in (out, reference))
    row = {"cell": cell.name, "failed": new["failed"]} | run_facts(new, budget) \
        | {f"reference_{k}": v for k, v in run_facts(ref, ref_budget).items()}
    if new["failed"]:
        return row
    if stored:
        a_mean, b_mean = float(ref["eval"]["loss"]), float(new["eval"]["loss"])
        gain, se = b_mean - a_mean, None
    else:
        a, b = losses(ref_path, cell, budget), losses(new_path, cell, budget)
        (gain, se), a_mean, b_mean = paired(a, b), float(a.mean()), float(b.mean())
    return row | {"model_sha": sha(new_path), "reference_sha": sha(ref_path), "reference": a_mean, "loss": b_mean,
                  "diff": gain, "diff_se": se, "floor": float32_floor(cell, budget),
                  "relative": gain / abs(a_mean) if a_mean else 0.0}


def as_good(row: dict) -> bool:
    """The cell is lower than the reference, or higher by no more than 3 % of it or the float32 floor; a failed cell
    is not.  Unlike the convergence check, no allowance of paired SEs: where a model's tail carries its mean, the
    paired SE is as large as any difference (a model 55 times the reference's loss would pass on it)."""
    return not row["failed"] and rule(row["diff"], row["reference"], row["floor"])


def line(r: dict) -> str:
    diff = f"stored {r['diff']:+.2g}" if r.get("diff_se") is None else f"paired {r['diff']:+.2g} ± {r['diff_se']:.2g}"
    head = (f"{r['cell']}: failed ({r['failed']})" if r["failed"] else
            f"{r['cell']}: {r['loss']:.5g} vs {r['reference']:.5g} ({diff}, {r['relative']:+.1%}, "
            f"{'as good' if r['as_good'] else 'worse'})")
    return (f"{head}, {r['steps']} steps in {r['stages']} stages vs {r['reference_steps']}, work "
            f"{r['work'] / r['reference_work']:.2f} of the reference's, {r['seconds']:.0f} s on {r['device']} "
            f"(reference {r['reference_seconds']:.0f} s on {r['reference_device']})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    pr, co = sub.add_parser("probe"), sub.add_parser("compare")
    pr.add_argument("cells", nargs="+", help="cells of the budget, named as under OUT/models/")
    co.add_argument("cells", nargs="*", help="only these cells (default: every cell of the budget)")
    pr.add_argument("--steps", type=int, required=True)
    pr.add_argument("--batch", type=int, required=True)
    pr.add_argument("--seeds", type=int, default=1)
    pr.add_argument("--most", type=int, default=None, help="most stages (default: as many as the budget's cap allows)")
    pr.add_argument("--decay", type=float, default=None, help="rate of stage k >= 2: decay^(k-1) of the peak")
    pr.add_argument("--retry-blown", action="store_true", help="a blown stage does not end the cell (Stages.retry_blown)")
    pr.add_argument("--rel", type=float, default=None, help="the stage rule's relative change (default 0.03)")
    pr.add_argument("--least", type=int, default=1, help="train at least this many stages (default 1)")
    pr.add_argument("--runs", type=Path, required=True)
    for p in (pr, co):
        p.add_argument("--budget", default="paper" if p is pr else "lean")
        p.add_argument("--reference", type=Path, required=True, help="the sweep's --out whose cells are compared")
        p.add_argument("--reference-budget", default="paper", help="the budget of the reference sweep (default paper)")
        p.add_argument("--out", type=Path, required=True)
        p.add_argument("--log", type=Path, required=True)
    co.add_argument("--stored", action="store_true",
                    help="take both losses from the cells' metrics.json instead of evaluating the models here")
    a = ap.parse_args(argv)
    try:
        budget, ref_budget = get_budget(a.budget), get_budget(a.reference_budget)
        if a.out.resolve() == a.reference.resolve():
            raise ValueError(f"--out must differ from --reference, got {a.out} for both")
        if a.mode == "probe":
            st = budget.stages
            most = a.most or max(2, int(np.floor(np.log2(st.cap / a.steps))) + 1)
            if not 1 <= a.least <= most:
                raise ValueError(f"--least must be in 1..{most} (the most stages), got {a.least}")
            budget = replace(budget, seeds=1,  # no Fig. 5 replicas
                             stages=replace(st, steps=a.steps, batch=a.batch, seeds=a.seeds, most=most,
                                            retry_blown=a.retry_blown or st.retry_blown,
                                            decay=st.decay if a.decay is None else a.decay,
                                            rel=st.rel if a.rel is None else a.rel))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # a probe trains no Fig. 5 replicas; compare reads the cells as the sweep stored them
    grid = {c.name: replace(c, keep_seeds=c.keep_seeds and a.mode == "compare") for c in cells_for(budget, PARTS)}
    names = a.cells or list(grid)
    bad = [c for c in names if c not in grid]
    if bad:
        print(f"error: cells must name cells of budget {a.budget}, got {bad}", file=sys.stderr)
        return 2
    stored = a.mode == "compare" and a.stored
    head = {"budget": a.budget, "stages": stages_signature(budget.stages), "reference": str(a.reference),
            "reference_budget": a.reference_budget} | ({"evaluation": "stored"} if stored else {}) \
        | ({"least": a.least} if a.mode == "probe" and a.least > 1 else {})
    log = read_json(a.log) if a.log.exists() else head | {"cells": []}
    if {k: log.get(k) for k in head} != head:
        print(f"error: --log {a.log} was made with other stages or another reference; give another --log",
              file=sys.stderr)
        return 2
    rows, skipped = {r["cell"]: r for r in log["cells"]}, []
    for name in names:
        cell = grid[name]
        ref = a.reference / "models" / name / "model.npz"
        starts = [c for c in start_choices(cell, budget) if (a.reference / "models" / c.name / "model.npz").exists()]
        if not ref.exists() or (a.mode == "probe" and start_choices(cell, budget) and not starts):
            skipped.append(name)
            continue
        m = load_cell(a.out, cell, budget)
        if a.mode == "probe" and m is None:
            m = run_cell(cell, budget, a.out, a.runs, starts=a.reference, least=a.least)
        if m is None:
            skipped.append(name)
            continue
        new = a.out / "models" / name / "model.npz"
        old = rows.get(name, {})
        if m["failed"] or old.get("model_sha") != sha(new) or old.get("reference_sha") != sha(ref):
            rows[name] = compare(cell, budget, a.out, a.reference, ref_budget, stored)
        rows[name] = row = rows[name] | {"as_good": as_good(rows[name])}  # a stored row is judged by today's rule
        if row != old:
            atomic_write_json(a.log, head | {"cells": list(rows.values())})
            print(line(row), flush=True)
    done = [rows[n] for n in names if n in rows]
    good = sum(r["as_good"] for r in done)
    rel = np.median([r["relative"] for r in done if not r["failed"]]) if done else float("nan")
    print(f"{good} of {len(done)} cells as good as the reference; median change {rel:+.2%}"
          + (f"; {len(skipped)} not compared (no finished cell or reference, or no start)" if skipped else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
