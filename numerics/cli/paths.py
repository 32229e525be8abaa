r"""The paths the ``lintf`` command reads and writes, checked before any work starts.

:func:`input_file` (an existing, readable regular file), :func:`output_file` (a new file that is
none of the inputs: nothing is overwritten) and :func:`output_dir` (a directory, or one that can be
created): visible names of at most :data:`NAME_MAX` bytes whose nearest existing directory is
writable.  Each failure is one line naming the argument and the path
(:class:`numerics.errors.LintfError`).
"""

from __future__ import annotations

import os
from pathlib import Path

from numerics.errors import LintfError

#: Longest name of one path component, in bytes, that the usual file systems hold (``NAME_MAX``).
NAME_MAX = 255


def _names(path: str, flag: str, kind: str = "file") -> None:
    """``path`` is not blank, holds no control character, and each of its names fits
    :data:`NAME_MAX` bytes."""
    if not path or not path.strip() or any(ord(c) < 32 for c in path):
        raise LintfError(f"{flag} must name a {kind} in visible characters, got {path!r}")
    for part in Path(path).parts:
        if (size := len(os.fsencode(part))) > NAME_MAX:
            raise LintfError(
                f"{flag} {path[:40]!r}...: the name {part[:20]!r}... has {size} bytes, "
                "more than the "
                f"{NAME_MAX} a file name may have"
            )


def _writable_parent(path: str, flag: str) -> None:
    """The nearest existing ancestor of ``path`` is a directory this process may write into."""
    p = Path(os.path.abspath(path)).parent
    while not p.exists():
        p = p.parent
    if not p.is_dir():
        raise LintfError(f"{flag} {path!r}: {str(p)!r} is a file, not a directory")
    if not os.access(p, os.W_OK | os.X_OK):
        raise LintfError(f"{flag} {path!r}: directory {str(p)!r} is not writable")


def input_file(path: str, flag: str) -> None:
    """``path`` is an existing, readable regular file."""
    _names(path, flag)
    if not os.path.exists(path):
        raise LintfError(f"{flag} {path!r} does not exist")
    if not os.path.isfile(path):
        raise LintfError(f"{flag} {path!r} is not a regular file")
    if not os.access(path, os.R_OK):
        raise LintfError(f"{flag} {path!r} is not readable")


def output_file(path: str, flag: str, inputs: dict[str, str | None] | None = None) -> None:
    """``path`` does not exist (nothing is overwritten), is none of ``inputs`` and its parent is
    writable."""
    _names(path, flag)
    if os.path.isdir(path):
        raise LintfError(f"{flag} {path!r} is a directory; give a file name")
    for iflag, ipath in (inputs or {}).items():
        if ipath and (
            os.path.abspath(path) == os.path.abspath(ipath)
            or (os.path.exists(path) and os.path.exists(ipath) and os.path.samefile(path, ipath))
        ):
            raise LintfError(
                f"{flag} {path!r} is {iflag}; writing it would destroy that file, give another path"
            )
    if os.path.lexists(path):
        raise LintfError(f"{flag} {path!r} exists; choose a new file name (nothing is overwritten)")
    _writable_parent(path, flag)


def output_dir(path: str, flag: str) -> None:
    """``path`` is a directory or can be created as one."""
    _names(path, flag, "directory")
    if os.path.exists(path) and not os.path.isdir(path):
        raise LintfError(f"{flag} {path!r} is a file; give a directory")
    _writable_parent(path, flag)
