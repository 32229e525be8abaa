"""``benchmarks/grid_schedule.py`` replays a finished grid as one ``lintf reproduce --jobs N``: every run behind a cell
counts, the cells are shared out as ``--jobs`` shares them, and the longest process is the machine time; it splits
the recorded machine time by how many runs ran at once, and refuses a grid that is not finished or not one machine's."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from numerics.reproduce.schedule import share_out
from numerics.reproduce.budgets import PARTS, cells_for, get_budget

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "grid_schedule.py"
_spec = importlib.util.spec_from_file_location("grid_schedule", SCRIPT)
grid_schedule = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(grid_schedule)

TEST = get_budget("test")


def _grid(root: Path, extra: dict[str, dict] | None = None) -> dict[str, float]:
    """An OUT holding every cell of the test budget, cell ``i`` run for ``60 (i + 1)`` s, one after another
    (no two at once), and the seconds behind each cell."""
    seconds, t = {}, 1000.0
    for i, c in enumerate(cells_for(TEST, PARTS)):
        m = {"cell": c.name, "seconds": 60.0 * (i + 1), "wall": [t, t + 60.0 * (i + 1)]} | (extra or {}).get(c.name, {})
        t += 60.0 * (i + 1)
        (root / "models" / c.name).mkdir(parents=True)
        (root / "models" / c.name / "metrics.json").write_text(json.dumps(m))
        seconds[c.name] = m["seconds"] + sum(a["seconds"] for a in m.get("attempts", ()))
    return seconds


def test_the_replay_is_the_longest_process_of_the_sweeps_split(tmp_path: Path, capsys) -> None:
    late = "full-L4-categorical1_3"
    attempt = {"seconds": 500.0, "wall": [0.0, 500.0]}  # a failed attempt counts too
    seconds = _grid(tmp_path, {late: {"attempts": [attempt]}})
    # the chains in the sweep's queue, each process taking the next as it comes free, a chain lasting its seconds
    groups = share_out(TEST, cells_for(TEST, PARTS), 2, lambda c: seconds[c.name])
    sums = [sum(seconds[c.name] for c in g) for g in groups]
    assert len(groups) == 2 and sums[0] != sums[1]
    planned = [sum(seconds[c.name] for c in g) for g in share_out(TEST, cells_for(TEST, PARTS), 2)]
    assert max(planned) > max(sums)  # played through by layers, the same seconds would make a longer sweep
    log = tmp_path / "log.json"
    assert grid_schedule.main(["--budget", "test", "--out", str(tmp_path), "--ratio", "1.5", "--log", str(log)]) == 0
    r = json.loads(log.read_text())
    assert r["cell_hours"] == pytest.approx(sum(seconds.values()) / 3600)
    assert r["process_hours"] == pytest.approx([s / 3600 for s in sums])
    assert r["replayed_hours"] == pytest.approx(max(sums) / 3600)
    assert r["scaled_hours"] == pytest.approx(1.5 * max(sums) / 3600)
    # the runs followed one another, save the attempt, which ran beside nothing either (it ended before the first)
    assert r["recorded_by_processes"] == {"1": pytest.approx(sum(seconds.values()) / 3600)}
    assert f"one sweep with --jobs 2: {max(sums) / 3600:.2f} h" in capsys.readouterr().out
    one = grid_schedule.replay("test", tmp_path, 1)
    assert one["replayed_hours"] == pytest.approx(sum(seconds.values()) / 3600)


def test_runs_side_by_side_are_counted_by_how_many_ran(tmp_path: Path) -> None:
    recs = [{"seconds": 10.0, "wall": [0.0, 10.0]}, {"seconds": 4.0, "wall": [6.0, 10.0]},
            {"seconds": 2.0, "wall": [8.0, 10.0]}, {"seconds": 1.0, "wall": [20.0, 21.0]}]
    assert grid_schedule.concurrency(recs) == {1: 7.0, 2: 2.0, 3: 2.0}


def test_an_unfinished_or_mixed_grid_is_refused(tmp_path: Path) -> None:
    first = cells_for(TEST, PARTS)[0].name
    _grid(tmp_path / "mixed", {first: {"device": "NVIDIA H200"}})
    with pytest.raises(SystemExit, match="ran on 2 devices"):
        grid_schedule.replay("test", tmp_path / "mixed", 2)
    _grid(tmp_path / "part")
    (tmp_path / "part" / "models" / first / "metrics.json").unlink()
    with pytest.raises(SystemExit, match=f"lacks 1 of the 15 cells of budget test \\(first: {first}\\)"):
        grid_schedule.replay("test", tmp_path / "part", 2)
    (tmp_path / "part" / "models" / first / "metrics.json").write_text('{"seconds": 1.0, "wall": [1.0]}')
    with pytest.raises(SystemExit, match=r"is not a cell record: wall \[1.0\] is not \[start, end\]"):
        grid_schedule.replay("test", tmp_path / "part", 2)
    (tmp_path / "part" / "models" / first / "metrics.json").write_text('{"seconds": ')
    with pytest.raises(SystemExit, match="is not a cell record"):
        grid_schedule.replay("test", tmp_path / "part", 2)


def test_a_grid_still_training_replays_its_finished_cells_beside_a_reference(tmp_path: Path, capsys) -> None:
    """``--finished`` replays the cells ``--out`` holds so far, shared out among themselves, and ``--reference`` the
    same cells of another grid: the missing cells count on neither side."""
    seconds = _grid(tmp_path / "ref")
    _grid(tmp_path / "part", {n: {"seconds": 2 * s} for n, s in seconds.items()})
    gone = [c.name for c in cells_for(TEST, PARTS)][-4:]
    for n in gone:
        (tmp_path / "part" / "models" / n / "metrics.json").unlink()
    log = tmp_path / "log.json"
    argv = ["--budget", "test", "--out", str(tmp_path / "part"), "--finished", "--log", str(log)]
    assert grid_schedule.main([*argv, "--reference", str(tmp_path / "ref")]) == 0
    r, kept = json.loads(log.read_text()), sum(s for n, s in seconds.items() if n not in gone)
    assert r["cells"] == 11 and r["cell_hours"] == pytest.approx(2 * kept / 3600)
    assert r["reference"]["cell_hours"] == pytest.approx(kept / 3600)
    assert "2.00 times as long under" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="--reference .* lacks 1 of the finished cells"):
        (tmp_path / "ref" / "models" / cells_for(TEST, PARTS)[0].name / "metrics.json").unlink()
        grid_schedule.main([*argv, "--reference", str(tmp_path / "ref")])
    with pytest.raises(SystemExit) as e:
        grid_schedule.main(["--budget", "test", "--out", str(tmp_path / "part"), "--reference", str(tmp_path)])
    assert e.value.code == 2 and "--reference goes with --finished" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--jobs", "0"], "--jobs must be in 1..64, got 0"), (["--ratio", "inf"], "--ratio must be finite and > 0, got inf"),
    (["--ratio", "-1"], "--ratio must be finite and > 0, got -1.0"), (["--budget", "nope"], "--budget must be one of")])
def test_bad_arguments_are_one_line_before_any_work(tmp_path: Path, capsys, args: list[str], message: str) -> None:
    _grid(tmp_path)  # a finished grid: only the argument can be wrong
    with pytest.raises(SystemExit) as e:
        grid_schedule.main(["--budget", "test", "--out", str(tmp_path), *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and message in err[-1] and err[-1].startswith("grid_schedule.py: error:")


def test_seconds_a_record_omits_count_in_the_cells_process(tmp_path: Path, capsys) -> None:
    """``--add CELL=SECONDS`` counts a part of a run that left no record: the cell's chain lasts that much longer and
    the queue is played through again with it; a bad value or a cell outside the budget is a one-line error."""
    seconds = _grid(tmp_path)
    late = cells_for(TEST, PARTS)[0]
    base = grid_schedule.replay("test", tmp_path, 2)
    more = grid_schedule.replay("test", tmp_path, 2, added={late.name: 3600.0})
    seconds[late.name] += 3600.0
    groups = share_out(TEST, cells_for(TEST, PARTS), 2, lambda c: seconds[c.name])
    sums = [sum(seconds[c.name] for c in g) for g in groups]
    assert more["process_hours"] == pytest.approx([s / 3600 for s in sums])
    assert more["cell_hours"] == pytest.approx(base["cell_hours"] + 1) and more["added_seconds"] == {late.name: 3600.0}
    for bad, why in (("x=5", "must name a cell of budget test"), (f"{late.name}=-1", "a number >= 0"),
                     (f"{late.name}=inf", "a number >= 0"), (late.name, "a number >= 0")):
        with pytest.raises(SystemExit):
            grid_schedule.main(["--budget", "test", "--out", str(tmp_path), "--add", bad])
        err = capsys.readouterr().err.strip().splitlines()
        assert why in err[-1] and bad in err[-1], (bad, err)
