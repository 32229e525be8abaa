"""``lintf predict`` and ``lintf inspect`` end to end through ``numerics.cli.main`` (tmp files only)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from numerics import models
from numerics.cli import main
from numerics.model_file import save_model
from tests.strategies import RTOL64, max_rel_err, scaled_model, toy_batch


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A 2-layer DIAG model (universal ``P, Q`` of shape ``(2, 1, 3, 3)``) and four sequences of five
    points in ``d = 2``: the shapes ``tests/cli/test_hostile_files.py`` and ``test_fuzz_files.py``
    predict and inspect, so that the command's programs compile once for all of them."""
    tmp = tmp_path_factory.mktemp("cli")
    data = toy_batch(70, n=5, d=2)
    P, Q = scaled_model("diag", 71, 2, 1, data)
    save_model(tmp / "model.npz", P, Q, {"kind": "diag"})
    arrays = {k: np.asarray(getattr(data, k)) for k in ("X", "y", "x_query", "y_query", "sigma")}
    np.savez(tmp / "data.npz", **arrays)
    expected = np.asarray(models.predict(P, Q, data.X, data.y, data.x_query))
    return tmp, arrays, expected


def test_predict_round_trip_json_and_out(files, capsys):
    tmp, arrays, expected = files
    out = tmp / "preds.npy"
    rc = main(
        ["predict", str(tmp / "model.npz"), str(tmp / "data.npz"), "--out", str(out), "--json"]
    )
    assert rc == 0
    got = np.load(out)
    assert got.shape == expected.shape and max_rel_err(got, expected) < RTOL64
    assert float(np.max(np.abs(expected))) > 1e-3
    res = json.loads(capsys.readouterr().out)
    assert max_rel_err(np.asarray(res["predictions"]), expected) < RTOL64
    np.testing.assert_allclose(
        res["loss"], 0.5 * np.mean((arrays["y_query"] - expected) ** 2), rtol=1e-12
    )
    assert (res["L"], res["H"], res["d"], res["B"]) == (2, 1, 2, expected.shape[0])


def test_predict_text_without_y_query(files, capsys):
    tmp, arrays, expected = files
    np.savez(tmp / "noy.npz", X=arrays["X"], y=arrays["y"], x_query=arrays["x_query"])
    assert main(["predict", str(tmp / "model.npz"), str(tmp / "noy.npz")]) == 0
    text = capsys.readouterr().out
    assert "loss" not in text
    shown = [float(v) for v in text.splitlines()[-1].removeprefix("predictions: ").split()]
    assert max_rel_err(np.asarray(shown), expected) < 1e-5  # printed with 6 significant digits


def _bad_data(arrays):
    """Malformed data files by case name: (arrays to save, expected message pattern)."""
    X, y, xq = arrays["X"], arrays["y"], arrays["x_query"]
    return {
        "missing": (dict(X=X, y=y), "missing: x_query"),
        "d_mismatch": (dict(X=X[..., :1], y=y, x_query=xq[:, :1]), "model has input dimension d=2"),
        "B_mismatch": (dict(X=X, y=y[:-1], x_query=xq), "y must have shape"),
        "X_2d": (dict(X=X[0], y=y, x_query=xq), "X must have shape \\(B, n, d\\)"),
        "nonfinite": (
            dict(X=X, y=np.where(y > 0, np.nan, y), x_query=xq),
            "array y must be finite",
        ),
        "complex": (dict(X=X.astype(complex), y=y, x_query=xq), "array X must hold real numbers"),
        "y_query": (
            dict(X=X, y=y, x_query=xq, y_query=arrays["y_query"][:1]),
            "y_query must have shape",
        ),
        "strings": (dict(X=X, y=y, x_query=np.array(["a"])), "must hold real numbers"),
        "sigma_huge": (
            dict(X=X, y=y, x_query=xq, sigma=np.full(len(y), 1e200)),
            "sigma must be >= 0 and <= 1e\\+06",
        ),
    }


@pytest.mark.parametrize(
    "case",
    [
        "missing",
        "d_mismatch",
        "B_mismatch",
        "X_2d",
        "nonfinite",
        "y_query",
        "strings",
        "complex",
        "sigma_huge",
        "no_file",
        "not_npz",
        "no_model",
        "out_is_dir",
    ],
)
def test_predict_errors_are_one_line_exit_2(files, capsys, case):
    tmp, arrays, _ = files
    model, data, extra = str(tmp / "model.npz"), str(tmp / f"{case}.npz"), []
    bad = _bad_data(arrays)
    if case in bad:
        arrs, match = bad[case]
        np.savez(data, **arrs)
    elif case == "no_file":
        match = "does not exist"
    elif case == "not_npz":
        (tmp / "not_npz.npz").write_text("X,y\n1,2\n")
        match = "is not an .npz archive"
    elif case == "no_model":
        model, data, match = (
            str(tmp / "absent.npz"),
            str(tmp / "data.npz"),
            "model file .* does not exist",
        )
    else:
        data, extra, match = str(tmp / "data.npz"), ["--out", str(tmp)], "is a directory"
    rc = main(["predict", model, data, *extra])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("lintf predict: error: ")
    assert re.search(match, err), err


