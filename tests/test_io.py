"""Atomic writes: no temporary file left behind, usual permissions, refusal of non-finite models."""

from __future__ import annotations

import os
import re
import signal
import stat

import numpy as np
import pytest

from numerics import io
from numerics.errors import LintfError


def test_atomic_write_leaves_one_readable_file(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "sub" / "arrays.npz"
    io.atomic_savez(path, P=np.zeros((1, 1, 3, 3)), Q=np.eye(3)[None, None])
    assert os.listdir(path.parent) == ["arrays.npz"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    with np.load(path) as z:
        assert z["P"].shape == (1, 1, 3, 3) and np.array_equal(z["Q"], np.eye(3)[None, None])


def test_a_folder_in_the_place_of_a_file_is_one_line_naming_the_file(tmp_path) -> None:  # noqa: ANN001
    (tmp_path / "report.md").mkdir()
    with pytest.raises(LintfError, match=r"^cannot write '.*/report\.md': Is a directory$"):
        io.atomic_write_text(tmp_path / "report.md", "text")
    assert os.listdir(tmp_path) == ["report.md"]  # the temporary file is gone


@pytest.mark.parametrize("moment", ["created", "written", "replaced"])
def test_an_interrupt_at_any_moment_of_a_write_leaves_no_temporary_file(
    tmp_path, monkeypatch, moment
) -> None:  # noqa: ANN001
    """Ctrl-C lands between two bytecodes: just after the temporary file is created (before its
    descriptor is returned), after its bytes are on disk, or after it took its name.  The interrupt
    goes on, and the folder holds the old file or the new one, never a temporary."""
    path = tmp_path / "report.md"
    path.write_text("old")
    name = {"created": "open", "written": "fsync", "replaced": "replace"}[moment]
    real = getattr(os, name)

    def then_interrupt(*args: object, **kw: object) -> object:
        out = real(*args, **kw)
        if moment == "created":
            os.close(out)
        raise KeyboardInterrupt

    monkeypatch.setattr(os, name, then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        io.atomic_write_text(path, "new")
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["report.md"]
    assert path.read_text() == ("new" if moment == "replaced" else "old")


def test_checkpoint_json_may_hold_nan_where_asked() -> None:
    """Python's ``json.dumps`` writes a NaN loss as ``NaN``: read where ``nonfinite`` asks for it, refused
    otherwise."""
    assert io.parse_json("[1, NaN]", "curve", nonfinite=True)[0] == 1
    with pytest.raises(LintfError, match="curve is not valid JSON"):
        io.parse_json("[1, NaN]", "curve")
    with pytest.raises(LintfError, match="nested 65 levels deep"):
        io.parse_json("[" * 65 + "]" * 65, "curve", nonfinite=True)


@pytest.mark.parametrize("links", [True, False], ids=["hard-links", "no-hard-links"])
def test_an_exclusive_write_never_replaces_a_file_that_appeared_meanwhile(
    tmp_path, monkeypatch, links
) -> None:  # noqa: ANN001
    if not links:  # a file system without hard links: checked, then renamed

        def no_link(*a: object) -> None:
            raise OSError(1, "Operation not permitted")

        monkeypatch.setattr(os, "link", no_link)
    path = tmp_path / "out.npy"
    io.atomic_write_bytes(path, b"result", exclusive=True)
    assert path.read_bytes() == b"result" and os.listdir(tmp_path) == ["out.npy"]
    path.write_bytes(b"the user's file")  # created after the command checked that there was none
    with pytest.raises(LintfError, match="appeared while this command ran; it is left as it is"):
        io.atomic_write_bytes(path, b"result", exclusive=True)
    assert path.read_bytes() == b"the user's file" and os.listdir(tmp_path) == [
        "out.npy"
    ]  # no temporary left
    io.atomic_write_bytes(path, b"result")  # the default replaces: the tool's own files
    assert path.read_bytes() == b"result"


def test_a_corrupt_json_file_is_named_in_a_one_line_error(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "metrics.json"
    for text in ("{'cells': 1", "\xff\xfe"):
        path.write_bytes(text.encode("latin-1"))
        with pytest.raises(
            LintfError, match=f"{path}' is corrupt \\(.+\\); delete it and rerun to make it again"
        ):
            io.read_json(path)
    path.write_text('{"cells": 1}')
    assert io.read_json(path) == {"cells": 1}


@pytest.mark.parametrize(
    "text, says",
    [
        ("[" * 65 + "]" * 65, "nested 65 levels deep, more than the 64"),
        ('{"a": ' * 100_000 + "1" + "}" * 100_000, "nested 100000 levels deep"),
        ('{"a": NaN}', "NaN is not a JSON number"),
        ("[Infinity]", "Infinity is not a JSON number"),
        ('{"loss": 1e999}', "the number 1e999 is outside float64's range"),
        ("{no", "Expecting property name"),
    ],
)
def test_read_json_refuses_deep_non_finite_and_malformed_json_in_one_line(
    text: str, says: str, tmp_path
) -> None:  # noqa: ANN001
    path = tmp_path / "metrics.json"
    path.write_text(text)
    with pytest.raises(LintfError) as exc:
        io.read_json(path)
    msg = str(exc.value)
    assert msg.startswith(f"{str(path)!r} is corrupt (") and says in msg and "\n" not in msg, msg


def test_read_json_reads_what_lintf_writes_and_a_depth_at_the_limit(tmp_path) -> None:  # noqa: ANN001
    obj = {"a": [1.5, None, {"b": "x[{"}], "null_reasons": {}}
    io.atomic_write_json(tmp_path / "m.json", obj)
    assert io.read_json(tmp_path / "m.json") == obj
    (tmp_path / "deep.json").write_text("[" * 64 + "]" * 64)
    assert io.json_depth((tmp_path / "deep.json").read_text()) == 64 and io.read_json(
        tmp_path / "deep.json"
    )


def test_read_json_refuses_a_file_above_the_size_limit_and_names_one_it_cannot_read(
    tmp_path, monkeypatch
) -> None:  # noqa: ANN001
    monkeypatch.setattr(io, "JSON_BYTES_MAX", 100)
    (tmp_path / "big.json").write_text("[" + "1, " * 100 + "1]")
    with pytest.raises(LintfError, match=r"big.json' is corrupt \(larger than the 100 bytes"):
        io.read_json(tmp_path / "big.json")
    with pytest.raises(
        LintfError, match=r"absent.json' cannot be read: No such file or directory$"
    ):
        io.read_json(tmp_path / "absent.json")


def test_read_text_drops_a_byte_order_mark(tmp_path) -> None:  # noqa: ANN001
    (tmp_path / "t.csv").write_bytes(b"\xef\xbb\xbfnoise,depth\n")
    assert io.read_text(tmp_path / "t.csv", "t") == "noise,depth\n"


def test_read_text_refuses_a_named_pipe_or_a_folder_without_opening_it(tmp_path) -> None:  # noqa: ANN001
    """Opening a named pipe waits for a writer for ever: the type is checked before the open (an
    alarm ends a read that blocks, as a failure of this test)."""
    pipe = tmp_path / "printed.csv"
    os.mkfifo(pipe)

    def blocked(*_: object) -> None:
        raise TimeoutError("read_text blocked on the named pipe")

    before = signal.signal(signal.SIGALRM, blocked)
    signal.alarm(10)
    try:
        for path in (pipe, tmp_path):
            with pytest.raises(
                LintfError, match=f"^--printed {re.escape(str(path))}: not a regular file$"
            ):
                io.read_text(path, f"--printed {path}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)
