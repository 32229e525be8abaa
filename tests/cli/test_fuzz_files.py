"""Hostile files to ``convert``, ``predict``, ``inspect`` and ``verify --printed``, in-process: a strange archive or
JSON is one line on stderr naming the file and what is wrong (exit 2, no traceback, nothing written), an odd but
valid archive reads as the plain one, and an array no command uses is never loaded.

The files come from :mod:`tests.strategies.hostile`; each refused variant must be refused by its own check
(``REFUSED_WORDS``: the words of that check's message), not by a catch-all further on.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from numerics import archive
from numerics.cli import footprint, main, validate
from tests.strategies.hostile import (
    ACCEPTED,
    REFUSED_WORDS,
    hostile_json,
    refused_archives,
    unused_huge,
)

D, K = 2, 4
RNG = np.random.default_rng(0)
MODEL = {
    "P": 0.1 * RNG.standard_normal((2, 1, D + 1, D + 1)),
    "Q": 0.1 * RNG.standard_normal((2, 1, D + 1, D + 1)),
    "meta": np.asarray(json.dumps({"kind": "full"})),
}
DATA = {
    "X": RNG.standard_normal((3, 5, D)),
    "y": RNG.standard_normal((3, 5)),
    "x_query": RNG.standard_normal((3, D)),
    "y_query": RNG.standard_normal(3),
}
WEIGHTS = {
    "W_Q": RNG.standard_normal((D + 1, K)),
    "W_K": RNG.standard_normal((D + 1, K)),
    "W_V": RNG.standard_normal((D + 1, K)),
    "W_O": RNG.standard_normal((K, D + 1)),
}

#: ``(command, which file is hostile, its arrays, the arrays the command reads)``
TARGETS = [
    ("predict", "model", MODEL, ("P", "Q", "meta")),
    ("predict", "data", DATA, tuple(DATA)),
    ("inspect", "model", MODEL, ("P", "Q", "meta")),
    ("inspect", "data", DATA, tuple(DATA)),
    ("convert", "weights", WEIGHTS, tuple(WEIGHTS)),
    ("convert", "model", MODEL, ("P", "Q")),
]


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The good files, and 1 GiB of memory whatever the machine has."""
    monkeypatch.setattr(footprint, "available_memory", lambda: 2**30)
    monkeypatch.setattr(
        validate, "available_memory", lambda: 2**30
    )  # its own name for the same function
    monkeypatch.setattr(archive, "memory_available", lambda: 2**30)
    for name, arrays in (("model", MODEL), ("data", DATA), ("weights", WEIGHTS)):
        np.savez(tmp_path / f"{name}.npz", **arrays)
    return tmp_path


def _argv(command: str, which: str, path: Path, root: Path) -> list[str]:
    if command == "convert":
        return ["convert", str(path), "--out", str(root / "converted.npz")]
    model, data = (path, root / "data.npz") if which == "model" else (root / "model.npz", path)
    return [command, str(model), str(data)] + (["--json"] if command == "predict" else [])


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def _refused(argv: list[str], root: Path, words: str) -> None:
    before = sorted(os.listdir(root))
    rc, out, err = _run(argv)
    lines = err.splitlines()
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err and out == "", (argv, rc, err)
    assert lines[0].startswith(f"lintf {argv[0]}: error: ") and words in lines[0], (
        argv,
        words,
        lines,
    )
    assert sorted(os.listdir(root)) == before, argv


def _archive_case(world: Path, target: tuple, data: st.DataObject) -> None:
    command, which, arrays, names = target
    label, raw = data.draw(refused_archives(arrays, names), label="variant")
    path = world / "hostile.npz"
    path.write_bytes(raw)
    _refused(_argv(command, which, path, world), world, REFUSED_WORDS[label.split(" (")[0]])
    path.unlink()


@given(target=st.sampled_from(TARGETS), data=st.data())
@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_a_strange_archive_is_refused_by_its_own_check(
    world: Path, target: tuple, data: st.DataObject
) -> None:
    _archive_case(world, target, data)


