"""Hostile input to the ``lintf`` command, in-process (:func:`numerics.cli.main`): exit status 2, one line on stderr,
no traceback, nothing created or changed on disk (:mod:`numerics.cli.validate`).

Every case is one bad argument or one malformed file on top of a command line that is otherwise valid.  Integer
and float options are read from the real parser, so every sub-command, present and future, gets its share.  The
default run draws a fast sample (``FAST``); ``-m slow`` draws ``SLOW`` cases.  The run directory of ``train`` gets
its own cases: corrupt checkpoint and config files, and an interrupt (a real SIGINT) before the first checkpoint,
which must leave nothing that blocks the same or a corrected command.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import signal
import zipfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from numerics import archive
from numerics.cli import COMMANDS, build_parser, footprint, main, validate
from numerics.model_file import save_model
from numerics.train import rundir
from tests.fakes import TINY_TRAIN
from tests.strategies.hostile import REFUSED_WORDS, hostile_json, refused_archives, tampered_json

FAST, SLOW = 200, 2000
RUN = TINY_TRAIN
COUNT = {"cases": 0}


# ---- files ---------------------------------------------------------------------------------------------------
def _header_npz(path: Path, shapes: dict[str, tuple[int, ...]]) -> None:
    """An .npz whose headers claim ``shapes`` (float64) but hold no data: refused from the headers alone."""
    with zipfile.ZipFile(path, "w") as z:
        for k, shape in shapes.items():
            buf = io.BytesIO()
            np.lib.format.write_array_header_1_0(
                buf, {"descr": "<f8", "fortran_order": False, "shape": shape}
            )
            z.writestr(f"{k}.npy", buf.getvalue())


def _world(root: Path) -> dict[str, Path]:
    """A good model (L=1, d=2) and data file, and one malformed file of each kind."""
    rng = np.random.default_rng(0)
    P, Q = rng.normal(size=(2, 1, 1, 3, 3)) * 0.1
    X, y, xq = rng.normal(size=(4, 5, 2)), rng.normal(size=(4, 5)), rng.normal(size=(4, 2))
    f = {k: root / f"{k}.npz" for k in ("model", "data")}
    save_model(f["model"], P, Q)
    np.savez(f["data"], X=X, y=y, x_query=xq, y_query=rng.normal(size=4))
    bad_models = {
        "m_text": None,
        "m_empty": None,
        "m_truncated": None,
        "m_noP": dict(Q=Q),
        "m_rank3": dict(P=P[0], Q=Q[0]),
        "m_mismatch": dict(P=P, Q=Q[..., :2, :2]),
        "m_strings": dict(P=np.array(["a"]), Q=Q),
        "m_complex": dict(P=P + 1j, Q=Q),
        "m_nan": dict(P=P * np.nan, Q=Q),
        "m_inf": dict(P=P, Q=np.where(Q > 0, np.inf, Q)),
        "m_meta_list": dict(P=P, Q=Q, meta=np.asarray("[1]")),
        "m_meta_bad": dict(P=P, Q=Q, meta=np.asarray("{no")),
        "m_d0": dict(P=P[..., :1, :1], Q=Q[..., :1, :1]),
    }
    bad_data = {
        "d_missing": dict(X=X, y=y),
        "d_rank2": dict(X=X[0], y=y, x_query=xq),
        "d_ywrong": dict(X=X, y=y[:, :2], x_query=xq),
        "d_dim": dict(X=X[..., :1], y=y, x_query=xq[:, :1]),
        "d_strings": dict(X=X, y=y, x_query=np.array(["a", "b"])),
        "d_nan": dict(X=X * np.nan, y=y, x_query=xq),
        "d_yq": dict(X=X, y=y, x_query=xq, y_query=np.ones(3)),
        "d_sigma": dict(X=X, y=y, x_query=xq, sigma=-np.ones(4)),
        "d_empty": dict(X=X[:0], y=y[:0], x_query=xq[:0]),
    }
    for name, arrays in {**bad_models, **bad_data}.items():
        f[name] = root / f"{name}.npz"
        if arrays is not None:
            np.savez(f[name], **arrays)
    f["m_text"].write_text("P,Q\n1,2\n")
    f["m_empty"].write_bytes(b"")
    f["m_truncated"].write_bytes(f["model"].read_bytes()[:200])
    f["m_huge"], f["d_huge"] = root / "m_huge.npz", root / "d_huge.npz"
    _header_npz(f["m_huge"], {"P": (10**4, 1, 10**4, 10**4), "Q": (10**4, 1, 10**4, 10**4)})
    _header_npz(f["d_huge"], {"X": (10**9, 10**3, 2), "y": (10**9, 10**3), "x_query": (10**9, 2)})
    f["m_directory"] = root / "a_directory"
    f["m_directory"].mkdir()
    f["m_missing"] = root / "absent.npz"
    f["a_file"] = root / "a_file"
    f["a_file"].write_text("not a directory")
    return f


#: Not compared: git's and the tools' own directories, the environment, and the repository's git-ignored run
#: directories, which another lintf process (a sweep) may be writing while the tests run.
SKIP = (".git", "__pycache__", ".hypothesis", ".pytest_cache", ".venv", "runs")


def _snapshot(root: Path) -> dict[str, tuple[int, str]]:
    out = {}
    for dirpath, dirnames, files in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIP]
        for name in files + [d + "/" for d in dirnames]:
            p = Path(dirpath) / name.rstrip("/")
            st_ = p.stat()
            digest = (
                hashlib.sha1(p.read_bytes()).hexdigest()
                if p.is_file() and st_.st_size < 2**20
                else ""
            )
            out[str(p.relative_to(root)) + ("/" if name.endswith("/") else "")] = (
                st_.st_mtime_ns,
                digest,
            )
    return out


# ---- cases ---------------------------------------------------------------------------------------------------
def _options(
    command: str,
) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[float | None, bool]]]:
    """The checked integer and float options of ``command``'s parser: ``{flag: range}``."""
    sub = next(
        a for a in build_parser()._actions if hasattr(a, "choices") and isinstance(a.choices, dict)
    )
    ints, floats = {}, {}
    for a in sub.choices[command]._actions:
        if a.option_strings and a.dest in validate.INT_ARGS:
            ints[a.option_strings[-1]] = validate.INT_ARGS[a.dest]
        elif a.option_strings and a.dest in validate.FLOAT_ARGS:
            floats[a.option_strings[-1]] = validate.FLOAT_ARGS[a.dest]
    return ints, floats


