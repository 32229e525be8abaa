r"""The sweep's cells as Dask tasks: on this machine's cores, or on any running Dask cluster.

A task is ``(name, fn)``: ``fn(rundir)`` trains one independent cell in the run directory
``rundir`` (resuming from a checkpoint there) and returns the finished cell's files,
``{relative path: bytes}``.  :func:`run` sends every task to a worker and writes the files that
come back under ``out/models/<name>/`` in this process, atomically and ``metrics.json`` last, so
a cell folder holding ``metrics.json`` is a finished cell.  The workers never write to ``out``:
results travel back through Dask, so the workers need no shared disk.

* ``jobs=N``: a :class:`distributed.LocalCluster` of ``N`` single-threaded worker processes, each
  with its share of the cores as XLA host devices (:func:`worker_env`); ``jobs=1`` runs the cells
  one after another in this process.
* ``scheduler="tcp://HOST:8786"`` or the path of a scheduler file: the cluster's own workers
  (``docs/cluster.md``).

A worker that dies mid-cell (killed, preempted, out of memory) loses its task to the scheduler,
which starts it on another worker, up to :data:`ALLOWED_FAILURES` times; with ``runs`` on a disk
the workers share, the task resumes from the cell's last checkpoint, otherwise it starts the cell
again.  A cell that raises is not retried (a cell is deterministic by its seed, so it would raise
again): the other cells finish, and :func:`run` ends with one line naming each failed cell.  A
stopped :func:`run` keeps every finished cell; run it again on :func:`pending` ``(tasks, out)``
to go on.  One ``out`` takes one :func:`run` at a time (:func:`sweep_lock`).

The sweep of ``lintf reproduce``, its cells trained by ``train_cell(cell, budget, rundir)``::

    tasks = [(c.name, functools.partial(train_cell, c, budget)) for c in cells]
    executor.run(executor.pending(tasks, out), out=out, jobs=args.jobs,
                 scheduler=args.scheduler, runs=args.runs, progress=not args.json)
"""

from __future__ import annotations

import getpass
import os
import pickle
import re
import socket
import tempfile
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path, PurePosixPath

import filelock

from numerics.errors import LintfError
from numerics.io import atomic_write_bytes
from numerics.reproduce import executor_dask as on_dask
from numerics.reproduce.executor_dask import ALLOWED_FAILURES as ALLOWED_FAILURES
from numerics.reproduce.executor_dask import local_cluster as local_cluster
from numerics.reproduce.executor_dask import worker_env as worker_env
from numerics.reproduce.executor_display import SweepProgress

#: ``(cell name, fn(rundir) -> {relative path: bytes})``; ``fn`` must pickle (a
#: ``functools.partial`` of a module-level function) to reach a worker.
Task = tuple[str, Callable[[Path], dict[str, bytes]]]
#: What a cell's ``fn`` returns: its files by path relative to ``out/models/<name>/``.
Files = dict[str, bytes]

#: The file whose presence under ``out/models/<name>/`` marks a finished cell; written last.
FINISHED = "metrics.json"
#: The lock file that keeps a second :func:`run` off one ``out``, the record of who holds it, and
#: the lock file that keeps a second attempt at a cell out of its run directory while the first
#: still runs.
LOCK, HOLDER, CELL_LOCK = ".sweep.lock", ".sweep.holder", ".cell.lock"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._,:=+-]*")


def pending(tasks: Sequence[Task], out: str | os.PathLike[str]) -> list[Task]:
    """The tasks of ``tasks`` whose cell is not finished under ``out/models/`` (no
    ``metrics.json``), in their order."""
    models = Path(out) / "models"
    return [t for t in tasks if not (models / t[0] / FINISHED).is_file()]


