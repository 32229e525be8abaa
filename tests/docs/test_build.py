"""The documentation builds without a warning: every link, anchor and API identifier resolves."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_mkdocs_build_is_strict_clean(tmp_path: Path) -> None:
    # `mkdocs build --strict` turns every warning into a failure: a broken link or anchor
    # (mkdocs.yml's `validation`), a page missing from the nav, an API identifier that does not import.
    env = os.environ | {"NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{log[-4000:]}"
    # The API reference is generated, not empty: every `::: identifier` of docs/api/*.md renders with at
    # least one member, and every member an API page lists by name renders (a misspelt one renders nothing).
    for page in sorted((ROOT / "docs" / "api").glob("*.md")):
        html = (tmp_path / "site" / "api" / page.stem / "index.html").read_text()
        for ident, members in api_identifiers(page.read_text()):
            assert f'id="{ident}"' in html, f"{page.name}: {ident} does not render"
            assert f'id="{ident}.' in html, f"{page.name}: {ident} renders no member"
            missing = [m for m in members if f'id="{ident}.{m}"' not in html]
            assert not missing, f"{page.name}: members of {ident} that do not render: {missing}"


def api_identifiers(text: str) -> list[tuple[str, list[str]]]:
    """``(identifier, listed members)`` for each ``::: identifier`` block of an API page."""
    blocks = re.split(r"^::: ", text, flags=re.M)[1:]
    out = []
    for block in blocks:
        ident, _, rest = block.partition("\n")
        options = re.search(r"^\s+members:\n((?:\s+- \w+\n?)+)", rest, re.M)
        out.append((ident.strip(), re.findall(r"- (\w+)", options.group(1)) if options else []))
    return out


def test_throughput_report_is_its_json() -> None:
    # docs/experiments/throughput.md copies `lintf bench --json` output; the copy must stay equal to the file.
    import json

    bench = json.loads((ROOT / "docs" / "experiments" / "throughput.json").read_text())
    page = (ROOT / "docs" / "experiments" / "throughput.md").read_text()
    rows = re.findall(r"^\| (FULL|DIAG)-(\d+) \| (fast|plain) \| (\d+) \| ([\d.]+) \| ([\d.]+) \|$", page, re.M)
    want = [(t["model"].upper(), str(t["layers"]), t["forward"], str(t["devices"]),
             f"{t['steps_per_s']:.3g}", f"{t['gflops']:.3g}") for t in bench["throughput"]]
    assert rows == want, f"throughput.md's table differs from throughput.json:\n{rows}\n{want}"
    for key in ("speedup", "speedup_vs_plain_one_device"):
        for model, ratio in bench[key].items():
            assert f"{ratio:.2f}×" in page, f"throughput.md lacks {key}[{model}] = {ratio:.2f}×"


def test_tails_report_is_its_json() -> None:
    # docs/experiments/tails.md copies benchmarks/tail_recipes.py's output; the copy must stay equal to the file.
    import json

    log = json.loads((ROOT / "benchmarks" / "logs" / "tail-recipes.json").read_text())
    page = (ROOT / "docs" / "experiments" / "tails.md").read_text()
    f = "{:.3g}".format
    for name, r in log["recipes"].items():
        t, s, c = r["trained"], r["scaled"], r["scale"]
        row = (f"| {name} | {f(t['mean'])} | {f(t['median'])} | {f(t['max'])} | "
               f"{'fails' if t['failed'] else 'passes'} | {c['scale']:.3f} | {f(s['mean'])} | {f(s['max'])} | "
               f"{f(s['tail_check']['max'])} |")
        assert row in page, f"tails.md lacks the row of {name}: {row}"


def test_tails_rescue_rows_are_the_committed_metrics() -> None:
    # The rescue section of docs/experiments/tails.md copies the rescued quick cells' metrics.json.
    import json

    page = (ROOT / "docs" / "experiments" / "tails.md").read_text()
    f = "{:.3g}".format
    rescued = [p for p in sorted((ROOT / "results" / "models").glob("*/metrics.json"))
               if json.loads(p.read_text()).get("rescue")]
    assert rescued, "no committed quick cell was rescued; tails.md describes two"
    quoted = ("diag-L4-categorical1_3_5", "diag-L4-uniform4", "gdpp-L4-uniform0", "full-L4-uniform0")  # paper rows
    rescued += [ROOT / "benchmarks" / "logs" / "paper-rescues" / f"{c}.json" for c in quoted]
    for path in rescued:
        m = json.loads(path.read_text())
        r, b = m["rescue"], m["rescue"]["before"]
        row = (f"| `{m['cell']}` | {f(b['loss'])} | {f(b['max'])} | {f(b['tail_check_max'])} | "
               f"{f(r['fit']['pool_max'])} | {r['scale']:.3f} | {f(m['eval']['loss'])} | "
               f"{f(m['eval']['tail']['max'])} | {f(m['tail_check']['max'])} |")
        assert row in page, f"tails.md lacks the rescue row of {m['cell']}: {row}"


def stage_rows() -> list[str]:
    """The rows of docs/experiments/stopped-early.md's table: DIAG-7 at uniform:2 as the budget trained it (the run
    the cell replaced), with every stage twice as long (the cell now) and four times as long (its convergence check):
    each stage's held-out loss and fit scale, the kept stage and the loss on the evaluation sequences."""
    import json

    def row(stages, kept, loss) -> str:
        cells = [f"{s['held_out']:.3g}" + (f" (c = {s['scale']['scale']:.2f})" if s["scale"]["scale"] < 1 else "")
                 for s in stages] + ["–"] * (4 - len(stages))
        return (f"| {', '.join(str(s['steps']) for s in stages)} | {' | '.join(cells)} | stage {kept} | "
                f"{loss:.4g} |")

    cell = json.loads((ROOT / "results/paper/models/diag-L7-uniform2/metrics.json").read_text())
    gone = cell["adopted"]["replaced"]
    check = json.loads((ROOT / "results/paper/convergence/models/diag-L7-uniform2/metrics.json").read_text())
    held = min(gone["stages"], key=lambda s: s["held_out"])["stage"]  # the stage the replaced run kept
    return [row(gone["stages"], held, gone["loss"])] + [row(m["train"]["stages"], m["train"]["chosen_stage"],
                                                           m["eval"]["loss"]) for m in (cell, check)]


def test_stopped_early_rows_are_the_committed_metrics() -> None:
    page = (ROOT / "docs" / "experiments" / "stopped-early.md").read_text()
    for row in stage_rows():
        assert row in page, f"stopped-early.md lacks the row {row}"


