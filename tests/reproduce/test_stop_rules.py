"""``benchmarks/stop_rules.py`` replays a finished grid's stage records under a looser stage rule: where it stops each
cell, the stage it keeps, the seconds it saves, and the sweep that is left; it follows the floor as the sweep does and
keeps the record wherever the records cannot say what the rule would have done."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from numerics.reproduce.budgets import PARTS, cells_for, get_budget

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "stop_rules.py"
_spec = importlib.util.spec_from_file_location("stop_rules", SCRIPT)
stop_rules = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(stop_rules)

TEST = get_budget("test")


def _stage(loss: float, seconds: float, se: float = 0.06, blown: bool = False, restart: bool = False) -> dict:
    return {"held_out": loss, "held_out_se": se, "blown": blown, "seconds": seconds} | ({"restart": True} if restart
                                                                                       else {})


def _record(stages: list[dict], floor: float | None = None, chosen: int | None = None) -> dict:
    best = min(range(len(stages)), key=lambda i: stages[i]["held_out"]) + 1
    train = {"stages": stages, "chosen_stage": best if chosen is None else chosen}
    return {"seconds": 5.0 + sum(s["seconds"] for s in stages), "train": train} | (
        {} if floor is None else {"train": train | {"floor": {"held_out": floor}}})


# the record went on to a 4th stage: 1.0 -> 0.8 -> 0.7 -> 0.69, each loss's own SE 0.06
FOUR = [_stage(1.0, 10), _stage(0.8, 10), _stage(0.7, 20), _stage(0.69, 40)]


def test_the_rule_stops_where_a_stage_moved_less_than_its_own_se_and_counts_what_the_rest_cost() -> None:
    se2, se1 = stop_rules.parse_rule("se=2"), stop_rules.parse_rule("se=1")
    r = stop_rules.replay_cell(_record(FOUR), se2, None, retry_blown=False)
    # stage 2 moved 0.2 > max(3 % of 1.0, 2 x 0.06); stage 3 moved 0.1 <= 2 x 0.06: stop there, keep stage 3
    assert r == {"stop": 3, "kept": 0.7, "saved": 40.0, "penalty": pytest.approx(0.7 / 0.69 - 1), "followed": False}
    # at one SE (0.06) stage 3's 0.1 is too much: the rule goes on as the record did
    assert stop_rules.replay_cell(_record(FOUR), se1, None, False) == {"stop": 4, "kept": 0.69, "saved": 0.0,
                                                                       "penalty": 0.0, "followed": False}
    capped = stop_rules.replay_cell(_record(FOUR), stop_rules.parse_rule("most=2"), None, False)
    assert capped == {"stop": 2, "kept": 0.8, "saved": 60.0, "penalty": pytest.approx(0.8 / 0.69 - 1),
                      "followed": False}
    both = stop_rules.replay_cell(_record(FOUR), stop_rules.parse_rule("most=3,se=1"), None, False)
    assert (both["stop"], both["saved"]) == (3, 40.0)


def test_a_blown_stage_counts_three_percent_alone_and_is_retried_where_the_budget_retries() -> None:
    blown = [_stage(1.0, 10), _stage(0.9, 10, blown=True), _stage(0.85, 20), _stage(0.84, 40)]
    se2 = stop_rules.parse_rule("se=2")
    # retried: stage 2 does not end the cell; stage 3 (0.85 from stage 1's 1.0) moved more than 2 SE; the record stands
    assert stop_rules.replay_cell(_record(blown), se2, None, retry_blown=True)["stop"] == 4
    # not retried: next to a blown stage only 3 % counts, and stage 2 moved 10 %: no stop there either
    assert stop_rules.replay_cell(_record(blown), se2, None, retry_blown=False)["stop"] == 4
    small = [_stage(1.0, 10), _stage(0.98, 10, blown=True), _stage(0.9, 20)]
    r = stop_rules.replay_cell(_record(small), se2, None, retry_blown=False)
    assert (r["stop"], r["kept"], r["saved"]) == (2, 1.0, 20.0)  # 2 % moved: stop, keep the stage that is not blown
    assert stop_rules.replay_cell(_record(small), se2, None, retry_blown=True)["stop"] == 3  # retried: goes on
    # every stage blown: the cell ends after two (it rose), and the next stage would start from the last of them
    late = [_stage(1.0, 10, blown=True), _stage(2.0, 10, blown=True), _stage(1.98, 20)]
    assert stop_rules.replay_cell(_record(late), se2, None, retry_blown=True)["stop"] == 2
    assert stop_rules._start(late[:2]) is late[1] and stop_rules._best(late[:2]) is late[0]


def test_the_floor_goes_on_where_the_record_restarted_and_keeps_the_record_where_it_did_not() -> None:
    se2 = stop_rules.parse_rule("se=2")
    # floor 0.5: stopping at stage 3 (0.7) would leave the cell more than 3 % and 2 SE above it
    assert stop_rules.replay_cell(_record(FOUR, floor=0.5), se2, 0.5, False)["saved"] == 0.0
    # floor 0.55: stuck at stage 3 (0.7), and the record restarted there; stage 4 (0.62) is within 2 SE of both
    restarted = FOUR[:3] + [_stage(0.62, 40, restart=True), _stage(0.6, 80)]
    r = stop_rules.replay_cell(_record(restarted, floor=0.55), se2, 0.55, False)
    assert (r["stop"], r["kept"], r["saved"]) == (4, 0.62, 80.0)  # the record's restart followed, then stopped
    # the record restarted where the rule goes on (at 1.5 SE, 0.09, stage 3's 0.1 still moved): the replay keeps the
    # record, though the rule would stop at stage 4 (0.08) had the record gone on from stage 3
    r = stop_rules.replay_cell(_record(restarted, floor=0.55), stop_rules.parse_rule("se=1.5"), 0.55, False)
    assert (r["stop"], r["saved"], r["followed"]) == (5, 0.0, True)
    # a cap alone keeps the recorded rule: it follows the record's restart and stops at its cap
    r = stop_rules.replay_cell(_record(restarted, floor=0.55), stop_rules.parse_rule("most=4"), 0.55, False)
    assert (r["stop"], r["kept"], r["saved"], r["followed"]) == (4, 0.62, 80.0, True)
    # a floor within the rule's reach (0.68) does not hold the stop back
    assert stop_rules.replay_cell(_record(FOUR, floor=0.68), se2, 0.68, False)["stop"] == 3


def test_a_cell_that_kept_its_start_or_had_one_stage_is_its_record() -> None:
    se2 = stop_rules.parse_rule("se=2")
    assert stop_rules.replay_cell(_record(FOUR, chosen=0), se2, None, False)["saved"] == 0.0
    assert stop_rules.replay_cell(_record([_stage(1.0, 10)]), se2, None, False) == {
        "stop": 1, "kept": 1.0, "saved": 0.0, "penalty": 0.0, "followed": False}
    # FULL's DIAG start (0.6, held out) lies more than 3 % and 2 SE below the stage the rule stops at: kept instead
    full = _record(FOUR)
    full["train"]["start_check"] = {"held_out": 0.5}
    r = stop_rules.replay_cell(full, se2, None, False)
    assert (r["stop"], r["kept"]) == (3, 0.5)


def test_the_grid_replay_sums_what_is_left_and_shares_it_out(tmp_path: Path, capsys) -> None:
    cells = cells_for(TEST, PARTS)
    for c in cells:
        (tmp_path / "models" / c.name).mkdir(parents=True)
        # DIAG-2 at uniform:1 recorded a floor of 0.5 that it could not stop above; the replay stops that floor
        # (DIAG-1) at 0.7, within its reach: it stops too, and its replay is approximate
        m = _record(FOUR, floor=0.5 if c.name == "diag-L2-uniform1" else None)
        (tmp_path / "models" / c.name / "metrics.json").write_text(json.dumps(m))
    log = tmp_path / "log.json"
    assert stop_rules.main(["--budget", "test", "--out", str(tmp_path), "--rule", "se=2", "--rule", "se=1",
                            "--jobs", "1", "--ratio", "2", "--log", str(log)]) == 0
    se2, se1 = json.loads(log.read_text())
    n = len(cells)
    assert (se2["earlier"], se1["earlier"]) == (n, 0)
    assert se2["saved_hours"] == pytest.approx(40.0 * n / 3600)
    assert se2["replayed_hours"] == pytest.approx(45.0 * n / 3600)  # 85 s a cell less the 40 s of stage 4
    assert se2["scaled_hours"] == pytest.approx(90.0 * n / 3600)
    assert se1["replayed_hours"] == pytest.approx(85.0 * n / 3600)
    # that cell, and the six FULL cells whose DIAG start stopped earlier (FULL-4 has no DIAG-4 in this grid)
    assert se2["approximate"] == 7 and se1["approximate"] == 0
    assert se2["above_3pct"] == [] and se2["worst_penalty"] == pytest.approx(0.7 / 0.69 - 1)
    assert f"rule se=2: {n} of {n} cells stop earlier" in capsys.readouterr().out
    # against a reference grid whose cells kept 0.68: stage 3's 0.7 is within 3 % of it, stage 2's 0.8 is not
    ref = tmp_path / "ref"
    for c in cells:
        (ref / "models" / c.name).mkdir(parents=True)
        (ref / "models" / c.name / "metrics.json").write_text(json.dumps(_record([_stage(0.9, 1), _stage(0.68, 1)])))
    vs = stop_rules.replay("test", tmp_path, stop_rules.parse_rule("se=2"), reference=ref)
    assert vs["above_reference"] == [] and vs["recorded_above_reference"] == []
    vs = stop_rules.replay("test", tmp_path, stop_rules.parse_rule("most=2"), reference=ref)
    assert vs["above_reference"] == sorted(c.name for c in cells) and vs["recorded_above_reference"] == []
    (ref / "models" / cells[0].name / "metrics.json").unlink()
    with pytest.raises(SystemExit, match="--reference .* lacks a cell record"):
        stop_rules.replay("test", tmp_path, stop_rules.parse_rule("se=2"), reference=ref)
    (tmp_path / "models" / cells[0].name / "metrics.json").write_text('{"seconds": ')
    with pytest.raises(SystemExit, match="is not a cell record"):
        stop_rules.replay("test", tmp_path, stop_rules.parse_rule("se=2"))
    (tmp_path / "models" / cells[0].name / "metrics.json").unlink()
    with pytest.raises(SystemExit, match=f"lacks cell {cells[0].name} of budget test"):
        stop_rules.replay("test", tmp_path, stop_rules.parse_rule("se=2"))


def test_a_cell_that_restarted_from_a_floor_the_rule_moves_is_approximate(tmp_path: Path) -> None:
    # DIAG-2 at uniform:5 restarted from its floor (DIAG-1, which the rule stops earlier) where the rule would not
    # restart: it keeps its record, but went through another floor model, so it is approximate; FULL-2 there starts
    # from it, unchanged, so FULL-2 is not
    restarted = [_stage(1.0, 10), _stage(0.6, 10), _stage(0.45, 20, restart=True), _stage(0.44, 45)]
    for c in cells_for(TEST, PARTS):
        (tmp_path / "models" / c.name).mkdir(parents=True)
        m = _record(restarted, floor=0.4) if c.name == "diag-L2-uniform5" else _record(FOUR)
        (tmp_path / "models" / c.name / "metrics.json").write_text(json.dumps(m))
    r = stop_rules.replay("test", tmp_path, stop_rules.parse_rule("se=2"))
    assert "diag-L2-uniform5" not in r["per_cell"] and "full-L2-uniform5" in r["per_cell"]
    assert r["approximate"] == 1 + 5  # it, and the FULL cells of depths 1 to 3 whose DIAG start stopped earlier


@pytest.mark.parametrize("text", ["most=1", "se=-1", "se=inf", "most=x", "se=2,se=1", "tail=3", ""])
def test_a_bad_rule_is_one_line(text: str) -> None:
    with pytest.raises(ValueError, match=f"--rule must be .* got {text!r}"):
        stop_rules.parse_rule(text)


def test_a_stage_whose_training_diverged_is_replayed_as_blown_without_a_loss() -> None:
    # brisk's DIAG-11 records: a stage diverged (no model, no held-out loss) between two that did not
    gone = {"held_out": None, "held_out_se": None, "blown": True, "seconds": 30.0, "diverged": "rollbacks"}
    stages = [_stage(1.0, 10), _stage(0.8, 10), gone, _stage(0.75, 40), _stage(0.74, 80)]
    record = {"seconds": 175.0, "train": {"stages": stages, "chosen_stage": 5}}
    r = stop_rules.replay_cell(record, stop_rules.parse_rule("se=2"), None, retry_blown=True)
    # the diverged stage goes on from stage 2; stage 4 moved 0.05 <= 2 x 0.06 from it: stop there, keep 0.75
    assert (r["stop"], r["kept"], r["saved"]) == (4, 0.75, 80.0)
    assert stop_rules._best(stages[:3]) is stages[1] and stop_rules._start(stages[:3]) is stages[1]
