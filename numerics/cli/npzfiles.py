r"""The ``.npz`` files the ``lintf`` command reads, checked from their headers before any is loaded.

:func:`npz_headers` reads every array's dtype and shape from the archive's directory and headers
(:func:`numerics.archive.npz_directory`) and refuses arrays that would not fit in memory;
:func:`model_file` (a saved model), :func:`data_file` (a data file of :mod:`numerics.cli._userdata`)
and :func:`convert_input` (the input of ``lintf convert``) check the arrays' names, dtypes and
shapes, then, for a model, the values' finiteness.  Each failure is one line naming the file, the
array and what it must be (:class:`numerics.errors.LintfError`).
"""

from __future__ import annotations

import math

import numpy as np

from numerics.archive import npz_directory, read_npz
from numerics.cli import footprint
from numerics.cli._userdata import OPTIONAL, REQUIRED
from numerics.cli.footprint import memory, model_bytes
from numerics.cli.paths import input_file
from numerics.errors import LintfError
from numerics.io import parse_json


def npz_headers(
    path: str, flag: str, needed: tuple[str, ...] | None = None
) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """``{name: (shape, dtype)}`` of every array in the ``.npz`` at ``path``, from its directory and
    headers only (:func:`numerics.archive.npz_directory`); the arrays ``needed`` (default all) must
    fit in memory."""
    input_file(path, flag)
    out = npz_directory(path, f"{flag} {path!r}")
    total = sum(
        math.prod(s) * dt.itemsize for k, (s, dt) in out.items() if needed is None or k in needed
    )
    memory(total, f"{flag} {path!r}", "the size of the arrays in it")
    return out


def _numeric(path: str, flag: str, heads: dict, names: tuple[str, ...]) -> None:
    for k in names:
        if k in heads and heads[k][1].kind not in "fiu":
            raise LintfError(
                f"{flag} {path!r}: array {k} must hold real numbers (integer or float), "
                f"got dtype {heads[k][1]}"
            )


def model_file(path: str, flag: str = "model file") -> tuple[int, int, int]:
    """``(L, H, d)`` of a universal model file: ``P, Q`` numeric, shape ``(L, H, d+1, d+1)``,
    finite; ``meta`` (if present) a JSON object."""
    heads = npz_headers(path, flag, ("P", "Q", "meta"))
    if (
        "P" not in heads and "meta" in heads
    ):  # a family member's file (docs/family.md): its own loader checks it
        from numerics.models.family_io import is_member_file, load_member  # lazy: start-up

        if is_member_file(path):
            W_V = load_member(path).params.W_V
            return W_V.shape[0], W_V.shape[1], W_V.shape[2] - 1
    if "P" not in heads or "Q" not in heads:
        raise LintfError(f"{flag} {path!r} must hold arrays P and Q of shape (L, H, d+1, d+1)")
    _numeric(path, flag, heads, ("P", "Q"))
    sp, sq = heads["P"][0], heads["Q"][0]
    if len(sp) != 4 or sp != sq or sp[2] != sp[3] or min(sp) < 1 or sp[2] < 2:
        raise LintfError(
            f"{flag} {path!r}: P and Q must both have shape (L, H, d+1, d+1) with L, H, d >= 1, "
            f"got P {sp}, Q {sq}"
        )
    if "meta" in heads and (heads["meta"][1].kind not in "US" or heads["meta"][0] != ()):
        raise LintfError(
            f"{flag} {path!r}: meta must be a JSON string, got dtype {heads['meta'][1]} "
            f"of shape {heads['meta'][0]}"
        )
    z = read_npz(
        path, f"{flag} {path!r}", ("P", "Q", "meta"), max_bytes=footprint.available_memory()
    )
    for k in ("P", "Q"):
        bad = int(z[k].size - np.count_nonzero(np.isfinite(z[k])))
        if bad:
            raise LintfError(
                f"{flag} {path!r}: array {k} must be finite, "
                f"but {bad} of its {z[k].size} entries are "
                "NaN or inf"
            )
    meta = parse_json(str(z["meta"]), f"{flag} {path!r}: meta") if "meta" in z else {}
    if not isinstance(meta, dict):
        raise LintfError(
            f"{flag} {path!r}: meta must be a JSON object, got {str(z['meta'])[:40]!r}"
        )
    return sp[0], sp[1], sp[2] - 1


def data_file(path: str, d: int, layers: int, flag: str = "data file") -> None:
    """Header checks of a data file (:mod:`numerics.cli._userdata`) for a model of input dimension
    ``d``, and the memory of evaluating ``layers`` layers on it; the values are checked where they
    are loaded."""
    heads = npz_headers(
        path, flag, (*REQUIRED, *OPTIONAL)
    )  # an array of another name is refused below
    missing = [k for k in REQUIRED if k not in heads]
    if missing:
        raise LintfError(
            f"{flag} {path!r} must hold arrays X (B,n,d), y (B,n), x_query (B,d); "
            f"missing: {', '.join(missing)}"
        )
    unknown = sorted(set(heads) - {*REQUIRED, *OPTIONAL})
    if unknown:  # a misspelt y_query would otherwise go unused, and the loss unreported
        raise LintfError(
            f"{flag} {path!r} holds {', '.join(unknown)}, which no command reads; "
            "a data file holds "
            f"{', '.join(REQUIRED)} and optionally {', '.join(OPTIONAL)}"
        )
    _numeric(path, flag, heads, (*REQUIRED, *OPTIONAL))
    X = heads["X"][0]
    if len(X) != 3 or min(X) < 1:
        raise LintfError(f"{flag} {path!r}: X must have shape (B, n, d) with B, n, d >= 1, got {X}")
    B, n, dx = X
    for k, want in {"y": (B, n), "x_query": (B, dx), "y_query": (B,), "sigma": (B,)}.items():
        if k in heads and heads[k][0] != want:
            raise LintfError(
                f"{flag} {path!r}: {k} must have shape {want} to match X {X}, got {heads[k][0]}"
            )
    if dx != d:
        raise LintfError(
            f"model has input dimension d={d} but {flag} {path!r} has d={dx} (X is {X})"
        )
    memory(
        model_bytes(B, n, layers, d),
        f"a model with L={layers}, d={d} on {B} sequences of length {n}",
        f"the number of sequences in {flag}",
    )


def convert_input(path: str, flag: str = "IN.npz") -> tuple[str, ...]:
    """The arrays ``lintf convert`` reads from ``path``: ``W_Q, W_K, W_V, W_O`` or ``P, Q`` (not
    both), from the archive's directory and headers, and only if they fit in memory."""
    from numerics.models.convert import NAMES  # lazy: start-up

    heads = npz_headers(path, flag, needed=())
    has_w, has_pq = set(NAMES) <= set(heads), {"P", "Q"} <= set(heads)
    if has_w == has_pq:
        raise LintfError(
            f"{flag} {path!r} must hold either W_Q, W_K, W_V, W_O or P, Q; "
            f"it holds {', '.join(sorted(heads)) or 'no arrays'}"
        )
    needed = NAMES if has_w else ("P", "Q")
    memory(
        sum(math.prod(heads[k][0]) * heads[k][1].itemsize for k in needed),
        f"{flag} {path!r}",
        "the size of the arrays in it",
    )
    return needed