def test_stopped_early_seed_runs_are_their_logs() -> None:
    # The reproducibility of FULL-3 at categorical:1,3,5 quoted in stopped-early.md: benchmarks/cell_seeds.py's runs.
    import json

    page = (ROOT / "docs" / "experiments" / "stopped-early.md").read_text()
    logs = sorted((ROOT / "benchmarks" / "logs" / "cell-seeds").glob("full-L3-categorical1_3_5-seed*.json"))
    assert len(logs) == 2
    quoted = " and ".join(f"{json.loads(p.read_text())['eval']['loss']:.4f}" for p in logs)
    assert f"master seeds 1 and 2 it ends at {quoted}" in page
    # ... and the convergence check decided over those seeds: the same runs at the budget's stages, and twice as long
    sd = json.loads((ROOT / "results" / "paper" / "convergence.json").read_text())["cells"][
        "full-L3-categorical1_3_5"]["seeds"]
    assert [f"{x:.4f}" for x in sd["losses"][1:]] == quoted.split(" and ") and not sd["holds"]
    text = " ".join(page.split())
    assert "they end at {:.4f} and {:.4f}".format(*sd["losses_longer"][1:]) in text
    c = [st["scale"]["scale"] for k in (2, 3) for st in json.loads((
        ROOT / "results/paper/convergence/seeds/x2" / f"attempt{k}" / "models/full-L3-categorical1_3_5/metrics.json"
    ).read_text())["train"]["stages"]]
    assert f"Every stage of both was scaled (c = {min(c):.2f} to {max(c):.2f})" in text and max(c) < 1
    stated = f"{sd['loss']:.4f} to {sd['loss_longer']:.4f} (+{100 * sd['relative']:.1f} % ± " \
             f"{100 * sd['change_se'] / sd['loss']:.1f} %)"
    assert f"the means of the three seeds move from {stated}" in text
    assert stated.replace(" to ", " and ") in " ".join((ROOT / "docs" / "reproduce.md").read_text().split())


def test_stopped_early_brisk_seeds_are_the_check_and_its_logs() -> None:
    # The table of the brisk DIAG-7 at uniform:2 by master seed and stage length: the budget's stages from the cell's
    # replaced run and benchmarks/cell_seeds.py's logs, x2 and x4 from the convergence check's entry.
    import json

    import numpy as np

    page = (ROOT / "docs" / "experiments" / "stopped-early.md").read_text()
    brisk = ROOT / "results" / "brisk"
    sd = json.loads((brisk / "convergence.json").read_text())["cells"]["diag-L7-uniform2"]["seeds"]
    first = [json.loads((brisk / "models" / "diag-L7-uniform2" / "metrics.json").read_text())["adopted"]["replaced"][
        "loss"]] + [json.loads((ROOT / "benchmarks" / "logs" / "cell-seeds" / f"brisk-diag-L7-uniform2-seed{k}.json")
                               .read_text())["eval"]["loss"] for k in (1, 2)]
    for seed, row in enumerate(zip(first, sd["losses"], sd["losses_longer"])):
        assert "| {} | {:.5f} | {:.5f} | {:.5f} |".format(seed, *row) in page.replace(" (the cell holds its ×2 run)", "")
    assert f"| mean | {np.mean(first):.5f} | {sd['loss']:.5f} | {sd['loss_longer']:.5f} |" in page
    text = " ".join(page.split())
    assert f"by +{100 * sd['relative']:.1f} % ± {100 * sd['change_se'] / sd['loss']:.1f} % from twice" in text
    assert f"moves by −{100 * (1 - sd['loss'] / np.mean(first)):.1f} % from the budget's stages" in text
    minutes = [json.loads((brisk / "convergence" / w / "models" / "diag-L7-uniform2" / "metrics.json").read_text())[
        "seconds"] / 60 for w in ("seeds/x2/attempt2", "seeds/x2/attempt3", ".", "seeds/x4/attempt2")]
    assert "took {:.0f} and {:.0f} minutes".format(*minutes[:2]) in text
    assert "seeds 0 and 1 took {:.0f} and {:.0f} minutes".format(*minutes[2:]) in text


def test_lean_stages_probe_rows_are_its_logs() -> None:
    # docs/experiments/lean-stages.md copies benchmarks/lean_stages.py's probe logs, row by row.
    import json

    page = (ROOT / "docs" / "experiments" / "lean-stages.md").read_text()
    for batch in (1024, 2048):
        log = json.loads((ROOT / "benchmarks" / "logs" / "lean-stages" / f"s1500-b{batch}.json").read_text())
        assert log["stages"]["batch"] == batch and log["stages"]["steps"] == 1500 and log["cells"]
        assert page.count(f"\n| {batch} | ") == len(log["cells"]), f"lean-stages.md's rows at batch {batch} are not its log's"
        for r in log["cells"]:
            row = (f"| {batch} | {r['cell']} | {r['reference']:.4g} | {r['loss']:.4g} | {r['diff']:+.2g} ± "
                   f"{r['diff_se']:.2g} | {r['relative']:+.1%} | {'as good' if r['as_good'] else 'worse'} | "
                   f"{r['steps']} ({r['stages']}) | {r['work'] / r['reference_work']:.2f} | {r['seconds']:.0f} | "
                   f"{r['reference_seconds']:.0f} |")
            assert row in page, f"lean-stages.md lacks the row {row}"


def grid_row(r: dict) -> str:
    """A cell of a lean grid's comparison log as lean-stages.md tabulates the cells not as good as the paper's."""
    se = "" if r["diff_se"] is None else f" ± {r['diff_se']:.2g}"  # a --stored comparison has no paired SE
    return (f"| {r['cell']} | {r['reference']:.4g} | {r['loss']:.4g} | {r['diff']:+.2g}{se} | "
            f"{r['relative']:+.1%} | {r['steps']} ({r['stages']}) | {r['reference_steps']} | "
            f"{', '.join(f'{c:.2f}' for c in r['scales'])} |")


def test_lean_stages_grid_rows_are_its_log() -> None:
    # The first recipe's grid in docs/experiments/lean-stages.md: its count of cells as good and the rows of the others.
    import json

    page = (ROOT / "docs" / "experiments" / "lean-stages.md").read_text()
    rows = json.loads((ROOT / "benchmarks" / "logs" / "lean-stages" / "grid-decay0.5.json").read_text())["cells"]
    assert f"**{sum(r['as_good'] for r in rows)} of {len(rows)} cells are as good as the paper's**" in page
    for r in (r for r in rows if not r["as_good"]):
        assert grid_row(r) in page, f"lean-stages.md lacks the row {grid_row(r)}"


