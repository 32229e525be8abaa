r"""What a looser stage rule would have saved on a finished grid, and what it would have cost, from its records.

A cell trains in stages until doubling its steps moves its held-out loss by less than 3 % or 2 SE of the paired
difference (:func:`numerics.train.continuation.converged`).  Each stage's summary in ``metrics.json`` keeps its held-out
loss, that loss's own SE, whether it is blown, and its seconds.  So for any rule that stops a cell *no later* than the
recorded rule did, the records say where it stops, which stage it keeps and what the stages after that cost.  Rules:

- ``most=K``: at most ``K`` stages (``Stages.most``).
- ``se=N``: a stage converges when it lowered the loss of the stage it started from by at most 3 % of that loss or
  ``N`` times its own SE (the SE of the stage's held-out loss, not of the paired difference, which the records do not
  keep).
  Where either stage is blown, 3 % alone, as in the recorded rule.
- ``most=K,se=N``: both.

A rule that stops a cell later than its record cannot be replayed: that cell keeps its record.  The floor is applied
as the sweep does: a cell that would stop more than the rule allows above its floor (the cell one layer shallower, its
recorded held-out loss, or the replayed one where the replay stopped that cell earlier) restarts from it.  Where the
record restarted there too, the replay follows it; where the record restarted and the rule would not, or the other way
round, the cell keeps its record.  FULL's DIAG start is a candidate beside the stages, as in the sweep.  What the
records cannot replay is counted, not hidden: a cell checked against, or restarted from, a floor that stopped earlier
under the rule, and a FULL cell whose DIAG start stopped earlier, are *approximate* (their own stages are taken as
recorded).  The Fig. 5 cells' seed replicas keep their recorded seconds: the rule would shorten them too.  Each kept
stage is compared with the record's on the same held-out sequences (``"penalty"``, relative), and with
``--reference`` (``results/paper``, say) with that grid's cell.  The cells' seconds less the saved stages are shared out as ``lintf reproduce --jobs`` shares them
(``benchmarks/grid_schedule.py``), and ``--ratio`` scales the longest process to another machine:

    python benchmarks/stop_rules.py --budget lean --out results/lean --rule most=6 --rule se=2 --ratio 1.43 \
        --reference results/paper
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.grid_schedule import replay_parser, replay_args  # noqa: E402
from numerics.errors import LintfError  # noqa: E402
from numerics.io import atomic_write_json, read_json  # noqa: E402
from numerics.reproduce.budgets import PARTS, cells_for, get_budget  # noqa: E402
from numerics.reproduce.schedule import share_out  # noqa: E402
from numerics.reproduce.timing import runs  # noqa: E402
from numerics.train.continuation import StageResult, kept, next_start  # noqa: E402

REL = 0.03


def parse_rule(text: str) -> dict[str, Any]:
    """``most=K`` (an integer >= 2), ``se=N`` (a finite number >= 0), or both joined by a comma; a one-line
    :class:`ValueError` otherwise."""
    rule: dict[str, Any] = {"name": text, "most": None, "se": None}
    for part in text.split(","):
        name, _, value = part.partition("=")
        try:
            if name == "most" and rule["most"] is None and int(value) >= 2:
                rule["most"] = int(value)
                continue
            if name == "se" and rule["se"] is None and 0 <= float(value) < float("inf"):
                rule["se"] = float(value)
                continue
        except ValueError:
            pass
        raise ValueError(f"--rule must be most=K (K >= 2), se=N (N >= 0, finite) or both joined by a comma, "
                         f"got {text!r}")
    return rule


def _results(stages: list[dict]) -> list[StageResult]:
    """Stage summaries as the sweep's :class:`StageResult`, stored ones (their ``.stored`` is the summary itself)."""
    return [StageResult(int(s.get("stage", i + 1)), None, {}, None, 0.0, stored=s) for i, s in enumerate(stages)]


def _best(stages: list[dict]) -> dict:
    """The stage a cell keeps (:func:`numerics.train.continuation.kept`)."""
    return kept(_results(stages)).stored


def _start(stages: list[dict]) -> dict:
    """The stage the next one starts from and is compared with (:func:`numerics.train.continuation.next_start`)."""
    return next_start(_results(stages)).stored