def _bad_int(lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from([str(lo - 1), str(hi + 1), "1e23", "2.5", "ten", "", "0x10", str(10**30)]),
        st.integers(max_value=lo - 1).map(str),
        st.integers(min_value=hi + 1).map(str),
    )


def _bad_float(lo: float | None, inclusive: bool) -> st.SearchStrategy[str]:
    bad = ["nan", "inf", "-inf", "x", "", "1e999"]
    if lo is not None:
        bad += [repr(lo - 1.0)] + ([] if inclusive else [repr(lo)])
    return st.sampled_from(bad)


BAD_NOISE = [
    "bogus",
    "fixed:",
    "fixed:-1",
    "uniform:nan",
    "categorical:1,,2",
    "fixed:1e300",
    "uniform:1e7",
    "gauss:1",
    "fixed:1,2",
    "categorical:",
    "uniform:inf",
]


def _set(argv: list[str], flag: str, value: str) -> list[str]:
    argv = list(argv)
    if flag in argv:
        argv[argv.index(flag) + 1] = value
        return argv
    return argv + [flag, value]


def _cases(f: dict[str, Path], out: Path) -> st.SearchStrategy[list[str]]:
    M, D = str(f["model"]), str(f["data"])
    base = {
        "verify": ["verify", "--latex", str(out / "claims.md")],
        "baselines": [
            "baselines",
            "--noise",
            "fixed:1",
            "--n",
            "5",
            "--d",
            "2",
            "--eval-sequences",
            "8",
            "--tune-sequences",
            "8",
        ],
        "train": ["train", *RUN, "--out", str(out / "run")],
        "predict": ["predict", M, D, "--out", str(out / "p.npy")],
        "inspect": ["inspect", M, D, "--plot", str(out / "w.png")],
        "reproduce": [
            "reproduce",
            "--budget",
            "quick",
            "--out",
            str(out / "res"),
            "--runs",
            str(out / "runs"),
        ],
        "bench": [
            "bench",
            "--models",
            "diag",
            "--layers",
            "1",
            "--batch",
            "8",
            "--steps",
            "1",
            "--reps",
            "1",
            "--no-plain",
        ],
    }
    models = [str(f[k]) for k in f if k.startswith("m_")] + [D]
    datas = [str(f[k]) for k in f if k.startswith("d_")] + [
        str(f["m_missing"]),
        str(f["m_text"]),
        M,
    ]
    bad_outs = [M, D, str(f["m_directory"]), str(f["a_file"] / "x"), ""]
    per_command = {
        "verify": st.sampled_from(
            [["--latex", p] for p in (str(f["m_directory"]), str(f["a_file"] / "x.md"), "")]
            + [["--only", "no_such_claim"]]
        ),
        "baselines": st.one_of(
            st.sampled_from(BAD_NOISE).map(lambda s: ["--noise", s]),
            st.sampled_from(
                [
                    ["--methods", "OLS,Foo"],
                    ["--n", "2"],
                    ["--nodes", "7"],
                    ["--d", "100000"],
                    ["--eval-sequences", "100000000", "--d", "1000"],
                ]
            ),
        ),
        "train": st.one_of(
            st.sampled_from(BAD_NOISE).map(lambda s: ["--noise", s]),
            st.sampled_from(
                [
                    ["--model", "huge"],
                    ["--dtype", "float16"],
                    ["--heads", "2", "--model", "gdpp"],
                    ["--init", "spectral"],
                    ["--y-step", "x"],
                    ["--trust", "0.5"],
                    ["--warmup", "9"],
                    ["--diag-steps", "1"],
                    ["--out", str(f["a_file"])],
                    ["--out", str(f["a_file"] / "run")],
                    ["--d", "100000"],
                    ["--seeds", "100000000"],
                    ["--batch", "1000000000"],
                ]
            ),
        ),
        "predict": st.one_of(
            st.sampled_from(models).map(lambda p: ["MODEL", p]),
            st.sampled_from(datas).map(lambda p: ["DATA", p]),
            st.sampled_from(bad_outs).map(lambda p: ["--out", p]),
        ),
        "inspect": st.one_of(
            st.sampled_from(models).map(lambda p: ["MODEL", p]),
            st.sampled_from(datas).map(lambda p: ["DATA", p]),
            st.sampled_from(bad_outs).map(lambda p: ["--plot", p]),
            st.sampled_from(BAD_NOISE).map(lambda s: ["DATA", None, "--noise", s]),
            st.just(["DATA", None, "--sequences", "100000000"]),
        ),
        "reproduce": st.sampled_from(
            [
                ["--budget", "huge"],
                ["--only", "fig9"],
                ["--out", str(f["a_file"])],
                ["--runs", str(f["a_file"] / "r")],
                ["--noise", "uniform:3"],  # a setting the quick budget does not have
                ["--noise", "bogus"],
            ]
        ),
        "bench": st.one_of(
            st.sampled_from(BAD_NOISE).map(lambda s: ["--noise", s]),
            st.sampled_from([["--models", "nope"], ["--models", ","], ["--batch", "2000000000"]]),
        ),
    }

    def apply(command: str, edit: list) -> list[str]:
        argv = base[command]
        if edit[0] in ("MODEL", "DATA"):
            i = 1 if edit[0] == "MODEL" else 2
            argv = argv[:i] + ([] if edit[1] is None else [edit[1]]) + argv[i + 1 :]
            edit = edit[2:]
        for k in range(0, len(edit), 2):
            argv = _set(argv, edit[k], edit[k + 1])
        return argv

    def generic(command: str) -> st.SearchStrategy[list[str]]:
        ints, floats = _options(command)
        head = base.get(command, [command])
        opts = [st.just(head + ["--no-such-option"])]
        opts += [_bad_int(*r).map(lambda v, fl=fl: _set(head, fl, v)) for fl, r in ints.items()]
        opts += [_bad_float(*r).map(lambda v, fl=fl: _set(head, fl, v)) for fl, r in floats.items()]
        return st.one_of(opts)

    return st.one_of(
        [generic(c) for c in COMMANDS]
        + [s.map(lambda e, c=c: apply(c, e)) for c, s in per_command.items()]
    )


