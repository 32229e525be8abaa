"""Hostile files to ``convert``, ``predict``, ``inspect``, ``verify --printed`` and ``reproduce``, in-process: a strange
archive or JSON is one line on stderr naming the file and what is wrong (exit 2, no traceback, nothing written), an
odd but valid archive reads as the plain one, and an array no command uses is never loaded.

The files come from :mod:`tests.strategies.hostile`; each refused variant must be refused by its own check
(``REFUSED_WORDS``: the words of that check's message), not by a catch-all further on.  A family member's model file
is read through the same checks as a universal one.

``reproduce`` meets a sweep's own files tampered with (a cell's record and model, a setting's baselines, the
``--out`` marker) and ``--out`` directories that are not a sweep's, both without training (``--no-train``, budget
quick) and where it trains (budget tiny of :mod:`tests.fakes`, cells trained by :class:`tests.fakes.FakeCell`): it
ends with status 1 or 2 and one line naming the file or ``--out``, and leaves every file as it was; or it ends with
status 0, having changed nothing that was there but the records of the cells it trained again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from numerics import archive
from numerics.cli import footprint, main, validate
from numerics.cli import reproduce as cli_reproduce
from numerics.errors import LintfError
from numerics.io import JSON_DEPTH_MAX, atomic_write_json
from numerics.model_file import save_model
from numerics.models.family import MEMBER_OBJECTS
from numerics.models.family_io import expected_shapes
from numerics.reproduce import grid, sweep
from numerics.reproduce.grid import CATEGORICAL, FOCUS, Cell
from tests.fakes import TINY, FakeCell, fake_baselines, fake_record
from tests.strategies.hostile import (
    ACCEPTED,
    NON_FINITE,
    REFUSED,
    REFUSED_WORDS,
    foreign_out,
    hostile_json,
    hostile_printed,
    npz_bytes,
    refused_archives,
    tampered_json,
    tampered_model,
    unused_huge,
)

D, K = 2, 4
RNG = np.random.default_rng(0)
MODEL = {
    "P": 0.1 * RNG.standard_normal((2, 1, D + 1, D + 1)),
    "Q": 0.1 * RNG.standard_normal((2, 1, D + 1, D + 1)),
    "meta": np.asarray(json.dumps({"kind": "full"})),
}
#: Four sequences of five points: the shapes of ``tests/cli/test_hostile_files.py``'s model and data, so
#: that ``predict`` and ``inspect`` compile one set of programs for both.
DATA = {
    "X": RNG.standard_normal((4, 5, D)),
    "y": RNG.standard_normal((4, 5)),
    "x_query": RNG.standard_normal((4, D)),
    "y_query": RNG.standard_normal(4),
}
WEIGHTS = {
    "W_Q": RNG.standard_normal((D + 1, K)),
    "W_K": RNG.standard_normal((D + 1, K)),
    "W_V": RNG.standard_normal((D + 1, K)),
    "W_O": RNG.standard_normal((K, D + 1)),
}
#: A gated DeltaNet of two layers (every gate and key array a member may have): a family member's file.
MEMBER_KIND = MEMBER_OBJECTS["gated-deltanet"]
MEMBER = {
    f: 0.1 * RNG.standard_normal(s) for f, s in expected_shapes(MEMBER_KIND, 2, 1, D + 1, K).items()
} | {"meta": np.asarray(json.dumps({"kind": MEMBER_KIND.name}))}

#: ``(command, which file is hostile, its arrays, the arrays the command reads)``
TARGETS = [
    ("predict", "model", MODEL, ("P", "Q", "meta")),
    ("predict", "data", DATA, tuple(DATA)),
    ("inspect", "model", MODEL, ("P", "Q", "meta")),
    ("inspect", "data", DATA, tuple(DATA)),
    ("convert", "weights", WEIGHTS, tuple(WEIGHTS)),
    ("convert", "model", MODEL, ("P", "Q")),
    ("predict", "member", MEMBER, tuple(MEMBER)),
    ("inspect", "member", MEMBER, tuple(MEMBER)),
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
    model, data = (path, root / "data.npz") if which != "data" else (root / "model.npz", path)
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


@pytest.mark.parametrize("command", ["predict", "inspect"])
@pytest.mark.parametrize("variant", sorted(REFUSED))
def test_a_tampered_member_file_is_refused_by_its_own_check(
    world: Path, variant: str, command: str
) -> None:
    """A family member's file goes through every check of :func:`numerics.archive.read_npz`, as a universal
    one: a flipped byte in a gate's array (its CRC) or an array that declares more than the memory is one line."""
    path = world / "member.npz"
    path.write_bytes(REFUSED[variant](MEMBER, "w_beta"))
    _refused(_argv(command, "member", path, world), world, REFUSED_WORDS[variant])