def _stops(new: dict, old: dict, se: float) -> bool:
    """The rule ``se=N``: ``new`` lowered ``old``'s loss by at most 3 % of it or ``se`` of ``new``'s own SE."""
    tol = REL * abs(old["held_out"]) if new["blown"] or old["blown"] else \
        max(REL * abs(old["held_out"]), se * float(new["held_out_se"]))
    return old["held_out"] - new["held_out"] <= tol


def replay_cell(m: dict, rule: dict, floor_loss: float | None, retry_blown: bool) -> dict[str, Any]:
    """Where ``rule`` stops the cell of record ``m``: ``{"stop", "kept", "saved", "penalty", "followed"}``, the
    record's own stop where the rule does not stop it earlier or the records cannot follow it.  ``floor_loss`` is
    its floor's held-out loss (recorded or replayed); ``"followed"`` says whether the replay went through a restart
    from the floor."""
    t = m.get("train") or {}
    stages = t.get("stages") or []
    restarted = any(s.get("restart") for s in stages)
    record = {"stop": len(stages), "kept": None, "saved": 0.0, "penalty": 0.0, "followed": restarted}
    if not stages or int(t.get("chosen_stage", 1)) == 0:  # no stages, or FULL kept its DIAG start
        return record
    start = (t.get("start_check") or {}).get("held_out")  # FULL's DIAG start, a candidate beside the stages
    kept_loss = float(kept_loss_of(m))
    record["kept"] = kept_loss
    for k in range(1, len(stages)):  # stop after stage k, before the record's last
        done, restart = stages[:k], bool(stages[k].get("restart"))
        capped = rule["most"] is not None and k >= rule["most"]
        if capped:
            stop = True
        elif rule["se"] is None or k < 2:
            stop = False
        elif retry_blown and done[-1]["blown"] and not done[-2]["blown"]:
            stop = False  # a stage that blows up after one that did not goes on from the best
        else:
            stop = _stops(done[-1], _start(done[:-1]), rule["se"])
        best = _best(done)
        stuck = floor_loss is not None and not capped and not _stops(
            {"held_out": floor_loss, "blown": False, "held_out_se": best["held_out_se"]}, best, rule["se"] or 0.0)
        if not stop:
            if restart and rule["se"] is not None:  # (a cap alone keeps the recorded rule, restarts and all)
                return record  # the record restarted from the floor where the rule goes on: the replay cannot follow
            continue
        if stuck:
            if restart:
                continue  # the rule restarts from the floor too, as the record did
            return record  # the rule would restart from the floor where the record did not
        keep = best["held_out"]
        if start is not None and not _stops({"held_out": start, "blown": False,
                                             "held_out_se": best["held_out_se"]}, best, rule["se"] or 0.0):
            keep = start  # the trained stages end above FULL's DIAG start: the cell keeps the start
        saved = sum(float(s.get("seconds") or 0.0) for s in stages[k:])
        return {"stop": k, "kept": keep, "saved": saved, "penalty": keep / kept_loss - 1 if kept_loss else 0.0,
                "followed": any(s.get("restart") for s in done)}
    return record


def kept_loss_of(m: dict) -> float:
    """The held-out loss of the model a cell record keeps: its chosen stage's, or its start's (stage ``0``); unlike
    :func:`numerics.reproduce.deeper.stored_mean`, also where a rescue scaled the model after it (the replay compares
    stages)."""
    t = m["train"]
    if int(t["chosen_stage"]) == 0:
        return float(t["start_check"]["held_out"])
    return float(t["stages"][int(t["chosen_stage"]) - 1]["held_out"])


