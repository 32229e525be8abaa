"""`lintf reproduce --jobs N`: the processes it starts end with it."""

from __future__ import annotations


def _processes_naming(text: str) -> list[int]:
    """Live processes whose command line contains ``text`` (Linux ``/proc``)."""
    from pathlib import Path

    found = []
    for d in Path("/proc").iterdir():
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = next(ln for ln in (d / "status").read_text().splitlines() if ln.startswith("State:"))
        except (OSError, StopIteration, ValueError):
            continue
        if text in cmd and "zombie" not in state:
            found.append(int(d.name))
    return found


def test_a_kill_of_the_console_command_reaches_its_jobs_processes(tmp_path):
    """``kill`` (SIGTERM) of ``lintf reproduce --jobs 2`` stops the processes it started too: left running, they
    would go on training into ``--out`` beside the sweep that resumes it."""
    import os
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "killed-out"
    argv = [sys.executable, "-m", "numerics.cli", "reproduce", "--budget", "test", "--only", "table1",
            "--out", str(out), "--runs", str(tmp_path / "runs"), "--jobs", "2"]
    parent = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        first = parent.stderr.readline()
        assert first.startswith("reproduce --budget test: ") and "chain(s), 2 process(es) side by side" in first
        deadline = time.time() + 60
        while len(_processes_naming(str(out))) < 3 and time.time() < deadline:  # the parent and its two
            time.sleep(0.2)
        assert len(_processes_naming(str(out))) == 3
        os.kill(parent.pid, signal.SIGTERM)
        code = parent.wait(timeout=60)
        assert _processes_naming(str(out)) == []  # it waited for them to stop
        assert code == 128 + signal.SIGTERM
    finally:
        for pid in _processes_naming(str(out)):
            os.kill(pid, signal.SIGKILL)