def test_stop_rules_rows_are_their_log() -> None:
    # The looser stage rules replayed in docs/experiments/sweep-time.md: one row per rule of benchmarks/stop_rules.py.
    import json

    page = (ROOT / "docs" / "experiments" / "sweep-time.md").read_text()
    log = json.loads((ROOT / "benchmarks" / "logs" / "lean-stages" / "stop-rules.json").read_text())
    assert [r["rule"] for r in log] == ["most=6", "se=1", "se=2", "most=6,se=2"]
    for r in log:
        assert r["out"] == "results/lean" and r["reference"] == "results/paper" and r["ratio"] == 1.43
        row = (f"| `{r['rule']}` | {r['earlier']} | {r['saved_hours']:.2f} | {r['replayed_hours']:.2f} | "
               f"{r['scaled_hours']:.2f} | {len(r['above_3pct'])} (worst {100 * r['worst_penalty']:.1f} %) | "
               f"{len(r['above_reference'])} against {len(r['recorded_above_reference'])} |")
        assert row in page, f"sweep-time.md lacks the row {row}"


def test_lean_stages_rate_rows_are_their_logs() -> None:
    # The peak-rate table of docs/experiments/lean-stages.md: each probe row beside the first recipe's run.
    import json

    page = (ROOT / "docs" / "experiments" / "lean-stages.md").read_text()
    logs = ROOT / "benchmarks" / "logs" / "lean-stages"
    first = {r["cell"]: r for r in json.loads((logs / "grid-decay0.5.json").read_text())["cells"]}
    for name in ("decay1.json", "decay1-sample.json"):
        log = json.loads((logs / name).read_text())
        assert log["stages"]["decay"] == 1.0 and log["stages"]["retry_blown"] and log["cells"]
        for r in log["cells"]:
            o = first.get(r["cell"])
            row = (f"| {r['cell']} | {r['reference']:.4g} | {o['loss']:.4g} | " if o else f"| {r['cell']} | "
                   f"{r['reference']:.4g} | – | ") + (
                f"{r['loss']:.4g} | {r['diff']:+.2g} ± {r['diff_se']:.2g} | {r['relative']:+.1%} | "
                f"{'as good' if r['as_good'] else 'worse'} | {r['steps']} ({r['stages']}) | {r['seconds']:.0f} | "
                + (f"{o['seconds']:.0f} |" if o else "– |"))
            assert row in page, f"lean-stages.md lacks the row {row}"


def test_lean_stages_h200_preview_rows_are_its_log() -> None:
    # The deeper lean cells trained on an H200, compared by their stored losses: the count and the worse cells.
    import json

    page = (ROOT / "docs" / "experiments" / "lean-stages.md").read_text()
    log = json.loads((ROOT / "benchmarks" / "logs" / "lean-stages" / "h200-preview.json").read_text())
    rows = log["cells"]
    assert log["evaluation"] == "stored" and {r["device"] for r in rows} == {"NVIDIA H200"}
    assert f"**On the H200, {sum(r['as_good'] for r in rows)} of {len(rows)} cells are as good" in page
    worse = [grid_row(r) for r in rows if not r["as_good"]]
    assert all(row in page for row in worse), "lean-stages.md lacks a worse H200 cell's row"


def test_lean_stages_deep_categorical_probe_rows_are_their_logs() -> None:
    # The probes of deep DIAG at categorical:1,3 in docs/experiments/lean-stages.md, row by row, with their recipes.
    import json

    page = (ROOT / "docs" / "experiments" / "lean-stages.md").read_text()
    logs = ROOT / "benchmarks" / "logs" / "lean-stages"
    for name, seeds, batch in (("seeds2-deep-A", 2, 1024), ("seeds2-deep-B", 2, 1024), ("deep-b2048", 1, 2048)):
        log = json.loads((logs / f"{name}.json").read_text())
        assert (log["stages"]["seeds"], log["stages"]["batch"], log["stages"]["decay"]) == (seeds, batch, 1.0)
        for r in log["cells"]:
            assert grid_row(r) in page, f"lean-stages.md lacks the row {grid_row(r)}"


def test_lean_stages_peak_rate_grid_rows_are_its_log() -> None:
    # The lean budget's grid at the peak rate in docs/experiments/lean-stages.md: its count and the worse cells.
    import json

    page = (ROOT / "docs" / "experiments" / "lean-stages.md").read_text()
    log = json.loads((ROOT / "benchmarks" / "logs" / "lean-stages" / "grid-peak.json").read_text())
    assert log["stages"]["decay"] == 1.0 and log["stages"]["retry_blown"] and "floor" not in log["stages"]
    rows = log["cells"]
    assert f"**At the peak rate, {sum(r['as_good'] for r in rows)} of {len(rows)} cells are as good" in page
    for r in (r for r in rows if not r["as_good"]):
        assert grid_row(r) in page, f"lean-stages.md lacks the row {grid_row(r)}"


@pytest.mark.parametrize("log_name, claim", [("grid-floor.json", "**With the floor, "),
                                              ("grid.json", "**With FULL's start kept, ")])
def test_lean_stages_floor_grid_rows_are_its_log(log_name: str, claim: str) -> None:
    # The lean budget's grid with the floor, and then with FULL's DIAG start kept too (the budget as it is, against
    # the paper budget as it is), in docs/experiments/lean-stages.md.
    import json

    page = (ROOT / "docs" / "experiments" / "lean-stages.md").read_text()
    log = json.loads((ROOT / "benchmarks" / "logs" / "lean-stages" / log_name).read_text())
    from numerics.reproduce.budgets import BUDGETS, stages_signature

    assert log["stages"]["floor"] and log["stages"] == stages_signature(BUDGETS["lean"].stages)
    rows = log["cells"]
    assert f"{claim}{sum(r['as_good'] for r in rows)} of {len(rows)} cells are as good" in page
    for r in (r for r in rows if not r["as_good"]):
        assert grid_row(r) in page, f"lean-stages.md lacks the row {grid_row(r)}"


def test_another_machine_rows_are_its_logs() -> None:
    # docs/experiments/another-machine.md: the lean cells of two settings trained again from nothing, against the
    # committed lean cells (the count, and the rows of the cells whose loss moved by more than 1 % or whose stages
    # changed) and against the paper budget's (the count).
    import json

    page = (ROOT / "docs" / "experiments" / "another-machine.md").read_text()
    logs = ROOT / "benchmarks" / "logs" / "lean-stages"
    from numerics.reproduce.budgets import BUDGETS, stages_signature

    log = json.loads((logs / "another-machine.json").read_text())
    assert log["reference_budget"] == "lean" and log["stages"] == stages_signature(BUDGETS["lean"].stages)
    rows = log["cells"]
    assert len(rows) == 42 and {r["cell"].rsplit("-", 1)[1] for r in rows} == {"uniform6", "uniform7"}
    assert f"**{sum(r['as_good'] for r in rows)} of {len(rows)} cells are as good as the committed" in page
    moved = [r for r in rows if abs(r["relative"]) > 0.01 or r["stages"] != r["reference_stages"]]
    assert page.count("\n| diag-") + page.count("\n| full-") + page.count("\n| gdpp-") == len(moved)
    assert all(grid_row(r) in page for r in moved), [grid_row(r) for r in moved if grid_row(r) not in page]
    assert "Five cells differ by more than 1 %" in page and sum(abs(r["relative"]) > 0.01 for r in rows) == 5
    paper = json.loads((logs / "another-machine-paper.json").read_text())["cells"]
    assert {r["cell"] for r in paper} == {r["cell"] for r in rows}
    assert f"{sum(r['as_good'] for r in paper)} of these 42 new cells are as good" in page


