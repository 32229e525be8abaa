"""What :func:`numerics.reproduce.executor.run` shows while it runs: cells done / running / left,
the time left, and the Dask dashboard's address where there is one.  On a terminal a rich
progress bar above a line per finished cell; otherwise the lines alone, on stderr; nothing when
quiet.

The time left is the cells left times the wall time per finished cell so far (the sweep's
throughput, whatever the number of workers): it assumes the cells left take as long as the cells
done.
"""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn


def clock(seconds: float) -> str:
    """``seconds`` as ``1h02m`` or ``3m07s``."""
    s = max(0.0, float(seconds))
    if s >= 3600:
        return f"{int(s // 3600)}h{int(s % 3600 // 60):02d}m"
    return f"{int(s // 60)}m{int(s % 60):02d}s"


class SweepProgress:
    """The progress of ``total`` cells: :meth:`running` with how many run now, :meth:`finished`
    per cell."""

    def __init__(self, total: int, quiet: bool = False, rich: bool | None = None) -> None:
        self.total, self.done, self.failed, self.now = total, 0, 0, 0
        self.visible = not quiet
        self.t0 = time.perf_counter()
        self.bar: Progress | None = None
        if self.visible and (sys.stderr.isatty() if rich is None else rich):
            self.bar = Progress(
                TextColumn("cells"),
                BarColumn(),
                TextColumn("{task.fields[stat]}"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self.bar.start()
            self.task = self.bar.add_task("cells", total=total, stat=self.stat())

    def eta(self) -> str:
        if not self.done:
            return "time left: after the first cell"
        per_cell = (time.perf_counter() - self.t0) / self.done
        return f"about {clock(per_cell * (self.total - self.done))} left"

    def stat(self) -> str:
        failed = f" ({self.failed} failed)" if self.failed else ""
        left = self.total - self.done - self.now
        return (
            f"{self.done}/{self.total} done{failed}, {self.now} running, {left} left; {self.eta()}"
        )

    def dashboard(self, link: str | None) -> None:
        if link:
            self._say(f"Dask dashboard: {link}")

    def running(self, n: int) -> None:
        self.now = max(0, min(int(n), self.total - self.done))
        if self.bar is not None:
            self.bar.update(self.task, stat=self.stat())

    def finished(self, name: str, failed: bool = False) -> None:
        self.done += 1
        self.failed += bool(failed)
        self.now = max(0, min(self.now, self.total - self.done) - 1)
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done, stat=self.stat())
        self._say(f"{name}: {'FAILED' if failed else 'finished'}; {self.stat()}")

    def _say(self, line: str) -> None:
        if not self.visible:
            return
        if self.bar is not None:
            self.bar.console.print(line)
        else:
            print(line, file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
