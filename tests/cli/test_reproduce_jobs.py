"""`lintf reproduce --jobs N`: the processes it starts end with it."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The command line with the tests' tiny budget registered as ``--budget tiny``.
SCRIPT = (
    "import sys; from numerics.reproduce import grid; from tests.fakes import TINY; grid.BUDGETS['tiny'] = TINY; "
    "from numerics.cli import main; sys.exit(main(sys.argv[1:]))"
)


def _children(pid: int) -> list[int]:
    """Live child processes of ``pid`` (Linux ``/proc``)."""
    found = []
    for d in Path("/proc").iterdir():
        try:
            stat = (d / "stat").read_text()
        except (OSError, ValueError):
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[1] == str(pid) and fields[0] != "Z":
            found.append(int(d.name))
    return found


def test_a_kill_of_the_command_reaches_its_jobs_processes(tmp_path: Path) -> None:
    """``kill`` (SIGTERM) of ``lintf reproduce --jobs 2`` stops the processes it started too: left running, they
    would go on training beside the sweep that resumes it."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "killed-out"
    argv = [
        sys.executable,
        "-c",
        SCRIPT,
        "reproduce",
        "--budget",
        "tiny",
        "--only",
        "table1",
        "--out",
        str(out),
        "--runs",
        str(tmp_path / "runs"),
        "--jobs",
        "2",
    ]
    parent = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        first = parent.stderr.readline()
        assert first.startswith("reproduce --budget tiny: 4 cells, 4 to train"), first
        deadline = time.time() + 120
        while len(_children(parent.pid)) < 2 and time.time() < deadline:
            time.sleep(0.2)
        kids = _children(parent.pid)
        assert len(kids) >= 2, kids
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(timeout=60) != 0
        deadline = time.time() + 30
        while (
            any(
                Path(f"/proc/{k}").exists()
                and "Z" not in (Path(f"/proc/{k}/stat").read_text().split(")")[1][:3])
                for k in kids
            )
            and time.time() < deadline
        ):
            time.sleep(0.2)
        assert not [
            k
            for k in kids
            if Path(f"/proc/{k}").exists()
            and "Z" not in Path(f"/proc/{k}/stat").read_text().split(")")[1][:3]
        ]
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