def test_another_machine_times_are_its_log() -> None:
    # docs/experiments/another-machine.md, "The time": the stages of 36 lean cells trained again on another CPU
    # against the committed ones (benchmarks/stage_seconds.py's log), and the lean grid's hours at its median ratio.
    import json

    page = " ".join((ROOT / "docs" / "experiments" / "another-machine.md").read_text().split())
    log = json.loads((ROOT / "benchmarks" / "logs" / "lean-stages" / "another-machine-speed.json").read_text())
    s = log["summary"]
    assert (s["stages"], s["cells"]) == (82, 36)
    assert f"Over the {s['stages']} paired stages, {s['seconds']:.0f} s against {s['reference_seconds']:.0f} s" in page
    assert f"ratio is {s['median_ratio_later']:.2f} over the stages after the first" in page
    assert f"and {s['median_ratio_first']:.2f} over the first stages" in page
    share = 100 * s["train_seconds"] / s["seconds"]
    assert f"take {s['train_seconds']:.0f} s of the {s['seconds']:.0f} s ({share:.0f} %," in page
    six = [r["ratio"] for r in log["rows"] if "-L6-" in r["cell"]]
    faster = sorted(x for x in six if x < 1)
    assert f"Six of the {len(six)} depth-6 pairs are faster here ({faster[0]:.2f} to {faster[-1]:.2f})" in page
    assert len(faster) == 6
    hours = 7.16  # results/lean/report.md
    assert f"{hours} h of machine time" in (ROOT / "results" / "lean" / "report.md").read_text()
    # ... replayed as one --jobs 2 sweep (benchmarks/grid_schedule.py, its log, and the script on the grid now)
    import runpy

    replay = runpy.run_path(str(ROOT / "benchmarks" / "grid_schedule.py"))["replay"]
    sched = json.loads((ROOT / "benchmarks" / "logs" / "lean-stages" / "grid-schedule.json").read_text())
    again = json.loads(json.dumps(replay("lean", ROOT / "results" / "lean", 2, sched["ratio"])))
    assert {k: v for k, v in sched.items() if k != "out"} == {k: v for k, v in again.items() if k != "out"}
    assert sched["ratio"] == round(s["median_ratio_later"], 2) and sched["recorded_hours"] == pytest.approx(hours, 1e-3)
    alone, both = sched["recorded_by_processes"]["1"], sched["recorded_by_processes"]["2"]
    assert alone + both == pytest.approx(sched["recorded_hours"])
    assert f"for {alone:.2f} h of those {hours} h one process ran alone" in page
    assert f"as one `--jobs 2` sweep, it takes {sched['replayed_hours']:.2f} h of the committed machine" in page
    assert f"at the median ratio ({sched['ratio']:.2f}) about {sched['scaled_hours']:.1f} h on this CPU" in page
    summary = " ".join((ROOT / "docs" / "reproduce.md").read_text().split())
    assert f"{alone:.2f} h of it ran one process" in summary
    assert f"the grid takes {sched['replayed_hours']:.2f} h of that machine" in summary
    # the grid from nothing on the same CPU: its stages' summed seconds against the committed ones set the ratio
    grid = json.loads((ROOT / "benchmarks" / "logs" / "lean-stages" / "another-machine-grid-speed.json").read_text())
    g = grid["summary"]
    ratio = round(g["seconds"] / g["reference_seconds"], 2)
    assert f"Over {g['stages']} paired stages of {g['cells']} cells, this CPU takes {ratio} times as long" in page
    assert f"median ratio is {g['median_ratio_first']:.2f} over first stages and {g['median_ratio_later']:.2f}" in page
    assert f"{ratio} times as long over the summed seconds of {g['stages']} stages of {g['cells']}" in summary
    sched = json.loads((ROOT / "benchmarks" / "logs" / "lean-stages" / "grid-schedule-grid-speed.json").read_text())
    assert {k: v for k, v in sched.items() if k not in ("out", "ratio", "scaled_hours")} == \
        {k: v for k, v in again.items() if k not in ("out", "ratio", "scaled_hours")}
    assert sched["ratio"] == ratio and sched["scaled_hours"] == pytest.approx(ratio * sched["replayed_hours"])
    assert f"lean grid at about {sched['scaled_hours']:.1f} h there" in summary
    assert f"one `--jobs 2` sweep of the lean grid takes about {sched['scaled_hours']:.1f} h here" in page
    readme = " ".join((ROOT / "README.md").read_text().split())
    # DIAG-7 at sigma = 0: the 25 min of its run that its record omits (lean-stages.md), played through with it
    stages = " ".join((ROOT / "docs" / "experiments" / "lean-stages.md").read_text().split())
    assert "the 25 min its DIAG-7 at σ = 0 omits" in stages
    omitted = {"diag-L7-uniform0": 1500.0}
    assert "--add diag-L7-uniform0=1500" in page and "--add diag-L7-uniform0=1500" in summary
    with_it = replay("lean", ROOT / "results" / "lean", 2, sched["ratio"], added=omitted)
    whole, slow = with_it["replayed_hours"], with_it["scaled_hours"]
    assert whole > sched["replayed_hours"]
    assert f"take {sched['replayed_hours']:.2f} h there, {whole:.1f} h with a part its records omit, and about " \
        f"{slow:.1f} h on a 2-core CPU {sched['ratio']} times slower" in readme
    assert f"{whole:.1f} h and {slow:.1f} h, above the 8 h" in page and f"{slow:.1f} h with the omitted part" in summary