def test_a_member_file_whose_meta_nests_deep_is_no_member_and_one_line(world: Path) -> None:
    """A ``meta`` nested 100 000 deep (Python's own JSON reader overflows its recursion) in a file without
    ``P``: not a member's file, and no universal one."""
    path = world / "deep.npz"
    arrays = {k: v for k, v in MEMBER.items() if k != "meta"}
    np.savez(path, meta=np.asarray("[" * 100_000 + "]" * 100_000), **arrays)
    _refused(_argv("predict", "member", path, world), world, "must hold arrays P and Q")


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


def _printed_case(world: Path, data: st.DataObject) -> None:
    label, suffix, raw = data.draw(hostile_printed(), label="printed")
    path = world / f"printed{suffix}"
    path.write_bytes(raw)
    _refused(["verify", "--only", "gram_map", "--printed", str(path)], world, f"--printed {path}")
    path.unlink()


@given(data=st.data())
@settings(max_examples=200, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_a_printed_table_with_a_bad_row_is_one_line_naming_it(
    world: Path, data: st.DataObject
) -> None:
    """A field of the wrong type or past float64 (a boolean, a 400-digit integer, ``NaN``), an unknown
    field, a CSV line Python's reader refuses: one line naming the file, before any floor is evaluated."""
    _printed_case(world, data)


@pytest.mark.slow
@given(data=st.data())
@settings(max_examples=2000, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_a_printed_table_with_a_bad_row_is_one_line_naming_it_many(
    world: Path, data: st.DataObject
) -> None:
    _printed_case(world, data)


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


# ------------------------------------------------------------------------------------------------
# lintf reproduce: a sweep's own files tampered with, and an --out that is not a sweep's
# ------------------------------------------------------------------------------------------------

QUICK = grid.BUDGETS["quick"]
#: The finished cells of the quick sweep the tests tamper with: Fig. 4's (it has a model file the
#: command reads) and two table cells.
QUICK_CELLS = (Cell("full", 4, CATEGORICAL), Cell("diag", 1, "uniform:0"), Cell("gdpp", 2, FOCUS))
#: The models of Fig. 4's cell: its own (FULL, 4 layers) and the files that may take its place.
FIG4 = {
    "P": 0.1 * RNG.standard_normal((4, 1, QUICK.d + 1, QUICK.d + 1)),
    "Q": 0.1 * RNG.standard_normal((4, 1, QUICK.d + 1, QUICK.d + 1)),
    "meta": np.asarray(json.dumps({"kind": "full"})),
}
OTHER_MODELS = {
    "a DIAG model of 2 layers": npz_bytes(
        {"P": FIG4["P"][:2], "Q": FIG4["Q"][:2], "meta": np.asarray('{"kind": "diag"}')}
    ),
    "a gated DeltaNet's file": npz_bytes(MEMBER),
    "a data file": npz_bytes(DATA),
    "a record": b'{"format": 2}',
    "P of shape (3,)": npz_bytes({"P": np.zeros(3), "Q": np.zeros(3)}),
    "P and Q of other shapes": npz_bytes({"P": FIG4["P"], "Q": FIG4["Q"][:2]}),
}
MARKER = {"kind": "lintf-sweep", "format": 2, "budget": "quick"}
MARKER_SPECIALS = {
    "budget": ["overnight", "paper", "tiny", "", "QUICK", None, ["quick"]],
    "format": [1, 3, "2", None, True],
    "kind": ["lintf-train", "", None],
}
RECORD_SPECIALS = {
    "format": [1, 3, "2", 2.5, None, True, 10**400],
    "cell": ["diag-L1-uniform0", "", "../../user", "x" * 10_000],
}


#: The top-level keys of each kind of file that its reader needs: removed or of another type, it is refused.
REQUIRED = {
    "record": ("format", "cell", "model", "layers", "noise", "budget", "start", "plan", "eval",
               "profile", "training", "provenance"),
    "baselines": ("noise", "eval_sequences", "tune_sequences", "profile_sequences",
                  "profile_points", "methods", "profile"),
    "marker": ("kind", "format", "budget"),
    "floor": ("noise", "eval_sequences", "n", "d", "loss", "se", "minus_Bayes", "minus_Bayes_se"),
}  # fmt: skip
#: What may take a file's place and be read as it: a universal model of other depth, an --out that is a
#: link to an empty folder or one this process may write into (its owner's mode bits do not bind root).
ACCEPTED_IN_PLACE = ("swapped for a DIAG model of 2 layers", "a link to an empty folder",
                     "a read-only empty folder")  # fmt: skip


def _must_refuse(kind: str, label: str) -> bool:
    """Whether the change ``label`` (of :func:`tests.strategies.hostile.tampered_json`,
    :func:`~tests.strategies.hostile.tampered_model` or :data:`~tests.strategies.hostile.FOREIGN_OUT`) to a
    file of ``kind`` must be refused; a change to a part the reader leaves free may be read as it is."""
    if kind in ("model", "--out") or label.startswith("file: "):
        return label not in ACCEPTED_IN_PLACE
    path, _, change = label.partition(" ")
    if change.startswith("set to ") or change.removeprefix("is ") in NON_FINITE:
        return True
    if change.startswith("nested "):
        return int(change.split()[1]) > JSON_DEPTH_MAX
    return path in REQUIRED[kind] or (kind == "record" and path == "failed" and change == "removed")


def _words(kind: str, label: str) -> str:
    """Words the one line must hold beside the file's name: a strange archive's own check's."""
    variant = label.split(" (")[0]
    return REFUSED_WORDS[variant] if kind == "model" and variant in REFUSED_WORDS else ""


def _digest(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (links not followed): a file's SHA-256, ``dir``, or ``link -> target``."""
    seen = {}
    for at, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(at) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                seen[rel] = f"link -> {os.readlink(p)}"
            elif p.is_dir():
                seen[rel] = "dir"
            else:
                seen[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return seen


def _put(path: Path, raw: bytes | None) -> None:
    """``raw`` at ``path`` in place of what is there; ``None``: an empty directory."""
    if path.is_dir() and not path.is_symlink():
        path.rmdir()
    else:
        path.unlink(missing_ok=True)
    if raw is None:
        path.mkdir()
    else:
        path.write_bytes(raw)


def _baselines(out: Path, noise: str, budget: grid.Budget) -> None:
    """A setting's baselines file and its cached GD++ floor (``floor-<noise>.json``, made up: the report's check
    reads it back instead of evaluating ridge)."""
    atomic_write_json(out / "baselines" / f"{grid.slug(noise)}.json", fake_baselines(noise, budget))
    floor = {"noise": noise, "eval_sequences": budget.eval_sequences, "n": budget.n, "d": budget.d}
    atomic_write_json(
        out / "baselines" / f"floor-{grid.slug(noise)}.json",
        floor | {"loss": 0.2, "se": 0.01, "minus_Bayes": 0.19, "minus_Bayes_se": 0.01},
    )


def _quick_sweep(out: Path) -> None:
    """A finished quick sweep of :data:`QUICK_CELLS` (records, Fig. 4's model) with every baselines file and
    floor."""
    atomic_write_json(out / "lintf-sweep.json", MARKER)
    for nz in QUICK.noises:
        _baselines(out, nz, QUICK)
    for c in QUICK_CELLS:
        (out / "models" / c.name).mkdir(parents=True)
        (out / "models" / c.name / "metrics.json").write_bytes(fake_record(c, QUICK).to_json())
    save_model(out / "models" / QUICK_CELLS[0].name / "model.npz", FIG4["P"], FIG4["Q"])


def _copy_of_quick_sweep(out: Path) -> None:
    """:func:`_quick_sweep` in ``out``, copied from one made once beside the examples' folders (``out`` is
    ``root / "out"`` in a folder of :func:`_fresh`): a test's examples write and sync its files once."""
    made = out.parents[1] / "quick-sweep"
    if not made.exists():
        _quick_sweep(made)
    shutil.copytree(made, out)


def _tiny_sweep(out: Path) -> None:
    """A finished tiny sweep of Table 1: every cell's record, every baselines file and floor."""
    atomic_write_json(out / "lintf-sweep.json", MARKER | {"budget": "tiny"})
    for nz in TINY.noises:
        _baselines(out, nz, TINY)
    for c in grid.cells_for(TINY, ("table1",)):
        (out / "models" / c.name).mkdir(parents=True)
        (out / "models" / c.name / "metrics.json").write_bytes(fake_record(c, TINY).to_json())


@pytest.fixture
def trains_fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--budget tiny`` on the command line; its cells trained by :class:`tests.fakes.FakeCell`, its missing
    baselines files and floors made up (:func:`_baselines`; each then read back by the command's readers)."""
    monkeypatch.setitem(grid.BUDGETS, "tiny", TINY)
    monkeypatch.setattr(sweep, "sweep", functools.partial(sweep.sweep, cell_fn=FakeCell()))
    real = sweep.baselines_for

    def baselines_for(noise: str, budget: grid.Budget, out: Path) -> dict:
        path = out / "baselines" / f"{grid.slug(noise)}.json"
        if not path.exists():
            _baselines(out, noise, budget)
        return real(noise, budget, out)

    monkeypatch.setattr(sweep, "baselines_for", baselines_for)


def _reproduce(budget: str, parts: str, out: Path, runs: Path) -> list[str]:
    return [
        "reproduce",
        "--budget",
        budget,
        "--only",
        parts,
        *(["--no-train"] if budget == "quick" else []),
        "--json",
        "--out",
        str(out),
        "--runs",
        str(runs),
    ]


def _ends_well(argv: list[str], root: Path, names: str, refuse: bool, words: str = "") -> None:
    """Run ``lintf argv``: status 1 or 2 with one line naming ``names`` (and holding ``words``) and every entry
    under ``root`` as it was, or (unless it must ``refuse``) status 0 with nothing on stderr, every file that was
    there unchanged but the records of the cells it trained (its ``--json`` summary names them), and new files
    only under ``--out`` and ``--runs``."""
    before = _digest(root)
    rc, out, err = _run(argv)
    after = _digest(root)
    assert "Traceback" not in err, (argv, err)
    if rc != 0:
        lines = err.splitlines()
        assert rc in (1, 2) and len(lines) == 1 and out == "", (argv, rc, err)
        assert lines[0].startswith("lintf reproduce: error: "), lines
        assert any(n in lines[0] for n in names), (names, lines)
        assert words in lines[0], (words, lines)
        assert after == before, argv
        return
    assert not refuse, f"read as it is: {err or out[:300]}"
    assert err == "", (argv, err)
    dest = Path(os.path.realpath(argv[argv.index("--out") + 1]))
    trained = json.loads(out)["trained"]
    mine = [dest / "models" / c for c in trained]
    for rel, was in before.items():
        if after.get(rel) != was:
            assert any(Path(os.path.realpath(root / rel)).is_relative_to(m) for m in mine), rel
    for rel in set(after) - set(before):
        real = Path(os.path.realpath(root / rel))
        assert real.is_relative_to(dest) or real.is_relative_to(root / "runs"), rel


#: What a case tampers with: ``(budget, kind of file)``.
TAMPERED = [
    ("quick", "record"),
    ("quick", "baselines"),
    ("quick", "floor"),
    ("quick", "marker"),
    ("quick", "model"),
    ("tiny", "record"),
    ("tiny", "baselines"),
    ("tiny", "floor"),
    ("tiny", "marker"),
]
#: The parts a case's command draws beside the one that reads the tampered file (``table1``; ``fig4``
#: for Fig. 4's model): with budget quick, each figure and the beyond-the-grid section is drawn from
#: the files there; with budget tiny, the fake cells they need are trained first.
OTHER_PARTS = {
    "quick": tuple(p for p in grid.PARTS if p not in ("table1",)),
    "tiny": ("fig1", "fig3"),
}


def _tampered_case(root: Path, target: tuple[str, str], data: st.DataObject) -> None:
    budget, kind = target
    out = root / "out"
    (_copy_of_quick_sweep if budget == "quick" else _tiny_sweep)(out)
    b = grid.BUDGETS[budget]
    read = "fig4" if kind == "model" else "table1"
    others = data.draw(st.lists(st.sampled_from(OTHER_PARTS[budget]), max_size=2, unique=True))
    parts = ",".join(dict.fromkeys([read, *others]))
    if kind == "record":
        c = data.draw(
            st.sampled_from(QUICK_CELLS if budget == "quick" else grid.cells_for(TINY, ("table1",)))
        )
        path = out / "models" / c.name / "metrics.json"
        doc = json.loads(path.read_bytes())
        label, raw = data.draw(tampered_json(doc, RECORD_SPECIALS), label="record")
    elif kind == "baselines":
        path = out / "baselines" / f"{grid.slug(data.draw(st.sampled_from(b.noises)))}.json"
        label, raw = data.draw(tampered_json(json.loads(path.read_bytes())), label="baselines")
    elif kind == "floor":
        path = out / "baselines" / f"floor-{grid.slug(data.draw(st.sampled_from(b.noises)))}.json"
        label, raw = data.draw(tampered_json(json.loads(path.read_bytes())), label="floor")
    elif kind == "marker":
        path = out / "lintf-sweep.json"
        label, raw = data.draw(
            tampered_json(json.loads(path.read_bytes()), MARKER_SPECIALS), label="marker"
        )
    else:
        path = out / "models" / QUICK_CELLS[0].name / "model.npz"
        label, raw = data.draw(tampered_model(FIG4, OTHER_MODELS), label="model")
    _put(path, raw)
    _ends_well(
        _reproduce(budget, parts, out, root / "runs"),
        root,
        (str(path),) + ((f"--out {str(out)!r}",) if kind == "marker" else ()),
        _must_refuse(kind, label),
        _words(kind, label),
    )


def _foreign_case(root: Path, budget: str, data: st.DataObject) -> None:
    label, make = data.draw(foreign_out(), label="--out")
    out = make(root)
    _ends_well(
        _reproduce(budget, "table1", out, root / "runs"),
        root,
        (f"--out {str(out)!r}",),
        _must_refuse("--out", label),
    )


@pytest.fixture
def sweep_root(tmp_path: Path, trains_fakes: None, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder for the cases, and 1 GiB of memory whatever the machine has."""
    monkeypatch.setattr(archive, "memory_available", lambda: 2**30)
    return tmp_path


def _fresh(root: Path, name: str) -> Path:
    """A new, empty folder under ``root`` for one Hypothesis example (``root`` is the test's)."""
    k = 0
    while (root / f"{name}{k}").exists():
        k += 1
    (root / f"{name}{k}").mkdir()
    return root / f"{name}{k}"


@given(target=st.sampled_from(TAMPERED), data=st.data())
@settings(max_examples=12, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_a_tampered_sweep_file_is_one_line_or_read_as_it_is(
    sweep_root: Path, target: tuple[str, str], data: st.DataObject
) -> None:
    _tampered_case(_fresh(sweep_root, "case"), target, data)


@pytest.mark.slow
@given(target=st.sampled_from(TAMPERED), data=st.data())
@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_a_tampered_sweep_file_is_one_line_or_read_as_it_is_many(
    sweep_root: Path, target: tuple[str, str], data: st.DataObject
) -> None:
    _tampered_case(_fresh(sweep_root, "case"), target, data)


@given(budget=st.sampled_from(["quick", "tiny"]), data=st.data())
@settings(max_examples=8, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_an_out_that_is_not_a_sweeps_is_one_line_or_used_as_given(
    sweep_root: Path, budget: str, data: st.DataObject
) -> None:
    _foreign_case(_fresh(sweep_root, "case"), budget, data)


@pytest.mark.slow
@given(budget=st.sampled_from(["quick", "tiny"]), data=st.data())
@settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_an_out_that_is_not_a_sweeps_is_one_line_or_used_as_given_many(
    sweep_root: Path, budget: str, data: st.DataObject
) -> None:
    _foreign_case(_fresh(sweep_root, "case"), budget, data)


def _top_level_changes() -> list[tuple[str, str, object]]:
    """Each top-level key of :data:`REQUIRED` (and a record's ``failed``) removed, and given a value of
    another type, and the record's parts that reach the report beside them (``provenance.seconds``, added up):
    ``(kind, dotted key, value)``, value ``KeyError`` for removed."""
    out = [("record", "failed", KeyError)]
    out += [("record", "provenance.seconds", v) for v in ("soon", ["1"], 10**400)]
    for kind, keys in REQUIRED.items():
        out += [(kind, k, v) for k in keys for v in (KeyError, [{}])]
    return out


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind, key, value",
    _top_level_changes(),
    ids=lambda v: "removed" if v is KeyError else str(v)[:16],
)
def test_each_top_level_part_a_reader_needs_removed_or_retyped_is_one_line(
    sweep_root: Path, kind: str, key: str, value: object
) -> None:
    """What the generators draw now and then, every time: each part a reader needs, removed or of another type."""
    out = sweep_root / "out"
    _quick_sweep(out)
    path = {
        "record": out / "models" / QUICK_CELLS[1].name / "metrics.json",
        "baselines": out / "baselines" / f"{grid.slug(QUICK.noises[0])}.json",
        "marker": out / "lintf-sweep.json",
        "floor": out / "baselines" / f"floor-{grid.slug(QUICK.noises[0])}.json",
    }[kind]
    doc = json.loads(path.read_bytes())
    *parents, last = key.split(".")
    node = functools.reduce(lambda d, k: d[k], parents, doc)
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    path.write_text(json.dumps(doc))
    names = (str(path),) + ((f"--out {str(out)!r}",) if kind == "marker" else ())
    _ends_well(_reproduce("quick", "table1", out, sweep_root / "runs"), sweep_root, names, True)


#: ``OUT/convergence.json`` of the quick sweep above: the entry of a cell checked earlier (the
#: case checks another, so this one is kept and printed as it is).
EARLIER = QUICK_CELLS[2].name
CONVERGENCE = {
    "budget": "quick",
    "factor": 2,
    "cells": {
        EARLIER: {"loss": 0.3, "se": 0.01, "steps": 400, "factor": 2, "failed": None,
                  "loss_longer": 0.29, "se_longer": 0.01, "steps_longer": 800, "relative": -0.03,
                  "holds": True},
    },
}  # fmt: skip
#: Its parts :func:`numerics.reproduce.record.read_convergence` needs: removed, refused (the entry
#: itself may go: the check forgets it).
CONVERGENCE_REQUIRED = ("budget", "cells", f"cells.{EARLIER}.loss", f"cells.{EARLIER}.holds")


def _convergence_case(root: Path, data: st.DataObject) -> None:
    """``convergence.check`` of a quick sweep whose ``convergence.json`` is tampered with: one line
    naming the file before any cell is trained, nothing changed; or (a part it leaves free) it trains
    the cell again (a fake record) and the command's lines show every entry, earlier ones
    included."""
    out = root / "out"
    _copy_of_quick_sweep(out)
    atomic_write_json(out / "convergence.json", CONVERGENCE)
    focus = [tuple(k.split(".")) for k in CONVERGENCE_REQUIRED] + [("cells", EARLIER)]
    label, raw = data.draw(tampered_json(CONVERGENCE, focus=focus), label="convergence.json")
    _put(out / "convergence.json", raw)
    before = _digest(root)

    trained = []

    def cell_fn(cell: Cell, budget: grid.Budget, rundir: Path) -> dict:
        trained.append(cell.name)
        return {"metrics.json": fake_record(cell, budget).to_json()}

    from numerics.reproduce import convergence  # noqa: PLC0415 - as the command imports it

    try:
        res = convergence.check(QUICK, out, root / "runs", (QUICK_CELLS[1].name,), cell_fn=cell_fn)
    except LintfError as exc:
        line = str(exc)
        assert "\n" not in line and str(out / "convergence.json") in line, (label, line)
        assert _digest(root) == before and not trained, label
        return
    path, _, change = label.partition(" ")
    must = label.startswith("file: ") or (path in CONVERGENCE_REQUIRED and change == "removed")
    nested = change.startswith("nested ") and int(change.split()[1]) > JSON_DEPTH_MAX
    assert not (must or nested or change.removeprefix("is ") in NON_FINITE), f"read: {label}"
    assert len(cli_reproduce.convergence_lines(res)) == len(res["cells"]), label


@given(data=st.data())
@settings(max_examples=100, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_a_tampered_convergence_file_is_one_line_before_any_training(
    tmp_path: Path, data: st.DataObject
) -> None:
    _convergence_case(_fresh(tmp_path, "case"), data)


@pytest.mark.slow
@given(data=st.data())
@settings(max_examples=400, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_a_tampered_convergence_file_is_one_line_before_any_training_many(
    tmp_path: Path, data: st.DataObject
) -> None:
    _convergence_case(_fresh(tmp_path, "case"), data)