@pytest.mark.slow
@given(target=st.sampled_from(TARGETS), data=st.data())
@settings(max_examples=400, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_a_strange_archive_is_refused_by_its_own_check_many(
    world: Path, target: tuple, data: st.DataObject
) -> None:
    _archive_case(world, target, data)


@pytest.mark.parametrize("variant", sorted(ACCEPTED))
def test_an_odd_but_valid_archive_reads_as_the_plain_one(variant: str, world: Path) -> None:
    """Another compression method than ``numpy.savez``'s: the same predictions, the same converted model."""
    odd = world / "odd"
    odd.mkdir()
    for name, arrays in (("model", MODEL), ("data", DATA), ("weights", WEIGHTS)):
        (odd / f"{name}.npz").write_bytes(ACCEPTED[variant](arrays))
    plain, strange = (
        _run(_argv("predict", "model", world / "model.npz", world)),
        _run(["predict", str(odd / "model.npz"), str(odd / "data.npz"), "--json"]),
    )
    assert (
        plain[0] == strange[0] == 0
        and json.loads(plain[1])["predictions"] == json.loads(strange[1])["predictions"]
    )
    assert _run(["convert", str(odd / "weights.npz"), "--out", str(odd / "c.npz")])[0] == 0
    assert _run(_argv("convert", "weights", world / "weights.npz", world))[0] == 0
    with np.load(odd / "c.npz") as a, np.load(world / "converted.npz") as b:
        assert np.array_equal(a["P"], b["P"]) and np.array_equal(a["Q"], b["Q"])


@pytest.mark.parametrize("command", ["convert", "predict", "inspect"])
def test_an_array_the_command_does_not_use_is_never_loaded(command: str, world: Path) -> None:
    """Beside the arrays a command reads, one that declares 2 GiB (twice the memory here): never loaded, so the
    command runs; a data file with it is refused, since no command reads it."""
    path = world / "extra.npz"
    path.write_bytes(unused_huge(WEIGHTS if command == "convert" else MODEL))
    rc, out, err = _run(_argv(command, "weights" if command == "convert" else "model", path, world))
    assert rc == 0 and err == "", err
    if command != "convert":
        path.write_bytes(unused_huge(DATA))
        _refused(_argv(command, "data", path, world), world, "holds unused, which no command reads")


def _json_case(world: Path, kind: str, data: st.DataObject) -> None:
    if kind == "meta":
        label, raw = data.draw(hostile_json("object"), label="meta")
        path = world / "meta.npz"
        np.savez(path, P=MODEL["P"], Q=MODEL["Q"], meta=np.asarray(raw.decode("latin-1")))
        _refused(["predict", str(path), str(world / "data.npz")], world, "meta")
    else:
        label, raw = data.draw(hostile_json("list"), label="printed")
        path = world / "printed.json"
        path.write_bytes(raw)
        _refused(["verify", "--only", "gram_map", "--printed", str(path)], world, "--printed")
    path.unlink()


@given(kind=st.sampled_from(["meta", "printed"]), data=st.data())
@settings(max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_hostile_json_in_a_models_meta_or_a_printed_table_is_one_line(
    world: Path, kind: str, data: st.DataObject
) -> None:
    _json_case(world, kind, data)


@pytest.mark.slow
@given(kind=st.sampled_from(["meta", "printed"]), data=st.data())
@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_hostile_json_in_a_models_meta_or_a_printed_table_is_one_line_many(
    world: Path, kind: str, data: st.DataObject
) -> None:
    _json_case(world, kind, data)


def test_json_nested_past_the_limit_is_refused_by_the_depth_check(world: Path) -> None:
    """Depth 100 parses without a RecursionError, so only the depth check refuses it."""
    path = world / "deep.npz"
    np.savez(path, P=MODEL["P"], Q=MODEL["Q"], meta=np.asarray('{"a": ' * 100 + "1" + "}" * 100))
    _refused(["inspect", str(path), str(world / "data.npz")], world, "nested 100 levels deep")
    (world / "p.json").write_text("[" * 100 + "]" * 100)
    _refused(
        ["verify", "--only", "gram_map", "--printed", str(world / "p.json")],
        world,
        "nested 100 levels deep",
    )
