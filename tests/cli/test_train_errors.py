"""``lintf train``: bad input gets a one-line error before any work."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from numerics.cli import main as cli_main
from tests.fakes import TINY_TRAIN

# the shared tiny run (tests/fakes.py), its summary as text unless a test asks for --json
TINY = ["train", *(a for a in TINY_TRAIN if a != "--json")]


# --- one-line CLI errors -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--model", "mlp", "--layers", "2"], "--model kind"),
        (["--model", "diag", "--layers", "0"], "layers"),
        (["--model", "diag", "--layers", "2", "--steps", "0"], "steps"),
        (
            ["--model", "diag", "--layers", "2", "--eval-sequences", "1"],
            "--eval-sequences must be >= 2",
        ),  # an SE needs two
        (["--model", "diag", "--layers", "2", "--noise", "gauss:3"], "noise spec"),
        (["--model", "diag", "--layers", "2", "--out", "__FILE__/sub"], "--out"),
        (["--model", "diag", "--layers", "2", "--diag-steps", "1"], "--diag-steps is"),
        (
            ["--model", "diag", "--layers", "2", "--y-step", "sometimes"],
            "--y-step must be one of plain, scaled",
        ),
        (
            ["--model", "diag", "--layers", "2", "--trust", "0.5"],
            "--trust must be 0 (no step rejection) or a finite number > 1",
        ),
        (
            ["--model", "diag", "--layers", "2", "--micro-batch", "3"],
            "--micro-batch must be 0 (the whole batch) or divide",
        ),
        (
            ["--model", "diag", "--layers", "2", "--init", "spectral"],
            "--init 'spectral' needs model gdpp",
        ),
        (
            ["--model", "gdpp", "--layers", "2", "--n", "4", "--init", "spectral", "--lr", "0.5"],
            "--lr has no effect: with init 'spectral' and one seed",
        ),
        (
            ["--model", "gdpp", "--layers", "2", "--init", "spectral", "--warmup", "0"],
            "--warmup has no effect",
        ),
    ],
)
def test_cli_errors_are_one_line(argv: list[str], needle: str, tmp_path: Path, capsys) -> None:
    f = tmp_path / "afile"
    f.write_text("")
    argv = [a.replace("__FILE__", str(f)) for a in argv]
    rc = cli_main(
        [
            "train",
            *argv,
            "--steps" if "--steps" not in argv else "--seed",
            "1" if "--steps" not in argv else "0",
            "--batch",
            "8",
            "--n",
            "4",
            "--d",
            "2",
            "--json",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and needle in err, err


@pytest.mark.parametrize("theirs", ["model.npz", "metrics.json", "loss.png", "checkpoint.npz"])
def test_train_refuses_an_out_that_holds_files_no_run_wrote(
    theirs: str, tmp_path: Path, capsys
) -> None:
    """A directory with the user's own ``model.npz`` (no ``config.json`` beside it) is not a run to resume or
    replace: refused before any work, and the file is untouched."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / theirs).write_bytes(b"precious")
    (out / "notes.txt").write_text("kept")
    rc = cli_main(
        [
            "train",
            "--model",
            "diag",
            "--layers",
            "1",
            "--steps",
            "1",
            "--batch",
            "8",
            "--n",
            "4",
            "--d",
            "2",
            "--no-baselines",
            "--json",
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and f"holds {theirs} but no lintf run" in err, err
    assert (out / theirs).read_bytes() == b"precious" and sorted(
        p.name for p in out.iterdir()
    ) == sorted([theirs, "notes.txt"])


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The tiny run trained to its end once (``--json``), and what it printed: each test below
    takes a copy of its directory (:func:`_copy`) instead of training its own.  Its directory held
    another command's ``config.json``, the stub of a run stopped before its first checkpoint,
    which the run replaces."""
    from numerics.train.config import TrainConfig, config_dict

    out = tmp_path_factory.mktemp("finished") / "run"
    out.mkdir()
    stub = config_dict(
        TrainConfig(model="diag", layers=1, steps=2, batch=8, n=4, d=2, warm_start=None)
    )
    (out / "config.json").write_text(json.dumps(stub))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli_main([*TINY, "--json", "--out", str(out)]) == 0
    return out, printed.getvalue()


def test_train_refuses_an_out_that_holds_a_config_json_no_run_wrote(
    finished: tuple[Path, str], tmp_path: Path, capsys
) -> None:
    """The user's own ``config.json`` is not replaced by the run's; lintf's, from a run stopped before its first
    checkpoint, is (the same or a corrected command goes on): the finished run's directory held another
    command's stub (:func:`finished`)."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "config.json").write_text('{"my": "settings"}')
    argv = [*TINY, "--json", "--out", str(out)]
    rc = cli_main(argv)
    err = capsys.readouterr().err.strip()
    assert (
        rc == 2
        and len(err.splitlines()) == 1
        and "holds a config.json that is not a lintf run's" in err
    ), err
    assert (out / "config.json").read_text() == '{"my": "settings"}' and [
        p.name for p in out.iterdir()
    ] == ["config.json"]
    theirs = json.dumps(
        {
            "model": "resnet50",
            "layers": 50,
            "noise": "gaussian",
            "steps": 9,
            "batch": 2,
            "notes": "",
        }
    )
    for mine in (
        theirs,
        theirs.replace("resnet50", "diag"),
    ):  # a run's keys, with another model or another key
        (out / "config.json").write_text(mine)
        assert cli_main(argv) == 2 and "not a lintf run's" in capsys.readouterr().err
        assert (out / "config.json").read_text() == mine
    # the stub's command stopped before its first checkpoint: this one went on to its end
    assert json.loads((finished[0] / "config.json").read_text())["steps"] == 4


def _copy(finished: tuple[Path, str], tmp_path: Path) -> Path:
    """A copy of the finished run's directory (nothing in it names the directory)."""
    out = tmp_path / "run"
    shutil.copytree(finished[0], out)
    return out


def test_the_same_train_command_twice_leaves_the_finished_run_as_it_is(
    finished: tuple[Path, str], tmp_path: Path, capsys
) -> None:
    """Rerun on the finished run's directory: it prints what the run printed and changes no file."""
    out = _copy(finished, tmp_path)
    argv = [*TINY, "--json", "--out", str(out)]
    first = finished[1]
    before = {f: (out / f).read_bytes() for f in ("metrics.json", "model.npz", "checkpoint.npz")}
    assert cli_main(argv) == 0
    again = (
        capsys.readouterr().out
    )  # the same summary, steps/s included (nothing trained: no new rate)
    assert json.loads(again) == json.loads(first) and json.loads(again)["steps_per_s"] > 0
    assert {f: (out / f).read_bytes() for f in before} == before


def _checkpoint_meta(ck: Path, edit=None) -> dict:
    """The ``meta`` of checkpoint ``ck``; with ``edit``, rewrite ``ck`` with ``edit(meta)`` as its meta."""
    with np.load(ck) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"]))
    if edit is not None:
        arrays["meta"] = np.asarray(json.dumps(edit(meta)))
        with open(ck, "wb") as f:
            np.savez(f, **arrays)
    return meta


def _stopped_before_finishing(out: Path) -> None:
    for f in (
        "metrics.json",
        "model.npz",
    ):  # as if stopped after the last checkpoint, before these were written
        (out / f).unlink()


def test_a_run_resumed_with_no_steps_left_reports_the_rate_its_checkpoint_recorded(
    finished: tuple[Path, str], tmp_path: Path, capsys
) -> None:
    """Interrupted after its last checkpoint (a copy of the finished run, its results removed): the resumed run
    trains nothing, and its rate and training seconds are those of the training before, from the time the
    checkpoint stores, then and on a later rerun.  A checkpoint without that time (as written before it did) has
    no rate to give: the run says so, and stores ``null`` for both."""
    out = _copy(finished, tmp_path)
    argv = [*TINY, "--out", str(out)]
    assert json.loads(finished[1])["steps_per_s"] > 0  # the run itself reported a rate
    seconds = _checkpoint_meta(out / "checkpoint.npz")["seconds"]
    assert 0 < seconds < 600
    _stopped_before_finishing(out)
    for _ in range(2):
        assert cli_main(argv) == 0
        line = capsys.readouterr().out
        assert f"{4 / seconds:.1f} steps/s" in line and "nan" not in line, line
    assert json.loads((out / "metrics.json").read_text())["steps_per_s"] == pytest.approx(
        4 / seconds
    )
    # the training's seconds over every call: the checkpoint's (nothing was left to train)
    assert json.loads((out / "metrics.json").read_text())["seconds"] == pytest.approx(
        seconds, abs=0.1
    )

    _stopped_before_finishing(out)
    _checkpoint_meta(
        out / "checkpoint.npz", lambda m: {k: v for k, v in m.items() if k != "seconds"}
    )
    for _ in range(2):
        assert cli_main(argv) == 0
        line = capsys.readouterr().out
        assert "no steps left to train" in line and "nan" not in line, line
    assert json.loads((out / "metrics.json").read_text())["steps_per_s"] is None
    assert json.loads((out / "metrics.json").read_text())["seconds"] is None


@pytest.mark.parametrize("bad", [-1.0, "3", True, None])
def test_a_checkpoint_with_a_bad_training_time_is_named_as_corrupt(
    bad, finished: tuple[Path, str], tmp_path: Path, capsys
) -> None:
    out = _copy(finished, tmp_path)
    argv = [*TINY, "--out", str(out)]
    _stopped_before_finishing(out)
    _checkpoint_meta(out / "checkpoint.npz", lambda m: m | {"seconds": bad})
    capsys.readouterr()
    assert cli_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1 and f"checkpoint.npz' is corrupt (its training time is {bad!r}," in err[0]
    ), err


@pytest.mark.slow  # it trains and evaluates (about 15 s)
def test_a_finished_run_rerun_without_no_baselines_adds_its_baselines_and_nothing_else(
    tmp_path: Path, capsys
) -> None:
    """A run trained with ``--no-baselines`` and rerun without it: the baselines asked for are computed and stored;
    the model and every other field of ``metrics.json`` stay as they were."""
    out = tmp_path / "run"
    argv = [a for a in TINY if a != "--no-baselines"] + ["--out", str(out)]
    assert cli_main([*argv, "--no-baselines"]) == 0
    before, model = json.loads((out / "metrics.json").read_text()), (out / "model.npz").read_bytes()
    assert before["baselines"] is None
    assert cli_main(argv) == 0
    after = json.loads((out / "metrics.json").read_text())
    assert {"ConstRR", "Bayes"} <= set(after["baselines"]), after["baselines"]
    assert {k: v for k, v in after.items() if k != "baselines"} == {
        k: v for k, v in before.items() if k != "baselines"
    }
    assert (out / "model.npz").read_bytes() == model
    capsys.readouterr()
