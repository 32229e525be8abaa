"""`lintf reproduce`'s progress lines: the ETA covers this process's cells, weighed by the layers they train, at
the rate of the deepest cells trained so far."""

from __future__ import annotations

from numerics.cli.reproduce import ProgressDisplay


def test_eta_is_the_deepest_cells_time_per_layer_times_the_layers_left_to_train_here(capsys):
    show = ProgressDisplay("reproduce --budget paper", rich=False, quiet=False)
    # 10 cells: 2 finished earlier, 4 to train here (the last a Fig. 5 cell: 7 layers x 3 replicas), 4 left to a
    # sweep given other --noise settings
    show("start", {"total": 10, "done": 2, "todo": ["diag-L1-a", "diag-L2-a", "full-L2-a", "diag-L7-a"],
                   "layers": [1, 2, 2, 21], "depths": [1, 2, 2, 7]})
    show("cell", {"name": "diag-L1-a", "seconds": 30.0, "loss": 0.5})
    show("cell", {"name": "diag-L2-a", "seconds": 100.0, "loss": 0.4})
    show("cell", {"name": "full-L2-a", "seconds": 60.0, "loss": 0.4})
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0] == "reproduce --budget paper: 10 cells, 2 finished earlier, 4 to train, 4 not trained here"
    assert lines[1].endswith("ETA 12m30s")  # 30 s per layer, 2 + 2 + 21 layers to go
    assert lines[2] == "[4/10] diag-L2-a: adjusted loss 0.4000; last 1m40s, mean 1m05s/cell, ETA 19m10s"  # 50 s × 23
    assert lines[3].endswith("ETA 14m00s")  # the two depth-2 cells: 160 s / 4 layers × 21 (all cells: 38 s × 21)
    show("cell", {"name": "diag-L7-a", "seconds": 300.0, "loss": 0.3})
    assert capsys.readouterr().err.strip().endswith("ETA 0m00s")


def test_the_first_line_has_no_eta_before_a_cell_took_time(capsys):
    show = ProgressDisplay("reproduce --budget test", rich=False, quiet=False)
    show("start", {"total": 1, "done": 0, "todo": ["diag-L1-a"], "layers": [1], "depths": [1]})
    show("cell", {"name": "diag-L1-a", "seconds": 0.0, "loss": 0.5})
    assert capsys.readouterr().err.strip().splitlines()[1].endswith("last 0m00s, mean 0m00s/cell")


def test_a_failed_cell_is_named_failed_with_its_reason_not_given_a_loss(capsys):
    """A failed cell is never a table entry, and its progress line does not print its loss as one either."""
    show = ProgressDisplay("reproduce --budget quick", rich=False, quiet=False)
    show("start", {"total": 2, "done": 0, "todo": ["full-L4-a", "diag-L4-a"], "layers": [4, 4], "depths": [4, 4]})
    show("cell", {"name": "full-L4-a", "seconds": 60.0, "loss": 0.1235, "failed": "tail check: 2 of 1000000 above"})
    show("cell", {"name": "diag-L4-a", "seconds": 60.0, "loss": 0.1249, "failed": None})
    failed, passed = capsys.readouterr().err.strip().splitlines()[1:]
    assert failed.startswith("[1/2] full-L4-a: FAILED (tail check: 2 of 1000000 above); last 1m00s")
    assert "0.1235" not in failed and passed.startswith("[2/2] diag-L4-a: adjusted loss 0.1249; last 1m00s")


def test_a_finished_cell_sent_back_to_training_is_counted_once(capsys):
    """A trained cell can send a finished one back (its floor changed: ``numerics.reproduce.deeper``): it is one more
    to train and one fewer finished, and the ETA counts its layers."""
    show = ProgressDisplay("reproduce --budget lean", rich=False, quiet=False)
    show("start", {"total": 3, "done": 2, "todo": ["diag-L2-a"], "layers": [2], "depths": [2]})
    show("more", {"name": "diag-L3-a", "layers": 3, "depth": 3})
    show("cell", {"name": "diag-L2-a", "seconds": 20.0, "loss": 0.4})
    show("cell", {"name": "diag-L3-a", "seconds": 30.0, "loss": 0.3})
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[1] == "[2/3] diag-L2-a: adjusted loss 0.4000; last 0m20s, mean 0m20s/cell, ETA 0m30s"  # 10 s × 3
    assert lines[2].startswith("[3/3] diag-L3-a") and lines[2].endswith("ETA 0m00s")

