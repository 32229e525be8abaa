"""`lintf reproduce`'s progress lines: the ETA covers this process's cells, weighed by depth."""

from __future__ import annotations

from numerics.cli.reproduce import ProgressDisplay


def test_eta_is_the_time_per_layer_so_far_times_the_layers_left_to_train_here(capsys):
    show = ProgressDisplay("reproduce --budget paper", rich=False, quiet=False)
    # 10 cells: 2 finished earlier, 3 to train here, 5 left to a sweep given other --noise settings
    show("start", {"total": 10, "done": 2, "todo": ["diag-L1-a", "diag-L2-a", "diag-L7-a"], "layers": [1, 2, 7]})
    show("cell", {"name": "diag-L1-a", "seconds": 30.0, "loss": 0.5})
    show("cell", {"name": "diag-L2-a", "seconds": 90.0, "loss": 0.4})
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0] == "reproduce --budget paper: 10 cells, 2 finished earlier, 3 to train, 5 not trained here"
    assert lines[1].endswith("ETA 4m30s")  # 30 s per layer so far, 2 + 7 layers to go
    assert lines[2] == "[4/10] diag-L2-a: adjusted loss 0.4000; last 1m30s, mean 1m00s/cell, ETA 4m40s"  # 40 s × 7
    show("cell", {"name": "diag-L7-a", "seconds": 300.0, "loss": 0.3})
    assert capsys.readouterr().err.strip().endswith("ETA 0m00s")
