"""The grid: every cell's start is planned, never another cell; the schedule's stages; budgets and their errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from numerics.reproduce.grid import (
    BUDGETS,
    FOCUS,
    PARTS,
    Budget,
    Cell,
    Schedule,
    cells_for,
    get_budget,
    parse_cells,
    parse_noises,
    parse_parts,
    plan_of,
    start_of,
)
from numerics.reproduce.record import read_record
from tests.fakes import TINY

RESULTS = Path(__file__).resolve().parents[2] / "results"


def test_the_budgets_a_user_needs() -> None:
    assert list(BUDGETS) == ["quick", "overnight", "paper"]
    with pytest.raises(
        ValueError, match="--budget must be one of quick, overnight, paper; got 'test'"
    ):
        get_budget("test")


@pytest.mark.parametrize("name", list(BUDGETS))
def test_every_cell_of_every_budget_starts_from_its_own_start(name: str) -> None:
    cells = cells_for(BUDGETS[name], PARTS)
    starts = {c.name: start_of(c) for c in cells}
    assert all(s == "random" for n, s in starts.items() if n.startswith("full-"))  # FULL included
    assert {n for n, s in starts.items() if s == "spectral"} == {
        c.name for c in cells if c.model == "gdpp" and c.noise == "uniform:0"
    }
    assert all(plan_of(c, BUDGETS[name])["start"] == starts[c.name] for c in cells)


def test_a_stage_doubles_the_steps_spent_and_halves_the_rate() -> None:
    s = Schedule(steps=100, batch=8, seeds=3, most=4)
    assert [s.stage(k) for k in (1, 2, 3, 4)] == [
        (100, 3, 1.0),
        (100, 1, 0.5),
        (200, 1, 0.25),
        (400, 1, 0.125),
    ]
    assert s.cap == 800 == sum(s.stage(k)[0] for k in (1, 2, 3, 4))


@pytest.mark.parametrize(
    "kw, says",
    [
        ({"steps": 0}, "steps must be an integer >= 1, got 0"),
        ({"most": 1}, "most must be an integer >= 2, got 1"),
        ({"batch": True}, "batch must be an integer >= 1, got True"),
        ({"held_out": 2.5}, "held_out must be an integer >= 2, got 2.5"),
    ],
)
def test_a_bad_schedule_is_a_one_line_error(kw: dict, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        Schedule(**({"steps": 1, "batch": 1, "seeds": 1, "most": 2} | kw))


def test_a_bad_budget_is_a_one_line_error() -> None:
    with pytest.raises(ValueError, match="depths must be >= 1"):
        Budget("x", ("diag",), (0, 1), ("uniform:1",), TINY.schedule, seeds=1)
    with pytest.raises(ValueError, match="profile_points must be >= 2, got 1"):
        Budget("x", ("diag",), (1,), ("uniform:1",), TINY.schedule, seeds=1, profile_points=1)


def test_the_parts_choose_the_cells_and_fig5_cells_have_replicas() -> None:
    quick = BUDGETS["quick"]
    assert {c.name for c in cells_for(quick, ("fig4",))} == {"full-L4-categorical1_3"}
    fig5 = cells_for(quick, ("fig5",))
    assert [c.name for c in fig5] == ["gdpp-L7-uniform5", "diag-L7-uniform5", "full-L7-uniform5"]
    assert all(c.replicas and c.noise == FOCUS for c in fig5)
    assert plan_of(fig5[0], quick)["replicas"] == quick.seeds
    assert len(cells_for(quick, ("table1",))) == 3 * 4 * 3
    depths = [c.layers for c in cells_for(BUDGETS["paper"], PARTS)]
    assert depths == sorted(depths)  # a stopped sweep has every model of the depths it reached


def test_names_outside_the_budget_are_one_line_errors() -> None:
    with pytest.raises(ValueError, match="--only takes a comma list out of .*; got fig9"):
        parse_parts("table1,fig9")
    with pytest.raises(ValueError, match="--noise must be one of budget tiny's settings"):
        parse_noises(TINY, ["uniform:5"])
    assert parse_noises(TINY, ["uniform:1.0", "uniform:1"]) == ("uniform:1",)
    with pytest.raises(ValueError, match="--cell must name a cell of budget tiny"):
        parse_cells(TINY, ["diag-L9-uniform1"])
    assert parse_cells(TINY, ["diag-L2-uniform1"]) == ("diag-L2-uniform1",)
    assert Cell("full", 4, "categorical:1,3").name == "full-L4-categorical1_3"


def test_a_committed_quick_cell_of_its_own_start_stores_the_plan_of_its_cell() -> None:
    """The plan (start, sizes, schedule) is what a record keeps of how it was made: every committed
    quick cell that started as the plan says stores exactly the plan of its cell (the paper grid's
    first cells were trained under an earlier cap on the stages)."""
    name = "quick"
    budget = BUDGETS[name]
    found = 0
    for c in cells_for(budget, PARTS):
        rec = read_record(RESULTS / name / "models" / c.name / "metrics.json", c.name)
        if rec.start == start_of(c):
            assert rec.plan == plan_of(c, budget), c.name
            found += 1
    assert found