def _refused(argv: list[str], root: Path) -> str:
    """Run ``argv``; assert exit 2, one stderr line, no stdout, nothing changed under ``root``; return the line."""
    before = _snapshot(root)
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        rc = main(argv)
    COUNT["cases"] += 1
    lines = err.getvalue().splitlines()
    assert rc == 2, (argv, rc, err.getvalue()[-2000:])
    assert len(lines) == 1 and lines[0].startswith("lintf") and ": error: " in lines[0], (
        argv,
        err.getvalue(),
    )
    assert "Traceback" not in err.getvalue() and out.getvalue() == "", (argv, out.getvalue())
    assert _snapshot(root) == before, argv
    return lines[0]


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Path], Path, Path]:
    """Input files, an empty ``out`` directory, the working directory set to the sandbox, 1 GiB of memory."""
    root = tmp_path / "sandbox"
    root.mkdir()
    monkeypatch.chdir(root)
    monkeypatch.setattr(footprint, "available_memory", lambda: 2**30)
    (root / "out").mkdir()
    return _world(root), root / "out", root


def _fuzz(sandbox, examples: int) -> None:  # noqa: ANN001
    files, out, root = sandbox
    repo = Path(__file__).resolve().parents[2]
    repo_before = _snapshot(repo)
    start = COUNT["cases"]

    @settings(
        max_examples=examples, database=None, deadline=None, suppress_health_check=list(HealthCheck)
    )
    @given(argv=_cases(files, out))
    def check(argv: list[str]) -> None:
        _refused(argv, root)

    check()
    assert _snapshot(repo) == repo_before
    print(f"{COUNT['cases'] - start} generated cases, all refused with one line")