def test_inspect_json_plot_and_errors(files, capsys):
    tmp, _, _ = files
    png = tmp / "w.png"
    rc = main(
        ["inspect", str(tmp / "model.npz"), str(tmp / "data.npz"), "--json", "--plot", str(png)]
    )
    res = json.loads(capsys.readouterr().out)
    assert rc == 0 and res["agree"] and res["autodiff_max_rel_diff"] < RTOL64
    assert [r["layer"] for r in res["layers"]] == [0, 1, 2]
    assert {
        "cos_ols",
        "dist_ols",
        "cos_ridge",
        "dist_ridge",
        "a",
        "u_norm",
        "M_minus_I",
        "loss",
    } <= set(res["layers"][1])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["inspect", str(tmp / "model.npz"), str(tmp / "data.npz")]) == 0
    text = capsys.readouterr().out
    assert "autodiff check" in text and ": agree" in text and "cos(w,ridge)" in text
    assert main(["inspect", str(tmp / "model.npz"), "--sigma", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--sigma must be >= 0" in err


def test_an_output_created_while_predict_runs_is_not_replaced(files, capsys, monkeypatch):
    """``--out`` is checked before any work, and written without replacing a file that appeared since."""
    tmp, _, _ = files
    out = tmp / "raced.npy"
    real = models.predict

    def predict_then_race(*a, **k):  # the check has passed; another process now takes the name
        out.write_bytes(b"the user's file")
        return real(*a, **k)

    monkeypatch.setattr(models, "predict", predict_then_race)
    rc = main(["predict", str(tmp / "model.npz"), str(tmp / "data.npz"), "--out", str(out)])
    assert rc != 0 and out.read_bytes() == b"the user's file"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "appeared while this command ran" in err[0]


def test_predictions_that_overflow_are_an_error_and_nothing_is_written(files, capsys):
    """A model that overflows float64 on some sequences gives a one-line error that names them, not a file of NaN."""
    tmp, arrays, _ = files
    from numerics.model_file import load_model

    P, Q, meta = load_model(tmp / "model.npz")
    save_model(tmp / "huge.npz", P * 1e100, Q * 1e100, meta)
    out = tmp / "huge.npy"
    rc = main(
        ["predict", str(tmp / "huge.npz"), str(tmp / "data.npz"), "--out", str(out), "--json"]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        rc == 2
        and len(err) == 1
        and "predictions are not finite" in err[0]
        and "nothing written" in err[0]
    ), err
    assert not out.exists()


def test_one_sequence_has_a_loss_but_no_standard_error(files, capsys):
    tmp, arrays, expected = files
    np.savez(tmp / "one.npz", **{k: v[:1] for k, v in arrays.items()})
    assert main(["predict", str(tmp / "model.npz"), str(tmp / "one.npz"), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["loss_se"] is None and res["loss"] == pytest.approx(
        0.5 * (arrays["y_query"][0] - expected[0]) ** 2
    )
    assert main(["predict", str(tmp / "model.npz"), str(tmp / "one.npz")]) == 0
    assert "(one sequence: no standard error)" in capsys.readouterr().out


def test_a_model_that_leaves_the_query_at_zero_predicts_plus_zero(files, capsys):
    """ŷ = −y_{n+1}^L is −0.0 for a zero model; the text and the file show 0, not -0."""
    tmp, arrays, _ = files
    from numerics.model_file import load_model

    P, Q, meta = load_model(tmp / "model.npz")
    save_model(tmp / "zero.npz", np.zeros_like(P), np.zeros_like(Q), meta)
    out = tmp / "zero.npy"
    assert main(["predict", str(tmp / "zero.npz"), str(tmp / "data.npz")]) == 0
    shown = capsys.readouterr().out.splitlines()[-1].removeprefix("predictions: ").split()
    assert shown[:3] == ["0", "0", "0"], shown
    assert main(["predict", str(tmp / "zero.npz"), str(tmp / "data.npz"), "--out", str(out)]) == 0
    assert not np.any(np.signbit(np.load(out)))