@pytest.mark.parametrize("grid", ["results/lean", "results/paper"])
def test_full_from_diag_start_tables_are_the_scripts(grid: str, capsys) -> None:
    # The tables of "FULL above its start" in docs/experiments/full-from-diag.md are benchmarks/full_start.py's on the
    # committed grids, row for row.
    import runpy

    page = (ROOT / "docs" / "experiments" / "full-from-diag.md").read_text()
    main = runpy.run_path(str(ROOT / "benchmarks" / "full_start.py"))["main"]
    assert main(["--out", str(ROOT / grid)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| full-")]
    assert rows and all(row in page for row in rows), [row for row in rows if row not in page]


def seed_row(r: dict, lean: dict, again: dict) -> str:
    """A cell of docs/experiments/paper-seeds.md: the paper budget's second draw against its first (``r``), and the lean
    cell against the first (``lean``, the lean grid's comparison) and the second (``again``)."""
    def verdict(x: dict) -> str:
        return "as good" if x["as_good"] else "worse"

    return (f"| {r['cell']} | {r['reference']:.4g} | {r['loss']:.4g} | {r['diff']:+.2g} ± {r['diff_se']:.2g} | "
            f"{r['relative']:+.1%} | {verdict(r)} | {again['loss']:.4g} | {lean['relative']:+.1%} ({verdict(lean)}) | "
            f"{again['relative']:+.1%} ({verdict(again)}) |")


def test_paper_seeds_rows_are_their_logs() -> None:
    # docs/experiments/paper-seeds.md: a random sample of Table 1's cells (benchmarks/seed_sample.py) trained again by
    # the paper budget with master seed 1, against its committed cells (master seed 0), and the lean cells against both.
    import json
    import runpy

    import numpy as np

    page = (ROOT / "docs" / "experiments" / "paper-seeds.md").read_text().split("**Depths 6 and 7.**")[0]
    logs = ROOT / "benchmarks" / "logs" / "cell-seeds"
    sample = runpy.run_path(str(ROOT / "benchmarks" / "seed_sample.py"))["sample"]([3, 4, 5], 12, 2026)
    assert "python benchmarks/seed_sample.py --depths 3 4 5 --count 12 --seed 2026" in page
    assert ", ".join(f"`{c}`" for c in sample) in " ".join(page.split())
    again = json.loads((logs / "paper-seed1-sample.json").read_text())
    assert (again["budget"], again["reference_budget"], again["reference"]) == ("paper", "paper", "results/paper")
    rows = again["cells"]
    assert rows and {r["cell"] for r in rows} <= set(sample)
    grid = json.loads((ROOT / "benchmarks" / "logs" / "lean-stages" / "grid.json").read_text())
    lean = {r["cell"]: r for r in grid["cells"]}
    vs = json.loads((logs / "lean-vs-paper-seed1.json").read_text())
    assert (vs["budget"], vs["reference_budget"]) == ("lean", "paper")
    vs = {r["cell"]: r for r in vs["cells"]}
    assert set(vs) == {r["cell"] for r in rows}
    for r in rows:
        same = abs(vs[r["cell"]]["loss"] - lean[r["cell"]]["loss"]) <= 1e-12 * abs(lean[r["cell"]]["loss"])
        assert same  # the same lean model on the same sequences
        assert vs[r["cell"]]["reference"] == r["loss"]  # the second draw, on the same sequences
    assert page.count("\n| diag-") + page.count("\n| full-") + page.count("\n| gdpp-") == len(rows)
    table = [seed_row(r, lean[r["cell"]], vs[r["cell"]]) for r in rows]
    assert all(row in page for row in table), [row for row in table if row not in page]
    text = " ".join(page.split())
    assert f"**{sum(r['as_good'] for r in rows)} of the {len(rows)} second draws are as good as the first**" in text
    good = sum(r["as_good"] for r in vs.values())
    assert f"**{good} of the {len(vs)} lean cells are as good as the second draw**" in text
    assert "the same nine as against the first" in text and good == 9
    assert {c for c in vs if vs[c]["as_good"]} == {c for c in vs if lean[c]["as_good"]}
    noisy = [r for r in rows if r["cell"].endswith("-uniform0")]
    quiet = [r for r in rows if r not in noisy]
    most = max(quiet, key=lambda r: abs(r["relative"]))
    def pct(x: float, sign: str = "") -> str:  # the page writes "0.9 %"
        return f"{x:{sign}.1%}".replace("%", " %")

    moved = pct(abs(most["relative"]))
    assert f"The {len(quiet)} cells at σ_max > 0 move by at most {moved}" in text
    summary = " ".join((ROOT / "docs" / "reproduce.md").read_text().split())  # its section "The committed grids"
    assert f"move by at most {moved} where σ_max > 0" in summary
    full3 = pct(vs["full-L3-uniform4"]["relative"])
    assert f"FULL-3 at `uniform:4` by {full3}" in summary and f"is {full3} above the second draw" in text
    assert not vs["full-L3-uniform4"]["as_good"] and not lean["full-L3-uniform4"]["as_good"]
    assert f"and at most {max(abs(r['diff']) / r['diff_se'] for r in quiet):.1f} paired SE" in text
    median = lambda xs: float(np.median(xs))  # noqa: E731
    assert f"with a median of {pct(abs(median([r['relative'] for r in quiet])))}" in text
    first, second = median([lean[c]["relative"] for c in vs]), median([vs[c]["relative"] for c in vs])
    assert f"{pct(first, '+')} against the first draw and {pct(second, '+')} against the second" in text


def test_paper_seeds_deep_rows_are_their_logs() -> None:
    # docs/experiments/paper-seeds.md, "Depths 6 and 7": the second sample, its table and the sentences on it.
    import json
    import runpy

    whole = (ROOT / "docs" / "experiments" / "paper-seeds.md").read_text()
    page = whole.split("**Depths 6 and 7.**")[1].split("**Conclusion.**")[0]
    text, end = " ".join(page.split()), " ".join(whole.split("**Conclusion.**")[1].split())
    logs = ROOT / "benchmarks" / "logs" / "cell-seeds"
    sample = runpy.run_path(str(ROOT / "benchmarks" / "seed_sample.py"))["sample"]([6, 7], 8, 2026)
    assert "python benchmarks/seed_sample.py --depths 6 7 --count 8 --seed 2026" in page
    grid = json.loads((ROOT / "benchmarks" / "logs" / "lean-stages" / "grid.json").read_text())["cells"]
    deep = sum(not r["as_good"] and int(r["cell"].split("-L")[1].split("-")[0]) >= 6 for r in grid)
    assert f"{deep} of the lean grid's {sum(not r['as_good'] for r in grid)} worse cells lie at depth 6" in text
    assert ", ".join(f"`{c}`" for c in sample) in text
    again = json.loads((logs / "paper-seed1-deep.json").read_text())
    assert (again["budget"], again["reference_budget"], again["reference"]) == ("paper", "paper", "results/paper")
    rows = again["cells"]
    missing = [c for c in sample if c not in {r["cell"] for r in rows}]
    assert [r["cell"] for r in rows] == [c for c in sample if c not in missing]  # the sampler's order
    assert f"The table holds {['no', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight'][len(rows)]}" \
        in text and missing == ["diag-L6-uniform0"] and "DIAG-6 at σ = 0" in text
    lean = {r["cell"]: r for r in json.loads((ROOT / "benchmarks" / "logs" / "lean-stages" / "grid.json").read_text())
            ["cells"]}
    vs = json.loads((logs / "lean-vs-paper-seed1-deep.json").read_text())
    assert (vs["budget"], vs["reference_budget"]) == ("lean", "paper")
    vs = {r["cell"]: r for r in vs["cells"]}
    assert set(vs) == {r["cell"] for r in rows}
    for r in rows:
        assert abs(vs[r["cell"]]["loss"] - lean[r["cell"]]["loss"]) <= 1e-12 * abs(lean[r["cell"]]["loss"])
        assert vs[r["cell"]]["reference"] == r["loss"]
    table = [seed_row(r, lean[r["cell"]], vs[r["cell"]]) for r in rows]
    assert [line for line in page.splitlines() if line.startswith("| ") and "-L" in line] == table

    def pct(x: float) -> str:
        return f"{abs(x):.1%}".replace("%", " %")

    good = sum(r["as_good"] for r in rows)
    assert f"**{good} of the {len(rows)} second draws are as good as the first" in text
    big = [r for r in rows if abs(r["relative"]) > 0.03]
    small = [r for r in rows if r not in big]
    assert [r["cell"] for r in big] == ["diag-L6-uniform7", "full-L7-uniform1"]
    assert f"{['No', 'One', 'Two', 'Three', 'Four', 'Five', 'Six', 'Seven'][len(small)]} cells move by at most " \
        f"{pct(max(abs(r['relative']) for r in small))}" in text
    up, down = big
    assert f"is {pct(up['relative'])} above the first draw ({abs(up['diff']) / up['diff_se']:.1f} paired SE)" in text
    assert f"is {pct(down['relative'])} below it ({abs(down['diff']) / down['diff_se']:.1f} paired SE)" in text
    assert up["relative"] > 0 > down["relative"]
    both = sum(vs[c]["as_good"] for c in vs), sum(lean[c]["as_good"] for c in vs)
    assert f"{both[0]} of the {len(vs)} lean cells are as good as the second draw, as {both[1]} are as good as" in text
    flips = {c for c in vs if vs[c]["as_good"] != lean[c]["as_good"]}
    assert flips == {"diag-L6-uniform7", "full-L7-uniform1"}
    for c, first in (("diag-L6-uniform7", "8.7 % above the first draw"), ("full-L7-uniform1", "0.5 % above the first")):
        assert first.startswith(pct(lean[c]["relative"])) and f"{first}" in text
        assert f"is {pct(vs[c]['relative'])} above the" in text
    worse = [c for c in vs if not vs[c]["as_good"] and not lean[c]["as_good"]]
    assert worse == ["diag-L6-uniform1"]
    c = worse[0]
    assert f"worse against both ({pct(lean[c]['relative'])} and {pct(vs[c]['relative'])})" in text
    assert "DIAG-6 at `uniform:7` and FULL-7 at `uniform:1` each pass against one draw" in end
    assert "while DIAG-6 at `uniform:1` falls short of both" in end


def test_reproduce_page_lists_every_claim_the_report_judges() -> None:
    """docs/reproduce.md, "The report", names each claim in the words the report gives it (a claim added, dropped or
    reworded in the code shows here)."""
    from numerics.reproduce.claims import check_claims
    from numerics.reproduce.floor import claim_gdpp_floor

    page = (ROOT / "docs" / "reproduce.md").read_text()
    section = page[page.index("## The report"):]
    listed = [line[2:] for line in section.split("\n\n")[2].splitlines()]
    assert listed == [c.text for c in check_claims({})] + [claim_gdpp_floor({}, {}).text]


def test_gdpp_fit_cells_rows_are_its_logs() -> None:
    # docs/experiments/gdpp-fit-cells.md: the table per setting, and the seconds it sets against the lean records.
    import json

    page = (ROOT / "docs" / "experiments" / "gdpp-fit-cells.md").read_text()
    settings = {}
    for name in ("a.json", "b.json"):
        settings |= json.loads((ROOT / "benchmarks" / "logs" / "gdpp-fit-cells" / name).read_text())["settings"]
    assert len(settings) == 6
    for nz, v in settings.items():
        cs = v["cells"]
        rel = [r["other"]["relative"] for r in cs]
        tail = max((r.get("tail_check") or {}).get("max") or 0 for r in cs)
        good = [sum(r[k]["as_good"] for r in cs) for k in ("reference", "other")]
        row = (f"| `{nz}` | {v['fit_seconds']:.0f} | {good[0]} of {len(cs)} | {good[1]} of {len(cs)} | "
               f"{min(rel):+.1%} to {max(rel):+.1%} | {tail:.3g} |")
        assert row in page, row
    high = ("uniform:4", "uniform:5", "uniform:6", "categorical:1,3")
    assert all(r["reference"]["as_good"] and r["other"]["as_good"] for nz in high for r in settings[nz]["cells"])
    models = ROOT / "results" / "lean" / "models"
    trained = sum(json.loads(p.read_text())["train"]["seconds"] for nz in high
                  for p in models.glob(f"gdpp-L*-{nz.replace(':', '').replace(',', '_')}/metrics.json"))
    assert f"train for {trained:.0f} s in" in page
    assert f"The fits take {sum(settings[nz]['fit_seconds'] for nz in high):.0f} s" in " ".join(page.split())


def lean_batch_rows() -> tuple[list[dict], dict]:
    """The batch-512 probe's rows (benchmarks/logs/lean-stages/s1500-b512-*.json) and the lean grid's rows by cell."""
    import json

    logs = ROOT / "benchmarks" / "logs" / "lean-stages"
    rows = [r for p in sorted(logs.glob("s1500-b512-?.json")) for r in json.loads(p.read_text())["cells"]]
    return rows, {r["cell"]: r for r in json.loads((logs / "grid.json").read_text())["cells"]}


def test_lean_batch_rows_are_its_logs() -> None:
    # docs/experiments/lean-batch.md: every probe cell beside the lean grid's, and the sums it draws from them.
    import json

    page = (ROOT / "docs" / "experiments" / "lean-batch.md").read_text()
    rows, grid = lean_batch_rows()
    assert rows and all(json.loads(p.read_text())["stages"]["batch"] == 512
                        for p in (ROOT / "benchmarks" / "logs" / "lean-stages").glob("s1500-b512-*.json"))
    first = {r["cell"]: r for r in rows}
    least = [(json.loads(p.read_text()), r) for p in sorted((ROOT / "benchmarks" / "logs" / "lean-stages").glob(
        "s1500-b512-least4-*.json")) for r in json.loads(p.read_text())["cells"]]
    for log, r in least:  # the second table: the same cells held to four stages at least
        assert log["least"] == 4 and log["stages"] == json.loads((ROOT / "benchmarks" / "logs" / "lean-stages" /
                                                                   "s1500-b512-a.json").read_text())["stages"]
        f = first[r["cell"]]
        row = (f"| {r['cell']} | {r['reference']:.4g} | {f['loss']:.4g} ({f['relative']:+.1%}) | {r['loss']:.4g} | "
               f"{r['relative']:+.1%} | {'as good' if r['as_good'] else 'worse'} | {f['steps']} ({f['stages']}) | "
               f"{r['steps']} ({r['stages']}) | {f['seconds']:.0f} | {r['seconds']:.0f} |")
        assert row in page, row
    times = [r["seconds"] / first[r["cell"]]["seconds"] for _, r in least]
    assert not least or f"from {min(times):.1f} to {max(times):.1f} times its first run" in " ".join(page.split())
    assert page.count("\n| diag-") + page.count("\n| full-") + page.count("\n| gdpp-") == len(rows) + len(least)
    for r in rows:
        g = grid[r["cell"]]
        assert g["reference"] == pytest.approx(r["reference"], rel=1e-12)  # the same paper cell, the same sequences
        row = (f"| {r['cell']} | {r['reference']:.4g} | {g['loss']:.4g} ({g['relative']:+.1%}) | {r['loss']:.4g} | "
               f"{r['relative']:+.1%} | {'as good' if r['as_good'] else 'worse'} | {g['steps']} ({g['stages']}) | "
               f"{r['steps']} ({r['stages']}) | {g['seconds']:.0f} | {r['seconds']:.0f} |")
        assert row in page, row
    text = " ".join(page.split())
    same = sum(r["as_good"] == grid[r["cell"]]["as_good"] for r in rows)
    assert f"**{sum(r['as_good'] for r in rows)} of the {len(rows)} cells are as good as the paper cell" in text
    assert f"{same} of the {len(rows)} get the verdict of the lean grid's cell" in text
    from numerics.reproduce.budgets import PARTS, cells_for, get_budget

    fig5 = {c.name for c in cells_for(get_budget("lean"), PARTS) if c.keep_seeds}  # the lean cell's time has replicas
    timed = [r for r in rows if r["cell"] not in fig5]
    s512, s1024 = sum(r["seconds"] for r in timed), sum(grid[r["cell"]]["seconds"] for r in timed)
    assert f"{len(timed)} cells take {s512:.0f} s at batch 512 on the slower CPU and {s1024:.0f} s at batch 1024" \
        in text
    steps = [sum(x["steps"] for x in timed), sum(grid[x["cell"]]["steps"] for x in timed)]
    more = sum(x["steps"] > grid[x["cell"]]["steps"] for x in timed)
    words = ["no", "one", "two", "three", "four", "five"]
    spaced = [f"{n:,}".replace(",", " ") for n in steps]  # the page writes 189 000
    assert f"train {spaced[0]} steps at batch 512 and {spaced[1]} at batch 1024, and {words[more]} of them" in text
    bench = {b: json.loads((ROOT / "benchmarks" / "logs" / "lean-stages" / f"bench-b{b}.json").read_text())
             for b in (1024, 512)}
    rate = {b: next(r["steps_per_s"] for r in bench[b]["throughput"] if r["forward"] == "fast") for b in bench}
    assert all(bench[b]["throughput"][0]["batch"] == b and bench[b]["LINTF_HOST_DEVICES"] == "1" for b in bench)
    assert f"{rate[1024]:.1f} steps per second at batch 1024 and {rate[512]:.1f} at batch 512" in text
    assert f"costs {rate[1024] / rate[512]:.2f} of a step at batch 1024" in text
    lose = sum(grid[r["cell"]]["as_good"] and not r["as_good"] for r in rows)
    gain = sum(r["as_good"] and not grid[r["cell"]]["as_good"] for r in rows)
    assert f"{words[lose]} of the {len(rows)} cells lose their verdict while {words[gain]} gain one" in text
    sched = json.loads((ROOT / "benchmarks" / "logs" / "lean-stages" / "grid-schedule-grid-speed.json").read_text())
    import runpy

    replay = runpy.run_path(str(ROOT / "benchmarks" / "grid_schedule.py"))["replay"]  # with the part DIAG-7 omits,
    slow = replay("lean", ROOT / "results" / "lean", 2, sched["ratio"], added={"diag-L7-uniform0": 1500.0})[
        "scaled_hours"]  # as the README states it
    fast = slow * s512 / (s1024 * sched["ratio"])
    assert f"the lean grid's {slow:.1f} h on the slower CPU would come to about {fast:.1f} h" in text


def test_the_brisk_paragraph_is_its_logs_and_its_cells() -> None:
    # docs/reproduce.md's brisk paragraph and budgets row: the cells committed under results/brisk, the compare log's
    # verdicts on exactly those cells, and the replay's hours of exactly those cells.
    import json

    import numpy as np

    from numerics.reproduce.budgets import BUDGETS, stages_signature
    from numerics.reproduce.timing import runs

    logs, page = ROOT / "benchmarks" / "logs" / "lean-stages", (ROOT / "docs" / "reproduce.md").read_text()
    text = " ".join(page.split())
    cells = {p.parent.name: json.loads(p.read_text()) for p in (ROOT / "results" / "brisk" / "models").glob(
        "*/metrics.json")}
    vs, sched = json.loads((logs / "brisk-grid.json").read_text()), json.loads((logs / "brisk-schedule.json").read_text())
    assert {r["cell"] for r in vs["cells"]} == set(cells) and sched["cells"] == len(cells)
    assert (vs["budget"], vs["reference"], vs["stages"]) == ("brisk", "results/paper",
                                                              stages_signature(BUDGETS["brisk"].stages))
    assert not any(m["failed"] for m in cells.values()) and not any(r["failed"] for r in vs["cells"])
    def hours(records: Iterable[dict]) -> float:  # every run behind the cells, a process stopped part-way through one included
        return sum(r["seconds"] for r in runs(records)) / 3600

    assert sched["cell_hours"] == pytest.approx(hours(cells.values()), rel=1e-9)
    ref, lean_models = sched["reference"], ROOT / "results" / "lean" / "models"
    assert ref["out"] == "results/lean" and ref["cell_hours"] == pytest.approx(
        hours(json.loads((lean_models / c / "metrics.json").read_text()) for c in cells), rel=1e-9)
    good = sum(r["as_good"] for r in vs["cells"])
    assert len(cells) == 230 and "`results/brisk/` holds all 230 cells" in text
    assert f"None failed its evaluation or tail check, and {good} of them are as good" in text
    lean = {r["cell"]: r["as_good"] for r in json.loads((logs / "grid.json").read_text())["cells"]}
    assert f"where the lean grid has {sum(lean[c] for c in cells)} of the same cells as good" in text
    worse = [r["cell"] for r in vs["cells"] if lean[r["cell"]] and not r["as_good"]]
    better = [r["cell"] for r in vs["cells"] if r["as_good"] and not lean[r["cell"]]]
    assert (len(worse), len(better)) == (13, 10) and "Thirteen of the cells the lean grid has as good end" in text
    assert "and ten that it has worse are as good here" in text
    rel = sorted(r["relative"] for r in vs["cells"] if r["cell"] in worse)
    assert f"end {100 * rel[0]:.1f} % to {100 * rel[-1]:.1f} % above the paper cell" in text
    report = (ROOT / "results" / "brisk" / "report.md").read_text()
    machine = float(re.search(r"([0-9.]+) h of machine time", report).group(1))
    assert f"`results/brisk/report.md` states {machine:.2f} h of machine time there" in text
    assert f"The 230 cells take {sched['cell_hours']:.2f} h of cell time on the slower CPU, and " \
           f"{sched['replayed_hours']:.2f} h replayed as one `--jobs 2` sweep, within the 8 h" in text
    assert sched["replayed_hours"] < 8 and machine < 8
    assert "the two processes take {:.2f} h and {:.2f} h".format(*sched["process_hours"]) in text
    assert f"took {ref['cell_hours']:.2f} h of cell time and {ref['replayed_hours']:.2f} h as one sweep" in text
    assert f"about {1.63 * ref['cell_hours']:.1f} h and {1.63 * ref['replayed_hours']:.1f} h at 1.63 times" in text
    assert f"about {sched['replayed_hours']:.1f} h of machine time with `--jobs 2` on a CPU 1.63 times slower than " \
           f"the lean grid's, {sched['cell_hours']:.2f} h of cell time where the lean grid's cells take about " \
           f"{1.63 * ref['cell_hours']:.1f} h there; {good} of 230 cells as good" in text
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"replayed as one `--jobs 2` sweep they take {sched['replayed_hours']:.2f} h there" in readme
    assert f"{good} of them are as good as the paper budget's" in readme
    checks = json.loads((ROOT / "results" / "brisk" / "convergence.json").read_text())
    converged = checks["cells"]
    assert len(converged) == 12 and not checks["pending"]
    assert all(e["holds"] for e in converged.values()) and "The convergence check holds for all 12 of its cells" in text
    assert [k for k, e in converged.items() if "seeds" in e] == ["diag-L7-uniform2"]
    took = cells["diag-L7-uniform2"]["adopted"]["check"]  # the longer run it took, checked again at 4x
    again = converged["diag-L7-uniform2"]
    assert not took["holds"] and again["relative"] > 0 and again["steps"] == 2 * took["steps"]
    assert f"four times the budget's, the run it took ends {100 * again['relative']:.1f} % higher" in text
    sd = again["seeds"]  # over three master seeds, at twice and four times the budget's stages
    assert sd["holds"] and sd["attempts"] == [1, 2, 3] and sd["losses"][0] == again["loss"]
    assert f"their means are {sd['loss']:.5f} and {sd['loss_longer']:.5f} ({100 * sd['relative']:+.1f} % ± " \
           f"{100 * sd['change_se'] / sd['loss']:.1f} %)" in text
    seeds = ROOT / "benchmarks" / "logs" / "cell-seeds"
    first = [took["loss"]] + [json.loads((seeds / f"brisk-diag-L7-uniform2-seed{k}.json").read_text())["eval"]["loss"]
                              for k in (1, 2)]  # the budget's stages: the replaced run and two more master seeds
    assert "same three seeds end at {:.4f}, {:.4f} and {:.4f}".format(*first) in text
    assert f"their mean moves by {100 * (sd['loss'] / np.mean(first) - 1):.1f} % at twice".replace("-", "−") in text
    spread = [(max(r) - min(r)) / np.mean(r) for r in (first, sd["losses"], sd["losses_longer"])]
    assert f"spread by {100 * min(spread):.1f} % to {100 * max(spread):.1f} % at each length" in text
    assert f"Its convergence check holds for all 12 cells, one of them (DIAG-7 at `uniform:2`, whose runs land up to " \
           f"{100 * max(spread):.0f} % apart) over three master seeds" in readme
    assert f"DIAG-7 at `uniform:2` ended {-100 * took['relative']:.1f} % " \
           f"({-took['change'] / took['change_se']:.0f} paired SE) lower" in text
    rescue = cells["diag-L4-uniform0"]["rescue"]
    assert rescue["before"]["max"] > 500 and f"the rescue scaled its update by {rescue['scale']:.2f}" in text
    for name in ("full-L4-uniform0", "full-L7-uniform2"):  # trained again from their new start
        start = Path(cells[name]["train"]["start"]).parent.name
        assert cells[name]["train"]["start_check"]["sha256"] == hashlib.sha256(
            (ROOT / "results" / "brisk" / "models" / start / "model.npz").read_bytes()).hexdigest()
    keep = cells["full-L7-categorical1_3"]["train"]
    ends = [s["held_out"] / keep["start_check"]["held_out"] - 1 for s in keep["stages"]]
    assert keep["start_check"]["kept"] and "by {:.0f} % and {:.0f} %".format(*(100 * e for e in ends)) in text
    kept = {g: sum(bool(json.loads(p.read_text())["train"].get("start_check", {}).get("kept")) for p in (
        ROOT / "results" / g / "models").glob("full-*/metrics.json")) for g in ("brisk", "lean", "paper")}
    assert "Of the 80 FULL cells, {brisk} keep their DIAG start here, against {lean} in the lean grid and {paper} in " \
           "the paper one".format(**kept) in text


def test_full_own_start_tables_are_its_logs() -> None:
    # The recipe and probe tables of docs/experiments/full-own-start.md are benchmarks/full_own_start.py's rows of its
    # committed logs, row for row.
    import json
    import runpy

    page = (ROOT / "docs" / "experiments" / "full-own-start.md").read_text()
    script = runpy.run_path(str(ROOT / "benchmarks" / "full_own_start.py"))
    logs = ROOT / "benchmarks" / "logs" / "full-own-start"
    runs, probe = (json.loads((logs / f"{n}.json").read_text()) for n in ("runs", "probe"))
    rows = [script["recipe_row"](r) for r in runs] + [script["probe_row"](v, probe[v]) for v in script["PROBE_ROWS"]]
    assert [r["name"] for r in runs] == list(script["RECIPES"]), "a recipe without its run in runs.json"
    assert all(row in page for row in rows), [row for row in rows if row not in page]