def run(
    tasks: Sequence[Task],
    *,
    out: str | os.PathLike[str],
    jobs: int = 1,
    scheduler: str | None = None,
    runs: str | os.PathLike[str] | None = None,
    progress: bool = True,
    replace: Collection[str] = (),
    done: Callable[[str, Files], None] | None = None,
) -> None:
    """Train every task's cell and write its files under ``out/models/<name>/`` (this module's
    docstring).

    :param tasks: ``(name, fn)`` pairs, names unique, none finished under ``out`` (:func:`pending`).
    :param out: the sweep's output directory; held for the run (:func:`sweep_lock`).
    :param jobs: worker processes of a local cluster (1 or more; 1 runs in this process, no Dask).
    :param scheduler: a Dask scheduler's address (``tcp://HOST:8786``) or scheduler file, instead
        of ``jobs``.
    :param runs: where workers keep the run directories ``runs/<name>/`` (a retried task resumes
        there when the workers share it); ``None``: a temporary directory on the worker per task.
    :param progress: show cells done / running / left and the time left on stderr.
    :param replace: names of finished cells that the tasks train again (a record that is not the
        plan's); each keeps its old files until the new ones are written.
    :param done: called as ``done(name, files)`` after each cell's files are written.
    """
    names = _check(tasks, jobs, scheduler)
    out = Path(out)
    with sweep_lock(out):
        finished = [
            n for n in names if (out / "models" / n / FINISHED).is_file() and n not in set(replace)
        ]
        if finished:
            raise LintfError(
                f"tasks: cell {finished[0]!r} is finished already under "
                f"{str(out / 'models')!r}; pass pending(tasks, out) (nothing is "
                "overwritten)"
            )
        runs_at = None if runs is None else str(Path(runs).resolve())
        show, failed = SweepProgress(len(tasks), quiet=not progress), []
        try:
            with closing(_results(tasks, jobs, scheduler, runs_at, show)) as results:
                for name, files, error in results:
                    why = None if error is None else f"{name}: {error}"
                    if why is None:
                        try:
                            write_cell(out, name, files)
                        except LintfError as exc:  # a task that returns what no cell is: failed
                            why = str(exc)
                    show.finished(name, failed=why is not None)
                    if why is not None:
                        failed.append(why)
                    elif done is not None:
                        done(name, files)
        finally:
            show.stop()
        if failed:
            raise LintfError(
                f"{len(failed)} of {len(tasks)} cells failed ({'; '.join(failed)}); the "
                "finished ones are kept, rerun with pending(tasks, out) to go on"
            )


def _check(tasks: Sequence[Task], jobs: int, scheduler: str | None) -> list[str]:
    """The names of ``tasks``; a one-line error for a bad argument, before any work."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise LintfError(f"jobs must be an integer of 1 or more, got {jobs!r}")
    if scheduler is not None and jobs != 1:
        raise LintfError(
            f"jobs={jobs}: not allowed with scheduler={scheduler!r} (its workers run the cells)"
        )
    names = [t[0] for t in tasks]
    for n in names:
        if not isinstance(n, str) or not _NAME.fullmatch(n):
            raise LintfError(
                f"tasks: cell name {n!r} is not a folder name (letters, digits and "
                "._,:=+- only, not first)"
            )
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise LintfError(f"tasks: cell name {dup!r} appears more than once")
    return names


#: the ``out`` folders whose lock this process holds
_HELD: set[str] = set()


@contextmanager
def sweep_lock(out: str | os.PathLike[str]) -> Iterator[None]:
    """Hold ``out/.sweep.lock`` while the block runs: a second :func:`run` on ``out`` (from another
    process, on a file system with working locks) is refused with one line naming the directory
    and the holder.  Within the block this process may take it again (a command that holds it
    over its whole sweep calls :func:`run` inside).  The holder is recorded in ``out/.sweep.holder``
    while the lock is held."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LintfError(f"out: cannot make {str(out)!r}: {exc.strerror}") from None
    key = str(out.resolve())
    if key in _HELD:
        yield
        return
    lock = filelock.FileLock(out / LOCK, timeout=0, is_singleton=False)
    try:
        lock.acquire()
    except filelock.Timeout:
        try:
            holder = (out / HOLDER).read_text().strip() or "unknown"
        except OSError:
            holder = "unknown"
        raise LintfError(
            f"out {str(out)!r} is in use by another sweep ({holder}); wait for it "
            "or give another out"
        ) from None
    try:
        who = (
            f"pid {os.getpid()} of {getpass.getuser()} on {socket.gethostname()}, since "
            f"{time.strftime('%c')}"
        )
        atomic_write_bytes(out / HOLDER, (who + "\n").encode())
        _HELD.add(key)
        yield
    finally:
        _HELD.discard(key)
        (out / HOLDER).unlink(missing_ok=True)
        lock.release()


