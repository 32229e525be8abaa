"""SIGINT at any moment of the console command (:func:`numerics.cli.main` with no arguments): it ends with status 130
and one line, never by a signal (a negative status here, 139 for SIGSEGV in a shell), and a resumed ``lintf train``
ends with the uninterrupted run's model.

The moments are drawn from a seeded generator over the whole run from one second in (before that, on a loaded
machine, the interpreter may still be starting, before any of lintf's code runs): JAX's import, XLA compiling the
training step, training, evaluation, the end of the run.  In-process, a KeyboardInterrupt that a garbage-collector callback swallows is
raised again until the command catches it.
"""

from __future__ import annotations

import gc
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from numerics import cli
from tests.fakes import TINY_TRAIN

TRAIN = ["train", *TINY_TRAIN]
REPRODUCE = ["reproduce", "--budget", "quick", "--only", "table1", "--noise", "uniform:0"]
ENV = {**os.environ, "LINTF_HOST_DEVICES": "1", "PYTHONWARNINGS": "ignore"}


def _interrupted(argv: list[str], after: float) -> subprocess.CompletedProcess:
    """Run ``lintf argv`` as the console command and send it SIGINT ``after`` seconds in (if it still runs)."""
    p = subprocess.Popen(
        [sys.executable, "-m", "numerics.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
        text=True,
    )
    try:
        p.wait(after)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=600)
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def _ended_cleanly(res: subprocess.CompletedProcess, command: str) -> None:
    assert res.returncode in (0, 130), (res.returncode, res.stderr[-2000:])
    if res.returncode == 130:
        lines = res.stderr.strip().splitlines()
        assert (
            lines
            and lines[-1]
            == f"lintf {command}: interrupted; finished work is kept, rerun the same command "
            "to resume"
        ), res.stderr[-2000:]
        assert "Traceback" not in res.stderr and "Exception ignored" not in res.stderr, res.stderr[
            -2000:
        ]


def _model(run: Path) -> tuple[np.ndarray, np.ndarray]:
    with np.load(run / "model.npz") as z:
        return np.array(z["P"]), np.array(z["Q"])


def _train_interrupts(tmp_path: Path, runs: int, seed: int, resume: bool) -> None:
    rng = random.Random(seed)
    if resume:
        t0 = time.perf_counter()
        ref = _interrupted([*TRAIN, "--out", str(tmp_path / "ref")], after=3600)
        span = time.perf_counter() - t0
        assert ref.returncode == 0, ref.stderr[-2000:]
    else:
        span = 4.0
    for k in range(runs):
        run = tmp_path / f"run{k}"
        res = _interrupted([*TRAIN, "--out", str(run)], after=rng.uniform(1.0, span))
        _ended_cleanly(res, "train")
        if resume:
            again = _interrupted([*TRAIN, "--out", str(run)], after=3600)
            assert again.returncode == 0, again.stderr[-2000:]
            for a, b in zip(_model(run), _model(tmp_path / "ref")):
                np.testing.assert_array_equal(a, b)


def test_sigint_during_train_ends_it_with_130_and_one_line(tmp_path: Path) -> None:
    """Two moments in the first seconds: JAX's import, compilation."""
    _train_interrupts(tmp_path, runs=2, seed=0, resume=False)


@pytest.mark.slow
def test_sigint_at_twenty_moments_of_train_then_resume_equals_the_uninterrupted_run(
    tmp_path: Path,
) -> None:
    _train_interrupts(tmp_path, runs=20, seed=1, resume=True)


@pytest.mark.slow
def test_sigint_while_reproduce_compiles_ends_it_with_130(tmp_path: Path) -> None:
    rng = random.Random(2)
    for k in range(4):
        out = tmp_path / f"s{k}"
        res = _interrupted(
            [*REPRODUCE, "--runs", str(out / "runs"), "--out", str(out / "res")],
            after=rng.uniform(2.0, 12.0),
        )
        _ended_cleanly(res, "reproduce")


@pytest.fixture
def console_handlers():
    """The process's SIGINT and SIGALRM handlers and unraisable hook, as they were, after the test."""
    saved = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGALRM), sys.unraisablehook
    yield
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGINT, saved[0])
    signal.signal(signal.SIGALRM, saved[1])
    sys.unraisablehook = saved[2]


def test_an_interrupt_a_gc_callback_swallows_is_raised_again(console_handlers, capsys) -> None:  # noqa: ANN001
    """The SIGINT lands in a garbage-collector callback (as in JAX's), where Python prints "Exception ignored" and
    drops the KeyboardInterrupt; the console handler raises it again, and prints nothing for the dropped one."""
    dropped: list = []
    sys.unraisablehook = (
        dropped.append
    )  # what the console handler passes on (pytest has a hook of its own)
    interrupts = cli._Interrupts()  # noqa: SLF001 - the console command's own handler, tested directly
    interrupts.install()

    def callback(phase: str, info: dict) -> None:
        if phase == "start":
            gc.callbacks.remove(callback)
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(100):  # the handler runs here, between two bytecodes of the callback
                pass

    gc.callbacks.append(callback)
    with pytest.raises(KeyboardInterrupt):
        gc.collect()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            time.sleep(0.01)
    assert interrupts.pending
    interrupts.caught()
    assert dropped == [] and "Exception ignored" not in capsys.readouterr().err


def test_a_sigint_after_the_command_finished_changes_nothing(console_handlers, monkeypatch) -> None:  # noqa: ANN001
    """The command's work is done and its status known: a SIGINT now (the interpreter shutting down) neither
    raises nor ends the process by the signal."""
    monkeypatch.setattr(sys, "argv", ["lintf", "verify"])
    monkeypatch.setattr(cli, "_main", lambda argv: 0)
    monkeypatch.setattr(cli, "_INTERRUPTS", cli._Interrupts())  # noqa: SLF001
    assert cli.main() == 0
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.5)  # the signal is handled (here: ignored) before this returns