def replay(budget_name: str, out: Path, rule: dict, jobs: int = 2, ratio: float = 1.0,
           reference: Path | None = None) -> dict[str, Any]:
    """``rule`` over every cell of the finished grid under ``out``: per cell its replay, and the grid's sums; with
    ``reference`` (another grid of the same cells, the same held-out sequences), the cells that stop earlier and keep
    a loss more than 3 % above the reference cell's, as replayed and as recorded."""
    budget = get_budget(budget_name)
    cells = cells_for(budget, PARTS)
    records = {}
    for c in cells:
        path = out / "models" / c.name / "metrics.json"
        if not path.is_file():
            raise SystemExit(f"stop_rules.py: error: --out {out} lacks cell {c.name} of budget {budget_name}; "
                             f"replay a finished grid")
        try:
            records[c.name] = read_json(path)
            float(records[c.name].get("seconds") or 0.0)
        except (OSError, ValueError, TypeError, AttributeError, LintfError) as e:
            raise SystemExit(f"stop_rules.py: error: {path} is not a cell record: {e}") from None
    retry = bool(budget.stages.retry_blown)
    done: dict[str, dict] = {}
    moved: set[str] = set()  # cells the replay stopped earlier
    for c in sorted(cells, key=lambda c: c.layers):  # a cell's floor and a FULL cell's DIAG start are shallower/first
        floor = f"{c.model}-L{c.layers - 1}-{c.name.split('-', 2)[2]}"
        floor_rec = (records[c.name].get("train") or {}).get("floor")
        floor_loss = done[floor]["kept"] if floor in moved else (floor_rec or {}).get("held_out")
        r = replay_cell(records[c.name], rule, floor_loss if floor_rec else None, retry)
        start = f"diag-L{c.layers}-{c.name.split('-', 2)[2]}" if c.model == "full" else None
        r["approximate"] = (floor_rec is not None and floor in moved and (r["saved"] > 0 or r["followed"])) \
            or start in moved
        done[c.name] = r
        if r["saved"] > 0:
            moved.add(c.name)
    seconds = {n: sum(float(x.get("seconds") or 0.0) for x in runs([m])) - done[n]["saved"]
               for n, m in records.items()}
    sums = [sum(seconds[c.name] for c in g) for g in share_out(budget, cells, jobs, lambda c: seconds[c.name])]
    earlier = {n: r for n, r in done.items() if r["saved"] > 0}
    versus = {}
    if reference is not None:
        try:
            ref = {n: kept_loss_of(read_json(reference / "models" / n / "metrics.json")) for n in earlier}
        except (OSError, ValueError, TypeError, KeyError, IndexError, LintfError) as e:
            raise SystemExit(f"stop_rules.py: error: --reference {reference} lacks a cell record: {e}") from None
        versus = {"reference": str(reference),
                  "above_reference": sorted(n for n in earlier if earlier[n]["kept"] > (1 + REL) * ref[n]),
                  "recorded_above_reference": sorted(n for n in earlier
                                                     if kept_loss_of(records[n]) > (1 + REL) * ref[n])}
    return {"rule": rule["name"], "budget": budget_name, "out": str(out), "jobs": jobs, "ratio": ratio,
            "cells": len(cells), "earlier": len(earlier), "approximate": sum(r["approximate"] for r in done.values()),
            "saved_hours": sum(r["saved"] for r in done.values()) / 3600,
            "cell_hours": sum(seconds.values()) / 3600, "replayed_hours": max(sums) / 3600,
            "scaled_hours": max(sums) * ratio / 3600,
            "above_3pct": sorted(n for n, r in earlier.items() if r["penalty"] > REL),
            "worst_penalty": max((r["penalty"] for r in earlier.values()), default=0.0), "per_cell": earlier} | versus


def render(r: dict[str, Any]) -> str:
    lines = [f"rule {r['rule']}: {r['earlier']} of {r['cells']} cells stop earlier, saving {r['saved_hours']:.2f} h "
             f"of cell time ({r['cell_hours']:.2f} h left); one sweep with --jobs {r['jobs']}: "
             f"{r['replayed_hours']:.2f} h" + (f", {r['scaled_hours']:.2f} h at ratio {r['ratio']:g}"
                                               if r["ratio"] != 1 else ""),
             f"  kept stage above the record's by more than 3 %: {len(r['above_3pct'])} cells"
             + (f" ({', '.join(r['above_3pct'])})" if r["above_3pct"] else "")
             + f"; worst {100 * r['worst_penalty']:.1f} %; {r['approximate']} cells approximate (their start or floor "
               f"stopped earlier)"]
    if "reference" in r:
        lines.append(f"  of those that stop earlier, {len(r['above_reference'])} keep a loss more than 3 % above "
                     f"{r['reference']}'s cell, against {len(r['recorded_above_reference'])} as recorded")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = replay_parser("stop_rules.py", __doc__)
    p.add_argument("--rule", action="append", required=True, help="most=K, se=N, or most=K,se=N (repeatable)")
    p.add_argument("--reference", type=Path, help="a grid of the same cells to compare the kept losses with")
    args = replay_args(p, argv)
    try:
        rules = [parse_rule(r) for r in args.rule]
    except ValueError as e:
        p.error(str(e))
    results = [replay(args.budget, args.out, rule, args.jobs, args.ratio, args.reference) for rule in rules]
    print("\n".join(render(r) for r in results))
    if args.log:
        atomic_write_json(args.log, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