def work(name: str, fn: Callable[[Path], Files] | bytes, runs: str | None) -> tuple[str, Files]:
    """On a worker: train cell ``name`` in ``runs/<name>/`` (or a temporary directory when
    ``runs`` is ``None``) and return ``(name, its files)``; nothing is written outside the run
    directory.  An attempt waits while another holds the cell's run directory (the task of a
    stopped :func:`run` goes on until its cell ends).  ``fn`` may come pickled (bytes): it is
    unpickled here, so that an import it needs fails as this cell's error."""
    if isinstance(fn, bytes):
        fn = pickle.loads(fn)
    if runs is not None:
        rundir = Path(runs) / name
        rundir.mkdir(parents=True, exist_ok=True)
        with filelock.FileLock(rundir / CELL_LOCK, is_singleton=False):
            return name, fn(rundir)
    with tempfile.TemporaryDirectory(prefix=f"lintf-{name}-", ignore_cleanup_errors=True) as tmp:
        rundir = Path(tmp) / name
        rundir.mkdir()
        return name, fn(rundir)


def write_cell(out: Path, name: str, files: Files) -> None:
    """Write a finished cell's ``files`` under ``out/models/<name>/``, each atomically,
    ``metrics.json`` last."""
    if not isinstance(files, dict) or FINISHED not in files:
        raise LintfError(
            f"cell {name!r}: its task returned no {FINISHED}, so the cell cannot be marked finished"
        )
    for rel in files:
        p = PurePosixPath(rel)
        if not rel or p.is_absolute() or ".." in p.parts or not isinstance(files[rel], bytes):
            raise LintfError(
                f"cell {name!r}: its task returned {rel!r}, not a relative path "
                "inside the cell with bytes"
            )
    folder = out / "models" / name
    for stale in ("model.npz", "seeds.npz"):  # a replaced cell's model that the new record lacks
        if stale not in files:
            (folder / stale).unlink(missing_ok=True)
    for rel in sorted(files, key=lambda r: r == FINISHED):
        atomic_write_bytes(folder / rel, files[rel])


def _results(
    tasks: Sequence[Task], jobs: int, scheduler: str | None, runs: str | None, show: SweepProgress
) -> Iterator[tuple[str, Files | None, str | None]]:
    """``(name, files, None)`` for each cell as it finishes, or ``(name, None, why)`` for one that
    raised (or, on Dask, lost its worker too often): one after another in this process for
    ``jobs=1``, else on a local cluster of ``jobs`` workers or at ``scheduler``."""
    if scheduler is None and jobs == 1:
        for name, fn in tasks:
            show.running(1)
            try:
                yield name, work(name, fn, runs)[1], None
            except Exception as exc:  # noqa: BLE001 - a failed cell is reported with the others
                yield name, None, on_dask.first_line(exc)
        return
    from distributed import (
        Client,  # lazy: start-up (here: importing it takes a second a serial sweep saves)
    )

    cluster = on_dask.local_cluster(jobs, dashboard=show.visible) if scheduler is None else None
    try:
        client = Client(cluster) if cluster is not None else on_dask.connect(scheduler)
        try:
            show.dashboard(on_dask.dashboard(client, local=cluster is not None))
            yield from on_dask.results(client, tasks, work, runs, show.running)
        finally:
            client.close()
    finally:
        if cluster is not None:
            cluster.close()
