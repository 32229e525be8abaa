"""Files a user hands lintf that are damaged, unreadable or not lintf's: each is a one-line error before any work,
and nothing the user has is replaced."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from numerics.baselines import gdpp_floor
from numerics.cli import main
from numerics.model_file import save_model

D = 2


@pytest.fixture()
def model(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    path = tmp_path / "model.npz"
    save_model(
        path,
        0.1 * rng.standard_normal((2, 1, D + 1, D + 1)),
        0.1 * rng.standard_normal((2, 1, D + 1, D + 1)),
        {"kind": "full"},
    )
    return path


def data(B: int = 4, n: int = 5, y_scale: float = 1.0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {
        "X": rng.standard_normal((B, n, D)),
        "y": rng.standard_normal((B, n)),
        "x_query": rng.standard_normal((B, D)),
        "y_query": y_scale * rng.standard_normal(B),
    }


def corrupt_npz(path: Path, arrays: dict[str, np.ndarray] | None = None, name: str = "X") -> Path:
    """An ``.npz`` of ``arrays`` (default a data file of 2000 sequences, 160 kB) whose zip directory is intact but
    one byte of ``name``'s data is flipped: its CRC check fails once ``name`` is read to its end, which reading its
    header alone does not do."""
    buf = io.BytesIO()
    np.savez(buf, **(data(B=2000) if arrays is None else arrays))
    raw = bytearray(buf.getvalue())
    with zipfile.ZipFile(io.BytesIO(bytes(raw))) as z:
        info = z.getinfo(f"{name}.npy")
    raw[info.header_offset + 30 + len(info.filename) + info.extra.__len__() + 200] ^= (
        0xFF  # inside the array's data
    )
    path.write_bytes(bytes(raw))
    return path


@pytest.mark.parametrize("command", ["predict", "inspect"])
def test_a_data_file_that_fails_its_crc_is_a_one_line_error(
    command: str, model: Path, tmp_path: Path, capsys
) -> None:
    bad = corrupt_npz(tmp_path / "bad.npz")
    assert main([command, str(model), str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"data file {str(bad)!r} is not a readable .npz" in err, (
        err
    )


def test_an_input_to_convert_that_fails_its_crc_is_a_one_line_error(tmp_path: Path, capsys) -> None:
    W = np.ones((D + 1, 500))
    bad = corrupt_npz(tmp_path / "bad.npz", {"W_Q": W, "W_K": W, "W_V": W, "W_O": W.T}, "W_Q")
    assert main(["convert", str(bad), "--out", str(tmp_path / "o.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        len(err.splitlines()) == 1
        and "is not a readable .npz" in err
        and not (tmp_path / "o.npz").exists()
    ), err


def test_a_loss_past_float64_is_an_error_and_nothing_is_written(
    model: Path, tmp_path: Path, capsys
) -> None:
    np.savez(tmp_path / "big.npz", **data(y_scale=1e160))
    out = tmp_path / "p.npy"
    with np.errstate(all="raise"):  # no warning on the way to the error either
        rc = main(["predict", str(model), str(tmp_path / "big.npz"), "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert (
        rc == 2 and len(err.splitlines()) == 1 and "loss on y_query" in err and "not finite" in err
    ), err
    assert "nothing written" in err and not out.exists()


def test_a_layer_whose_loss_is_not_finite_is_an_error(
    model: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    """Finite implicit weights, a read-out past float64: ``inspect`` names the layer rather than printing ``inf``."""
    from numerics.evaluate import inspector

    real = inspector.summary
    monkeypatch.setattr(
        inspector,
        "summary",
        lambda ins: [r | {"loss": np.inf} if r["layer"] == 2 else r for r in real(ins)],
    )
    np.savez(tmp_path / "d.npz", **data())
    assert main(["inspect", str(model), str(tmp_path / "d.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "loss of layer 2 is not finite" in err, err


def test_an_unreadable_printed_table_is_a_one_line_error(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    path = tmp_path / "printed.csv"
    path.write_text("noise,depth,value\nuniform:5,2,0.3\n")

    def denied(*a, **k):  # as chmod 000 does for a user other than root
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("numerics.io.open", denied, raising=False)  # the module's, not builtins'
    with pytest.raises(ValueError, match="--printed .*: cannot be read: Permission denied"):
        gdpp_floor.read_printed(path)
    assert main(["verify", "--only", "gram_map", "--printed", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("lintf verify: error: --printed") and "\n" not in err


@pytest.mark.parametrize(
    "mine",
    [
        ("report.md", "# My own report\n"),
        ("report.md", "# Reproduction report: budget `quick`\n"),
        ("models/x/metrics.json", "{}"),
        ("baselines/uniform0.json", "{}"),
        ("table1.md", "| mine |\n"),
    ],
)
@pytest.mark.parametrize("extra", [[], ["--no-train"], ["--no-train", "--only", "table1"]])
def test_reproduce_keeps_what_a_non_empty_out_without_the_sweep_marker_holds(
    mine: tuple[str, str], extra: list[str], tmp_path: Path, capsys
) -> None:
    """Only ``lintf-sweep.json`` makes ``--out`` a sweep's: a report, a record or a baselines file is no proof, and
    nothing of the user's is replaced."""
    out = tmp_path / "out"
    (out / mine[0]).parent.mkdir(parents=True)
    (out / mine[0]).write_text(mine[1])
    rc = main(
        [
            "reproduce",
            "--budget",
            "quick",
            "--out",
            str(out),
            "--runs",
            str(tmp_path / "runs"),
            *extra,
        ]
    )
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "holds no lintf-sweep.json" in err, err
    assert [p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()] == [mine[0]]
    assert (out / mine[0]).read_text() == mine[1] and not (tmp_path / "runs").exists()