@pytest.mark.slow  # minutes of compilation; test_every_example_of_each_command_is_refused is its fast sibling
def test_fuzz_cli_fast_sample(sandbox) -> None:  # noqa: ANN001
    _fuzz(sandbox, FAST)


@pytest.mark.slow
def test_fuzz_cli(sandbox) -> None:  # noqa: ANN001
    _fuzz(sandbox, SLOW)


def test_every_example_of_each_command_is_refused(sandbox) -> None:  # noqa: ANN001
    """The listed hostile inputs, one each, with the message's key words."""
    f, out, root = sandbox
    M, D = str(f["model"]), str(f["data"])
    for argv, words in [
        (["predict", M, D, "--out", M], "is the model file"),
        (["predict", M, D, "--out", D], "is the data file"),
        (["train", *RUN, "--batch", "1000000000", "--out", str(out / "R")], "memory"),
        (["baselines", "--d", "100000", "--methods", "ConstRR", "--noise", "uniform:1"], "memory"),
        (
            ["baselines", "--nodes", "100000000", "--noise", "uniform:1"],
            "lower --chunk-sequences, --nodes, --d or --n",
        ),
        (["baselines", "--noise", "fixed:1e300"], "noise levels must be in [0, 1e+06]"),
        (
            ["baselines", "--noise", "uniform:1", "--methods", "OLS", "--nodes", "16"],
            "--nodes 16 applies to Bayes, which --methods leaves out",
        ),
        (
            [
                "baselines",
                "--noise",
                "uniform:1",
                "--methods",
                "OLS,Bayes",
                "--tune-sequences",
                "70",
            ],
            "--tune-sequences 70 applies to ConstRR, TunedRR, GD, which --methods leaves out",
        ),
        (
            ["baselines", "--noise", "uniform:1", "--methods", "OLS,OLS"],
            "methods must name each baseline once; got OLS more than once",
        ),
        (["baselines", "--noise", "uniform:-1"], "got -1.0 (noise levels must be in [0, 1e+06])"),
        (["train", *RUN, "--seed", "1e23"], "--seed must be >= 0 and <= 2147483647"),
        (
            ["train", *RUN, "--lr", "1e308", "--out", str(out / "R")],
            "--lr must be >= 1e-30 and <= 1e+06, got 1e+308",
        ),
        (["train", *RUN, "--clip", "1e7", "--out", str(out / "R")], "--clip must be <= 1e+06"),
        (
            ["train", *RUN, "--lr", "1e-320", "--out", str(out / "R")],
            "--lr must be >= 1e-30 and <= 1e+06",
        ),
        (["train", *RUN, "--clip", "1e-320", "--out", str(out / "R")], "--clip must be >= 1e-30"),
        (
            ["train", *RUN, "--huber", "1e-320", "--out", str(out / "R")],
            "--huber must be 0 (the squared loss) or >= 1e-30",
        ),
        (["train", *RUN, "--huber", "1e300", "--out", str(out / "R")], "--huber must be <= 1e+06"),
        (["train", *RUN, "--trust", "2e6", "--out", str(out / "R")], "--trust must be <= 1e+06"),
        (
            ["train", *RUN, "--gdpp-xx", "free", "--out", str(out / "R")],
            "--gdpp-xx constrains GD++'s",
        ),
        (
            [
                "train",
                "--model",
                "gdpp",
                "--layers",
                "1",
                "--y-step",
                "scaled",
                "--out",
                str(out / "R"),
            ],
            "--y-step scales the step of q_y, which GD++ does not have",
        ),
        (["inspect", M, "--seed", str(2**32)], "--seed must be >= 0"),
        (["reproduce", "--out", str(f["a_file"])], "is a file"),
        (
            ["reproduce", "--budget", "quick", "--noise", "uniform:1"],
            "--noise must be one of budget quick's settings",
        ),
        (
            ["reproduce", "--budget", "quick", "--cell", "diag-L9-uniform1"],
            "--cell must name a cell of budget quick",
        ),
        (["reproduce", "--budget", "quick", "--jobs", "0"], "--jobs must be >= 1"),
        (
            ["reproduce", "--cell", "diag-L1-uniform0", "--noise", "uniform:0"],
            "--noise: not allowed with argument --cell",
        ),
        (
            ["reproduce", "--budget", "quick", "--no-train", "--only", ""],
            "--only takes a comma list out of",
        ),
        (["verify", "--latex", str(f["a_file"] / "x.md")], "is a file"),
        (["verify", "--latex", str(f["a_file"])], "exists; choose a new file name"),
        (["predict", M, D, "--out", str(f["a_file"])], "exists; choose a new file name"),
        (["inspect", M, D, "--plot", str(f["a_file"])], "exists; choose a new file name"),
        (["bench", "--ttq", "--noise", "bogus"], "noise spec"),
        (
            ["bench", "--noise", "uniform:3"],
            "--noise uniform:3 sets the time-to-quality run; add --ttq",
        ),
        (["predict", str(f["m_huge"]), D], "8000000000000 bytes, but its entry holds 128"),
    ]:
        assert words in _refused(argv, root), argv


