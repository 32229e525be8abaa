"""The Dask side of :mod:`numerics.reproduce.executor`: the local cluster of ``jobs=N``, the
client of a running cluster, and the cells' results as they come back.  It knows nothing of
``out``: the caller writes the results.

``distributed`` is imported inside the functions that use it: importing it takes about a second,
which a serial sweep (``jobs=1``) and ``import numerics.reproduce`` do without.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from numerics.errors import LintfError
from numerics.train import devices

#: How many times the scheduler of a local cluster starts a task again after losing the worker
#: that ran it (Dask's ``distributed.scheduler.allowed-failures``): a worker killed, preempted or
#: out of memory three times over one cell points at the cell.  A remote scheduler keeps its own
#: setting (``docs/cluster.md``).
ALLOWED_FAILURES = 3
#: How long :func:`connect` waits for a scheduler to answer.
CONNECT_TIMEOUT = "30s"


def worker_env(jobs: int) -> dict[str, str]:
    """The environment variables each of ``jobs`` local worker processes needs before it imports
    JAX: its share of the cores as XLA host devices (:func:`numerics.train.devices.for_processes`;
    a count the user chose is kept) and full-precision float32 products
    (:func:`numerics.train.devices.full_precision`)."""
    env = devices.for_processes(jobs)
    devices.configure(env, jax_imported=False)
    devices.full_precision(env, jax_imported=False)
    got = {k: env[k] for k in (devices.ENV, "XLA_FLAGS", devices.PRECISION_ENV) if k in env}
    if "XLA_FLAGS" in os.environ and "XLA_FLAGS" not in env:
        got["XLA_FLAGS"] = ""  # this process's flags hold a count a worker must not inherit
    return got


def local_cluster(jobs: int, dashboard: bool = False):  # noqa: ANN201 - a LocalCluster
    """The cluster of ``run(..., jobs=N)``: ``jobs`` worker processes of one thread each on this
    machine, with the environment of :func:`worker_env`, whose scheduler starts a task again up to
    :data:`ALLOWED_FAILURES` times after losing its worker.  ``dashboard``: serve Dask's dashboard
    (it needs ``bokeh``)."""
    import dask  # lazy: start-up
    from distributed import LocalCluster  # lazy: start-up

    with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}):
        # the scheduler serves HTTP (health checks) in any case: on a free port, not a taken 8787
        return LocalCluster(
            n_workers=jobs,
            threads_per_worker=1,
            processes=True,
            env=worker_env(jobs),
            dashboard_address=":0",
            scheduler_kwargs={"dashboard": dashboard},
            silence_logs=logging.ERROR,
        )


def connect(scheduler: str):  # noqa: ANN201 - a distributed.Client
    """A client of the running cluster ``scheduler`` (an address such as ``tcp://HOST:8786``, or
    a scheduler file); a one-line error if it is neither, or no scheduler answers within
    :data:`CONNECT_TIMEOUT`."""
    is_file = "://" not in scheduler and Path(scheduler).is_file()
    if not is_file and not re.fullmatch(r"(\w+://)?[^\s/:]+(:\d+)?", scheduler):
        raise LintfError(
            f"scheduler {scheduler!r} is neither an address (tcp://HOST:PORT) nor a "
            "scheduler file that exists"
        )
    from distributed import Client  # lazy: start-up

    try:
        if is_file:
            return Client(scheduler_file=scheduler, timeout=CONNECT_TIMEOUT)
        return Client(scheduler, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as exc:
        raise LintfError(
            f"scheduler {scheduler!r}: no Dask scheduler answers ({first_line(exc)})"
        ) from None


def dashboard(client, local: bool) -> str | None:  # noqa: ANN001
    """The dashboard's address: a remote scheduler's, or a local one's where ``bokeh`` is
    installed to draw it."""
    if local and importlib.util.find_spec("bokeh") is None:
        return None
    try:
        services = client.scheduler_info().get("services", {})
        return client.dashboard_link if "dashboard" in services else None
    except Exception:  # noqa: BLE001 - a missing link only leaves the progress line shorter
        return None


def results(
    client,
    tasks: Sequence[tuple[str, Callable]],
    work: Callable,  # noqa: ANN001
    runs: str | None,
    running: Callable[[int], None],
) -> Iterator[tuple[str, dict[str, bytes] | None, str | None]]:
    """Submit ``work(name, fn, runs)`` for every task to ``client``'s cluster and yield
    ``(name, files, None)`` for each cell as it finishes, or ``(name, None, why)`` for one that
    raised or lost its worker too often.  While it waits it tells ``running`` how many cells the
    workers run."""
    payloads = [_pickled(name, fn) for name, fn in tasks]  # before any work: one that can't travel
    _check_workers(client, work)
    token = uuid.uuid4().hex[:8]  # a key of its own for each run, beside other clients
    named = {
        client.submit(work, name, fn, runs, key=f"lintf-{name}-{token}", pure=False): name
        for name, fn in payloads
    }
    left = list(named)
    while left:
        now = [f for f in left if f.done()]
        for f in now:
            left.remove(f)
            if f.status == "finished":
                _, files = f.result()
                yield named[f], files, None
            else:
                yield named[f], None, _lost(f)
            f.release()
        if left:
            running(_running(client, left))
            time.sleep(0.05 if now else 0.2)


def _pickled(name: str, fn: Callable) -> tuple[str, bytes]:
    """``fn`` as bytes for :func:`numerics.reproduce.executor.work` to unpickle on the worker, so
    that a cell whose code a worker cannot import fails with that error (Dask would lose the task
    in the worker's message handling, and the sweep would wait for ever); a one-line error if it
    does not pickle."""
    import cloudpickle  # lazy: start-up

    try:
        return name, cloudpickle.dumps(fn)
    except Exception as exc:  # noqa: BLE001 - pickling raises many kinds
        raise LintfError(
            f"tasks: the function of cell {name!r} does not pickle "
            f"({first_line(exc)}); give a functools.partial of a module-level "
            "function"
        ) from None


def _check_workers(client, work: Callable) -> None:  # noqa: ANN001
    """A one-line error if a worker of ``client``'s cluster cannot import the module of ``work``
    (lintf missing or broken there).  Workers that join later are not checked."""
    statement = f"import {work.__module__}"
    answers = client.run(exec, statement, on_error="return")
    for worker, answer in sorted(answers.items()):
        if isinstance(answer, BaseException):
            raise LintfError(
                f"worker {worker} cannot run lintf's cells ({statement}: "
                f"{first_line(answer)}); install lintf in the workers' environment"
            )


def _running(client, left: list) -> int:  # noqa: ANN001
    """How many of the futures ``left`` a worker is running now (at most a task per thread of
    each worker; the scheduler may have sent it more to start next)."""
    keys = {f.key for f in left}
    try:
        threads = {w: i["nthreads"] for w, i in client.scheduler_info()["workers"].items()}
        return sum(
            min(threads.get(w, 1), sum(k in keys for k in ks))
            for w, ks in client.processing().items()
        )
    except Exception:  # noqa: BLE001 - the count is for the display only
        return 0


def _lost(future) -> str:  # noqa: ANN001
    """Why the task of ``future`` ended without a result."""
    try:
        exc = future.exception()
    except Exception as why:  # noqa: BLE001 - a cancelled future has no exception to give
        return f"{future.status} ({type(why).__name__})"
    return first_line(exc)


def first_line(exc: BaseException | None) -> str:
    """``Type: the first line of its message``."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