def test_reproduce_goes_on_in_its_own_budgets_out(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "lintf-sweep.json").write_text('{"budget": "quick", "format": 2, "kind": "lintf-sweep"}')
    rc = main(
        [
            "reproduce",
            "--budget",
            "quick",
            "--no-train",
            "--only",
            "table1",
            "--json",
            "--out",
            str(out),
            "--runs",
            str(tmp_path / "runs"),
        ]
    )
    assert rc == 0 and json.loads(capsys.readouterr().out)["budget"] == "quick"
    assert (out / "report.md").read_text().startswith("# Reproduction report: budget `quick`")
    assert main(["reproduce", "--budget", "paper", "--no-train", "--out", str(out)]) == 2
    assert "holds the sweep of budget 'quick'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "case, says",
    [
        ("noise", "--noise 'fixed:1e7': noise levels must be in"),
        ("x", "--x: input distribution must be"),
        ("empty out", "--out must name a file"),
        ("in is a directory", "IN.npz"),
        ("out is in", "is IN.npz"),
    ],
)
def test_convert_checks_its_options_before_reading_its_input(
    case: str, says: str, model: Path, tmp_path: Path, capsys
) -> None:
    out, dirs = str(tmp_path / "o.npz"), tmp_path / "dir.npz"
    dirs.mkdir()
    argv = {
        "noise": [str(model), "--out", out, "--noise", "fixed:1e7"],
        "x": [str(model), "--out", out, "--x", "bad"],
        "empty out": [str(model), "--out", ""],
        "in is a directory": [str(dirs), "--out", out],
        "out is in": [str(model), "--out", str(model)],
    }[case]
    before = model.read_bytes()
    assert main(["convert", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith("lintf convert: error: ") and len(err.splitlines()) == 1 and says in err
    ), err
    assert not (tmp_path / "o.npz").exists() and model.read_bytes() == before


def test_train_refuses_an_empty_out(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert (
        main(
            [
                "train",
                "--model",
                "diag",
                "--layers",
                "1",
                "--steps",
                "1",
                "--batch",
                "8",
                "--out",
                "",
            ]
        )
        == 2
    )
    assert (
        "--out must name a directory" in capsys.readouterr().err
        and not (tmp_path / "runs").exists()
    )


def test_inspect_plots_png_files_only(model: Path, tmp_path: Path, capsys) -> None:
    assert (
        main(["inspect", str(model), "--sequences", "16", "--plot", str(tmp_path / "w.pdf")]) == 2
    )
    assert (
        "give a file name ending in .png" in capsys.readouterr().err
        and not (tmp_path / "w.pdf").exists()
    )


def test_a_noise_in_a_models_meta_is_held_to_the_command_lines_bound(
    tmp_path: Path, capsys
) -> None:
    rng = np.random.default_rng(0)
    path = tmp_path / "m.npz"
    save_model(
        path,
        0.1 * rng.standard_normal((1, 1, D + 1, D + 1)),
        0.1 * rng.standard_normal((1, 1, D + 1, D + 1)),
        {"kind": "full", "noise": "fixed:1e300"},
    )
    assert main(["inspect", str(path), "--sequences", "16"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        "noise 'fixed:1e300' (the model's own, from its meta) is not valid: noise levels must be in"
        in err
    ), err


def test_weights_that_overflow_in_p_and_q_are_a_one_line_error_without_warnings(
    tmp_path: Path, capsys
) -> None:
    import warnings

    np.savez(
        tmp_path / "w.npz",
        **{k: np.full((1, 1, D + 1, D + 1), 1e200) for k in ("W_Q", "W_K", "W_V", "W_O")},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["convert", str(tmp_path / "w.npz"), "--out", str(tmp_path / "o.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "overflow float64 in P, Q; nothing written" in err, err
    assert not (tmp_path / "o.npz").exists()


def test_convert_records_a_setting_with_every_level_exact(tmp_path: Path, capsys) -> None:
    """``uniform:1,1.0000001`` rounded to 6 digits would be ``uniform:1,1``, which no model can be inspected with; the
    meta keeps every level exact, in the setting's canonical spelling (``uniform:5.0`` as ``uniform:5``)."""
    from numerics.model_file import load_model

    np.savez(
        tmp_path / "w.npz", **{k: np.eye(D + 1)[None, None] for k in ("W_Q", "W_K", "W_V", "W_O")}
    )
    for i, (given, kept) in enumerate(
        [
            (
                ["--x", "uniform:1,1.0000001", "--noise", "uniform:2.71828182"],
                {"x": "uniform:1,1.0000001", "noise": "uniform:2.71828182"},
            ),
            (["--x", "normal", "--noise", "uniform:5.0"], {"x": "normal", "noise": "uniform:5"}),
        ]
    ):
        out = tmp_path / f"o{i}.npz"
        assert main(["convert", str(tmp_path / "w.npz"), "--out", str(out), *given]) == 0
        meta = load_model(out)[2]
        assert {k: meta[k] for k in kept} == kept, meta
    capsys.readouterr()


@pytest.mark.parametrize(
    "option",
    [
        ["--noise", "uniform:2"],
        ["--x", "normal"],
        ["--n", "12"],
        ["--sequences", "256"],
        ["--seed", "0"],
        ["--seed", "3", "--n", "12"],
    ],
)
def test_inspect_refuses_sampling_options_beside_a_data_file(
    option: list[str], model: Path, tmp_path: Path, capsys
) -> None:
    """Each sampling option is refused beside a data file, even at its default value (it would be ignored)."""
    np.savez(tmp_path / "d.npz", **data())
    assert main(["inspect", str(model), str(tmp_path / "d.npz"), *option]) == 2
    err = capsys.readouterr().err.strip()
    flags = sorted(option[::2], key=["--noise", "--x", "--n", "--sequences", "--seed"].index)
    these = "this sets" if len(flags) == 1 else "these set"
    assert err.startswith(
        f"lintf inspect: error: {', '.join(flags)}: {these} the sequences inspect samples"
    ), err


def test_a_printed_depth_past_float_range_is_a_one_line_error(tmp_path: Path, capsys) -> None:
    path = tmp_path / "printed.json"
    path.write_text('[{"noise": "fixed:1", "depth": 1e400, "value": 0.5}]')
    assert main(["verify", "--only", "gram_map", "--printed", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"--printed {path} is not valid JSON (the number 1e400" in err, err


def test_a_printed_noise_level_past_the_bound_is_a_one_line_error(tmp_path: Path, capsys) -> None:
    """A level whose square overflows would print a floor of ridge at lambda = inf as 0."""
    path = tmp_path / "printed.csv"
    path.write_text("noise,depth,value\nuniform:1e200,3,0.5\n")
    assert main(["verify", "--only", "gram_map", "--printed", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        "\n" not in err
        and "row 1: noise levels must be in [0, 1e+06]" in err
        and "got 1e+200" in err
    ), err


@pytest.mark.parametrize(
    "argv",
    [
        ["predict", "MODEL", "DATA", "--out", "LONG/x.npy"],
        ["inspect", "MODEL", "--plot", "LONG.png"],
        ["train", "--model", "diag", "--layers", "1", "--out", "LONG"],
        ["reproduce", "--budget", "quick", "--out", "LONG"],
        ["verify", "--only", "gram_map", "--printed", "LONG.csv"],
        ["predict", "MODEL", "DATA", "--out", " "],
        ["predict", "MODEL", "DATA", "--out", "a\nb.npy"],
        ["reproduce", "--budget", "quick", "--runs", "\t"],
    ],
)
def test_a_path_no_file_system_can_hold_is_a_one_line_error_before_any_work(
    argv: list[str], model: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    """A name over 255 bytes (the OS raises ENAMETOOLONG on it) or one without a visible character is refused up
    front, naming the option; nothing is written."""
    monkeypatch.chdir(tmp_path)
    np.savez(tmp_path / "d.npz", **data())
    swap = {"MODEL": str(model), "DATA": str(tmp_path / "d.npz")}
    argv = [swap.get(a, a.replace("LONG", "c" * 300)) for a in argv]
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    flag = argv[
        argv.index(next(a for a in argv if "c" * 300 in a or not a.strip() or "\n" in a)) - 1
    ]
    assert err.startswith(f"lintf {argv[0]}: error: {flag} ") and "\n" not in err, err
    assert "more than the 255 a file name may have" in err or "in visible characters" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_output_that_cannot_be_written_is_a_one_line_error(model: Path, tmp_path: Path) -> None:
    """stdout on a full device (ENOSPC) ends in one line and status 2, not a traceback."""
    import subprocess
    import sys

    np.savez(tmp_path / "d.npz", **data())
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "numerics.cli", "predict", str(model), str(tmp_path / "d.npz")],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == ["lintf predict: error: No space left on device"], (
        proc.stderr
    )


@pytest.mark.parametrize(
    "name, text, field",
    [
        ("p.csv", "noise,depth,value,SE\nuniform:5,3,0.25,0.5\n", "'SE'"),
        ("p.json", '[{"noise": "uniform:5", "depth": 3, "value": 0.25, "sd": 1}]', "'sd'"),
    ],
)
def test_a_printed_table_with_a_field_it_does_not_know_is_refused(
    name: str, text: str, field: str, tmp_path: Path, capsys
) -> None:
    """A misspelt ``se`` column would read as se = 0 and change the verdict: any field but noise, depth, value, se is
    refused."""
    (tmp_path / name).write_text(text)
    assert main(["verify", "--only", "gram_map", "--printed", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.endswith(f"row 1 has {field}; the fields are noise, depth, value and se")
        and "\n" not in err
    ), err


@pytest.mark.parametrize("command", ["predict", "inspect"])
def test_a_data_file_with_an_array_no_command_reads_is_refused(
    command: str, model: Path, tmp_path: Path, capsys
) -> None:
    """A misspelt ``y_query`` would be ignored and the loss left unreported: any array but X, y, x_query, y_query,
    sigma is refused before the model runs."""
    d = data()
    np.savez(
        tmp_path / "typo.npz", **{k: v for k, v in d.items() if k != "y_query"}, yquery=d["y_query"]
    )
    assert main([command, str(model), str(tmp_path / "typo.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert "holds yquery, which no command reads" in err and "\n" not in err, err


@pytest.mark.parametrize(
    "extra, sigma, says",
    [
        (["--sigma", "0"], True, "ridge uses sigma = 0 (--sigma)"),
        ([], True, "ridge uses each sequence's true sigma"),
        ([], False, "no ridge;"),
    ],
)
def test_inspect_says_which_sigma_its_ridge_reference_used(
    extra: list[str], sigma: bool, says: str, model: Path, tmp_path: Path, capsys
) -> None:
    """A data file with or without ``sigma``, of :func:`data`'s shapes: the programs the other inspect
    tests compile.  (Sampled data always has its sigma: ``tests/cli/test_own_data.py``'s test at
    σ = 0 and n < d reads it.)"""
    arrays = data()
    if sigma:
        arrays["sigma"] = np.linspace(0.5, 2.0, len(arrays["y_query"]))
    np.savez(tmp_path / "d.npz", **arrays)
    assert main(["inspect", str(model), str(tmp_path / "d.npz"), *extra]) in (0, 1)
    out = capsys.readouterr().out
    assert says in out, out