_traced_key = jax.jit(lambda x: jax.random.key_data(jax.random.PRNGKey(x)))


@given(a=st.integers(0, validate.SEED_MAX), b=st.integers(0, validate.SEED_MAX))
@settings(max_examples=50)
def test_accepted_seeds_never_alias(a: int, b: int) -> None:
    """An accepted seed ``s`` is the key ``(0, s)`` in 64- and 32-bit mode and traced as training's ``int32``:
    distinct seeds give distinct keys."""
    for s in (a, b, 0, validate.SEED_MAX):
        want = [0, s]
        assert jax.random.key_data(jax.random.PRNGKey(s)).tolist() == want
        with jax.enable_x64(False):
            assert jax.random.key_data(jax.random.PRNGKey(s)).tolist() == want
            traced = _traced_key(jnp.asarray(s, jnp.int32))
            assert traced.tolist() == want
    assert (a == b) == (
        jax.random.key_data(jax.random.PRNGKey(a)).tolist()
        == jax.random.key_data(jax.random.PRNGKey(b)).tolist()
    )
    assert validate.seed(a) == a
    for bad in (-1, validate.SEED_MAX + 1, 1e23, 2.0, True):
        with pytest.raises(validate.LintfError, match="--seed must be an integer in"):
            validate.seed(bad)


# ---- train's run directory ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("run") / "R"
    assert main(["train", *RUN, "--out", str(run)]) == 0
    return run


