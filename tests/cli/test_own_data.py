"""``lintf inspect`` samples the model's own data setting; ``predict``/``inspect`` refuse non-finite or complex ``P, Q``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jax
import numpy as np
import pytest

from numerics.cli import main
from numerics.data import XDist, sample
from numerics.io import save_model

COMMITTED = Path(__file__).resolve().parents[2] / "results" / "models" / "diag-L1-categorical1_3" / "model.npz"
UNIFORM = "uniform:-0.5,0.5"


def test_inspect_uses_the_committed_models_own_noise(capsys):
    assert main(["inspect", str(COMMITTED), "--sequences", "16", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["sampled"]["noise"] == "categorical:1,3" and res["sampled"]["n"] == 20
    assert "noise categorical:1,3 (the model's own, from its meta)" in res["sampled"]["setting"]
    assert main(["inspect", str(COMMITTED), "--sequences", "16", "--noise", "fixed:0"]) == 0
    text = capsys.readouterr().out
    assert "noise fixed:0 (from the command line)" in text and "x ~ normal (default" in text


@pytest.fixture(scope="module")
def uniform_model(tmp_path_factory):
    r"""A one-layer GD model trained for ``x ~ U(−½, ½)``: ``P = e_y e_yᵀ``, ``Q = −η diag(I, 0)`` gives
    ``ŷ = η ⟨α, x_t⟩``; its one parameter ``η`` is fitted by least squares on 4096 sampled sequences."""
    d, n = 2, 20
    with jax.enable_x64(True):
        b = sample(jax.random.key(7), "fixed:0.1", 4096, n, d, jax.numpy.float64, UNIFORM)
    alpha = np.einsum("bn,bnd->bd", np.asarray(b.y), np.asarray(b.X))
    feature = np.einsum("bd,bd->b", alpha, np.asarray(b.x_query))
    eta = float(feature @ np.asarray(b.y_query) / (feature @ feature))
    train_loss = float(0.5 * np.mean((np.asarray(b.y_query) - eta * feature) ** 2))
    P = np.zeros((1, 1, d + 1, d + 1))
    P[0, 0, d, d] = 1.0
    Q = np.zeros_like(P)
    Q[0, 0, :d, :d] = -eta * np.eye(d)
    path = tmp_path_factory.mktemp("uniform") / "model.npz"
    save_model(path, P, Q, {"kind": "full", "noise": "fixed:0.1", "x": UNIFORM, "n": n})
    return path, train_loss


def _last_loss(capsys, argv: list[str]) -> tuple[float, dict]:
    assert main(["inspect", *argv, "--sequences", "2048", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    return res["layers"][-1]["loss"], res


def test_inspect_with_the_models_own_input_distribution(uniform_model, capsys):
    path, train_loss = uniform_model
    own, res = _last_loss(capsys, [str(path), "--x", UNIFORM])
    zero = res["layers"][0]["loss"]  # the read-out before any layer is 0: loss of predicting 0
    assert abs(own - train_loss) < 0.15 * train_loss and own < 0.5 * zero, (own, train_loss, zero)
    default, res = _last_loss(capsys, [str(path)])  # no flag: the model's meta says uniform
    assert default == own and "x ~ uniform:-0.5,0.5 (the model's own, from its meta)" in res["sampled"]["setting"]
    normal, _ = _last_loss(capsys, [str(path), "--x", "normal"])  # the wrong distribution looks diverged
    assert normal > 100 * own


def test_x_spec_is_parsed_and_checked():
    assert str(XDist.parse(UNIFORM)) == UNIFORM and str(XDist.parse("normal")) == "normal"
    for bad in ("uniform:1,0", "uniform:0", "gauss", "uniform:a,b", "uniform:0,inf"):
        with pytest.raises(ValueError, match="uniform:a,b"):
            XDist.parse(bad)
    with jax.enable_x64(True):
        X = np.asarray(sample(jax.random.key(0), "fixed:0", 64, 8, 3, jax.numpy.float64, "uniform:2,3").X)
    assert X.min() >= 2 and X.max() <= 3 and X.std() > 0.2


def _one_line_error(capsys, argv: list[str], match: str) -> None:
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and err.startswith(f"lintf {argv[0]}: error: "), err
    assert re.search(match, err), err


@pytest.mark.parametrize("command", ["predict", "inspect"])
@pytest.mark.parametrize(("case", "match"), [("nan", "P must be finite, but 1 of its 18 entries"),
                                             ("inf", "Q must be finite, but 2 of its 18 entries"),
                                             ("complex", "P must hold real numbers")])
def test_non_finite_or_complex_models_are_one_line_errors(tmp_path, capsys, command, case, match):
    rng = np.random.default_rng(3)
    P, Q = rng.standard_normal((2, 1, 3, 3)), rng.standard_normal((2, 1, 3, 3))
    if case == "nan":
        P[1, 0, 2, 0] = np.nan
    elif case == "inf":
        Q[0, 0, 1, 1], Q[1, 0, 0, 2] = np.inf, -np.inf
    else:
        P = P + 1j * rng.standard_normal(P.shape)
    np.savez(tmp_path / "model.npz", P=P, Q=Q)  # plain NumPy: lintf's own writer refuses these
    X = rng.standard_normal((3, 4, 2))
    np.savez(tmp_path / "data.npz", X=X, y=X.sum(-1), x_query=X[:, 0])
    _one_line_error(capsys, [command, str(tmp_path / "model.npz"), str(tmp_path / "data.npz")], match)
    if command == "inspect":  # and when inspect samples the data itself
        _one_line_error(capsys, [command, str(tmp_path / "model.npz")], match)


def test_invalid_noise_in_meta_is_a_one_line_error(tmp_path, capsys):
    save_model(tmp_path / "model.npz", np.ones((1, 1, 3, 3)), np.ones((1, 1, 3, 3)), {"noise": "loud"})
    _one_line_error(capsys, ["inspect", str(tmp_path / "model.npz")], "noise 'loud' \\(the model's own, from its meta\\)")
