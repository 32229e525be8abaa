"""What a sweep shows (:mod:`numerics.reproduce.executor_display`): cells done, running and left,
the time left and the dashboard's address, one line per finished cell; nothing when quiet."""

from __future__ import annotations

import functools

from numerics.reproduce import executor
from numerics.reproduce.executor_display import SweepProgress, clock
from tests import fakes


def test_each_finished_cell_shows_done_running_left_and_the_time_left(capsys):
    show = SweepProgress(3, rich=False)
    show.dashboard("http://127.0.0.1:8787/status")
    show.running(2)
    show.finished("a")
    show.finished("b", failed=True)
    show.stop()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "Dask dashboard: http://127.0.0.1:8787/status"
    assert lines[1].startswith("a: finished; 1/3 done, 1 running, 1 left; about ")
    assert lines[2].startswith("b: FAILED; 2/3 done (1 failed), 0 running, 1 left; about ")
    assert lines[2].endswith(" left") and len(lines) == 3


def test_a_quiet_sweep_prints_nothing(tmp_path, capsys):
    tasks = [("c0", functools.partial(fakes.checkpointed_cell, seed=0))]
    executor.run(tasks, out=tmp_path / "quiet", progress=False)
    assert capsys.readouterr() == ("", "")
    executor.run(tasks, out=tmp_path / "shown", progress=True)
    assert "c0: finished; 1/1 done, 0 running, 0 left" in capsys.readouterr().err


def test_clock_reads_as_hours_and_minutes_or_minutes_and_seconds():
    assert [clock(s) for s in (0, 59.9, 61, 3600, 3725, -1)] == [
        "0m00s",
        "0m59s",
        "1m01s",
        "1h00m",
        "1h02m",
        "0m00s",
    ]