CORRUPT = st.one_of(
    st.tuples(
        st.just("checkpoint.npz"),
        st.sampled_from(["garbage", "empty", "json", "other_shape", "nan"]),
        st.just(0),
    ),
    st.tuples(st.just("checkpoint.npz"), st.just("truncate"), st.integers(0, 10**6)),
    st.tuples(
        st.just("config.json"),
        st.sampled_from(["garbage", "empty", "list", "truncate"]),
        st.integers(1, 50),
    ),
)


def _corrupt(path: Path, kind: str, k: int) -> None:
    raw = path.read_bytes()
    if kind == "truncate":
        path.write_bytes(raw[: k % len(raw)])
    elif kind in ("garbage", "empty", "json", "list"):
        path.write_bytes(
            {"garbage": b"\x00\xffnot this", "empty": b"", "json": b"{}", "list": b"[1, 2]"}[kind]
        )
    else:
        with np.load(path) as z:
            arrays = {n: z[n] for n in z.files}
        if kind == "other_shape":
            arrays["leaf_0"] = np.zeros((7, 7), arrays["leaf_0"].dtype)
        else:
            arrays["leaf_0"] = np.full_like(arrays["leaf_0"], np.nan)
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        path.write_bytes(buf.getvalue())


@given(case=CORRUPT)
@settings(max_examples=12, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_corrupt_run_directory_is_named_never_overwritten(
    finished_run: Path, tmp_path_factory, case
) -> None:  # noqa: ANN001
    name, kind, k = case
    run = tmp_path_factory.mktemp("corrupt") / "R"
    shutil.copytree(finished_run, run)
    _corrupt(run / name, kind, k)
    line = _refused(["train", *RUN, "--out", str(run)], run.parent)
    assert name in line and "delete" in line and "corrupt" in line, line


def _run_files(run: Path) -> dict[str, np.ndarray]:
    with np.load(run / "checkpoint.npz") as z:
        return {k: z[k] for k in z.files}


def _hostile_run_file(run: Path, data: st.DataObject) -> tuple[str, str, bytes, str]:
    """One file of the finished ``run`` made hostile: ``(file, label, bytes, words)``.  The checkpoint
    as a strange archive (:data:`tests.strategies.hostile.REFUSED`, on its ``meta`` or a state
    array: ``words`` are that check's), its ``meta`` tampered with (a part removed, of another type,
    past float64, nested deep), or ``config.json`` or ``metrics.json`` as hostile JSON."""
    arrays = _run_files(run)
    kind = data.draw(st.sampled_from(["archive", "meta", "config.json", "metrics.json"]))
    if kind == "archive":
        label, raw = data.draw(refused_archives(arrays, ("meta", "leaf_0", "leaf_1")))
        return "checkpoint.npz", label, raw, REFUSED_WORDS[label.split(" (")[0]]
    if kind == "meta":
        doc = json.loads(str(arrays["meta"]))
        label, raw = data.draw(tampered_json(doc).filter(lambda c: c[1] is not None))
        buf = io.BytesIO()
        np.savez(buf, **(arrays | {"meta": np.asarray(raw.decode("latin-1"))}))
        return "checkpoint.npz", f"meta: {label}", buf.getvalue(), ""
    label, raw = data.draw(hostile_json("object"))
    return kind, label, raw, ""


def _hostile_run_case(finished_run: Path, root: Path, data: st.DataObject) -> None:
    """``lintf train`` on the finished run with one hostile file: one line naming the file, nothing
    changed; or (a part of a checkpoint's meta that a finished run leaves unused) the run's own
    result, nothing changed."""
    run = root / "R"
    shutil.copytree(finished_run, run)
    name, label, raw, words = _hostile_run_file(run, data)
    (run / name).write_bytes(raw)
    before = _snapshot(root)
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        rc = main(["train", *RUN, "--out", str(run)])
    COUNT["cases"] += 1
    lines = err.getvalue().splitlines()
    assert "Traceback" not in err.getvalue() and _snapshot(root) == before, (label, err.getvalue())
    if rc == 0 and label.startswith("meta: "):
        return
    assert rc == 2 and len(lines) == 1 and out.getvalue() == "", (label, rc, err.getvalue())
    assert name in lines[0] and "corrupt" in lines[0] and "delete" in lines[0], (label, lines)
    assert words in lines[0], (label, words, lines)


@given(data=st.data())
@settings(max_examples=16, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_a_hostile_file_in_a_run_directory_is_one_line_naming_it(
    finished_run: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch, data
) -> None:  # noqa: ANN001
    monkeypatch.setattr(archive, "memory_available", lambda: 2**30)
    _hostile_run_case(finished_run, tmp_path_factory.mktemp("hostile"), data)


@pytest.mark.slow
@given(data=st.data())
@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_a_hostile_file_in_a_run_directory_is_one_line_naming_it_many(
    finished_run: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch, data
) -> None:  # noqa: ANN001
    monkeypatch.setattr(archive, "memory_available", lambda: 2**30)
    _hostile_run_case(finished_run, tmp_path_factory.mktemp("hostile"), data)


@pytest.fixture
def default_sigint():
    """Python's own SIGINT handler (it raises KeyboardInterrupt) for the test, whatever an earlier test of the same
    process installed; the previous handler comes back afterwards."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _interrupt_before_first_checkpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real SIGINT delivered while the first checkpoint is about to be written."""
    real = rundir.save_checkpoint

    def save(out, state, res):  # noqa: ANN001, ANN202
        if not (Path(out) / "checkpoint.npz").exists():
            os.kill(os.getpid(), signal.SIGINT)
        return real(out, state, res)

    monkeypatch.setattr(rundir, "save_checkpoint", save)


def test_interrupt_before_first_checkpoint_blocks_nothing(
    tmp_path: Path,
    monkeypatch,
    capsys,  # noqa: ANN001
    default_sigint,
) -> None:  # noqa: ANN001
    """Interrupted before its first checkpoint, a run leaves no checkpoint; a corrected command then runs in the
    same directory (and the same command would too)."""
    run = tmp_path / "R"
    with monkeypatch.context() as m:
        _interrupt_before_first_checkpoint(m)
        assert main(["train", *RUN, "--out", str(run)]) == 130
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "interrupted" in err, err
    assert not (run / "checkpoint.npz").exists()
    # another seed: the corrected command, with the programs the tiny run already compiled
    assert main(["train", *_set(RUN, "--seed", "5"), "--out", str(run)]) == 0
    assert (
        json.loads((run / "config.json").read_text())["seed"] == 5 and (run / "model.npz").exists()
    )


@pytest.mark.slow
def test_interrupt_after_a_checkpoint_resumes_bit_identically(
    tmp_path: Path,
    monkeypatch,
    finished_run,  # noqa: ANN001
    default_sigint,
) -> None:  # noqa: ANN001
    """SIGINT after the first checkpoint; the same command then ends with the uninterrupted run's model."""
    real, run = rundir.save_checkpoint, tmp_path / "R"

    def save(out, state, res):  # noqa: ANN001, ANN202
        real(out, state, res)
        os.kill(os.getpid(), signal.SIGINT)

    with monkeypatch.context() as m:
        m.setattr(rundir, "save_checkpoint", save)
        assert main(["train", *RUN, "--out", str(run)]) == 130
    assert (run / "checkpoint.npz").exists() and not (run / "model.npz").exists()
    assert main(["train", *RUN, "--out", str(run)]) == 0
    for k in ("P", "Q"):
        with np.load(run / "model.npz") as a, np.load(finished_run / "model.npz") as b:
            np.testing.assert_array_equal(a[k], b[k])


def test_an_interrupted_command_that_cannot_resume_does_not_say_it_can(
    tmp_path: Path, monkeypatch, capsys
) -> None:  # noqa: ANN001
    from numerics.cli import predict

    def stop(args):  # noqa: ANN001, ANN202
        raise KeyboardInterrupt

    monkeypatch.setattr(predict, "run", stop)
    model = (
        Path(__file__).resolve().parents[2]
        / "results"
        / "quick"
        / "models"
        / "diag-L1-uniform5"
        / "model.npz"
    )
    data = tmp_path / "data.npz"
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2, 3, 10))
    np.savez(data, X=X, y=X.sum(-1), x_query=X[:, 0])
    assert main(["predict", str(model), str(data), "--out", str(tmp_path / "p.npy")]) == 130
    err = capsys.readouterr().err.strip()
    assert (
        err == "lintf predict: interrupted; nothing was written"
        and not (tmp_path / "p.npy").exists()
    )
