"""What the ``lintf`` command checks of its surroundings before any work: the host-device count that ``XLA_FLAGS``
may set (:func:`xla_flags`) and the free space a sweep needs to start (:func:`free_space`); each failure is one
:class:`numerics.errors.LintfError` line."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from numerics.errors import LintfError


def xla_flags(environ: dict[str, str] | os._Environ) -> None:  # noqa: SLF001 - os.environ's type
    """A host-device count in ``XLA_FLAGS`` (``--xla_force_host_platform_device_count=N``, which wins over
    ``LINTF_HOST_DEVICES``) is an integer in the same range as that variable's, given once; XLA itself answers a bad
    one with its whole flag list, or JAX with a traceback."""
    from numerics.train.devices import FLAG, MAX_COUNT  # lazy: start-up

    found = re.findall(rf"{FLAG}(?![\w-])(=\S*)?", environ.get("XLA_FLAGS", ""))
    values = [v[1:] if v else None for v in found]
    ok = len(values) == 1 and re.fullmatch(r"[0-9]+", values[0] or "") is not None
    if values and not (ok and 1 <= int(values[0]) <= MAX_COUNT):
        shown = ", ".join("no value" if v is None else repr(v) for v in values)
        raise LintfError(
            f"XLA_FLAGS: {FLAG} must be given once as an integer in 1..{MAX_COUNT}, got {shown}"
        )


#: Free bytes a sweep's ``--out`` and ``--runs`` need at the start: its records and checkpoints are a few KB each;
#: below this a full disk would show up only mid-run.
FREE_MIN = 16 * 2**20


def free_space(path: str, flag: str) -> None:
    """The file system that holds (or will hold) ``path`` has :data:`FREE_MIN` bytes free."""
    p = Path(os.path.abspath(path))
    while not p.exists():
        p = p.parent
    free = shutil.disk_usage(p).free
    if free < FREE_MIN:
        raise LintfError(
            f"{flag} {path!r}: its file system has {free} bytes free, less than the {FREE_MIN} a sweep "
            "needs to start; free some space or give another directory"
        )
