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
from numerics.model_file import save_model

COMMITTED = (
    Path(__file__).resolve().parents[2]
    / "results"
    / "quick"
    / "models"
    / "diag-L1-categorical1_3"
    / "model.npz"
)
UNIFORM = "uniform:-0.5,0.5"
#: The sequences ``inspect`` samples for the uniform model's losses (and the model's fit draws), and
#: for the committed model's: both models are ``n = 20``, ``d = 10``, so that one set of compiled
#: programs serves every ``inspect`` of either on sampled data.
SEQUENCES = 2048
#: The input dimension of the committed model, and of the uniform model.
D = 10


def test_inspect_uses_the_committed_models_own_noise(capsys):
    sequences = ["--sequences", str(SEQUENCES)]
    assert main(["inspect", str(COMMITTED), *sequences, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["sampled"]["noise"] == "categorical:1,3" and res["sampled"]["n"] == 20
    assert "noise categorical:1,3 (the model's own, from its meta)" in res["sampled"]["setting"]
    assert main(["inspect", str(COMMITTED), *sequences, "--noise", "fixed:0"]) == 0
    text = capsys.readouterr().out
    assert "noise fixed:0 (from the command line)" in text and "x ~ normal (default" in text


@pytest.fixture(scope="module")
def uniform_model(tmp_path_factory):
    r"""A one-layer GD model trained for ``x ~ U(−½, ½)``: ``P = e_y e_yᵀ``, ``Q = −η diag(I, 0)`` gives
    ``ŷ = η ⟨α, x_t⟩``; its one parameter ``η`` is fitted by least squares on 4096 sampled sequences,
    two draws of :data:`SEQUENCES` (other keys than ``inspect``'s): one compiled sampler serves the fit
    and ``inspect``.  ``d = 10``, ``n = 20``: the committed model's shapes."""
    d, n = D, 20
    with jax.enable_x64(True):
        draws = [
            sample(jax.random.key(k), "fixed:0.1", SEQUENCES, n, d, jax.numpy.float64, UNIFORM)
            for k in (7, 8)
        ]
    X, y, x_query, y_query = (
        np.concatenate([np.asarray(getattr(b, f)) for b in draws])
        for f in ("X", "y", "x_query", "y_query")
    )
    alpha = np.einsum("bn,bnd->bd", y, X)
    feature = np.einsum("bd,bd->b", alpha, x_query)
    eta = float(feature @ y_query / (feature @ feature))
    train_loss = float(0.5 * np.mean((y_query - eta * feature) ** 2))
    P = np.zeros((1, 1, d + 1, d + 1))
    P[0, 0, d, d] = 1.0
    Q = np.zeros_like(P)
    Q[0, 0, :d, :d] = -eta * np.eye(d)
    path = tmp_path_factory.mktemp("uniform") / "model.npz"
    save_model(path, P, Q, {"kind": "full", "noise": "fixed:0.1", "x": UNIFORM, "n": n})
    return path, train_loss


def _last_loss(capsys, argv: list[str]) -> tuple[float, dict]:
    assert main(["inspect", *argv, "--sequences", str(SEQUENCES), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    return res["layers"][-1]["loss"], res


def test_inspect_with_the_models_own_input_distribution(uniform_model, capsys):
    path, train_loss = uniform_model
    own, res = _last_loss(capsys, [str(path), "--x", UNIFORM])
    zero = res["layers"][0]["loss"]  # the read-out before any layer is 0: loss of predicting 0
    assert abs(own - train_loss) < 0.15 * train_loss and own < 0.5 * zero, (own, train_loss, zero)
    default, res = _last_loss(capsys, [str(path)])  # no flag: the model's meta says uniform
    assert (
        default == own
        and "x ~ uniform:-0.5,0.5 (the model's own, from its meta)" in res["sampled"]["setting"]
    )
    normal, _ = _last_loss(
        capsys, [str(path), "--x", "normal"]
    )  # the wrong distribution looks diverged
    assert normal > 100 * own


def test_x_spec_is_parsed_and_checked():
    """``sample`` draws the inputs from ``x`` (the uniform model's shapes: the sampler its fit and
    ``inspect`` compile); ``uniform:a,b`` draws on ``[a, b]``, here an interval away from 0."""
    assert str(XDist.parse(UNIFORM)) == UNIFORM and str(XDist.parse("normal")) == "normal"
    for bad in ("uniform:1,0", "uniform:0", "gauss", "uniform:a,b", "uniform:0,inf"):
        with pytest.raises(ValueError, match="uniform:a,b"):
            XDist.parse(bad)
    with jax.enable_x64(True):
        b = sample(jax.random.key(0), "fixed:0", SEQUENCES, 20, D, jax.numpy.float64, UNIFORM)
        X = np.asarray(XDist.parse("uniform:2,3").draw(jax.random.key(0), (64, 8, 3), np.float64))
    for x in (np.asarray(b.X), np.asarray(b.x_query)):  # the whole interval, nothing past it
        assert -0.5 <= x.min() < -0.49 and 0.49 < x.max() <= 0.5 and abs(x.std() - 12**-0.5) < 0.01
    assert X.min() >= 2 and X.max() <= 3 and X.std() > 0.2


def _one_line_error(capsys, argv: list[str], match: str) -> None:
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and err.startswith(f"lintf {argv[0]}: error: "), err
    assert re.search(match, err), err


@pytest.mark.parametrize("command", ["predict", "inspect"])
@pytest.mark.parametrize(
    ("case", "match"),
    [
        ("nan", "P must be finite, but 1 of its 18 entries"),
        ("inf", "Q must be finite, but 2 of its 18 entries"),
        ("complex", "P must hold real numbers"),
    ],
)
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
    _one_line_error(
        capsys, [command, str(tmp_path / "model.npz"), str(tmp_path / "data.npz")], match
    )
    if command == "inspect":  # and when inspect samples the data itself
        _one_line_error(capsys, [command, str(tmp_path / "model.npz")], match)


def test_invalid_noise_in_meta_is_a_one_line_error(tmp_path, capsys):
    save_model(
        tmp_path / "model.npz", np.ones((1, 1, 3, 3)), np.ones((1, 1, 3, 3)), {"noise": "loud"}
    )
    _one_line_error(
        capsys,
        ["inspect", str(tmp_path / "model.npz")],
        "noise 'loud' \\(the model's own, from its meta\\)",
    )


@pytest.mark.parametrize(
    ("n", "match"),
    [
        (
            10**12,
            "n 1000000000000 \\(the model's own, from its meta\\) is not valid: "
            "must be an integer >= 1 and <= 2147483647",
        ),
        (20.5, "n 20.5 .* is not valid"),
        (True, "n True .* is not valid"),
        (2 * 10**9, "needs about .* of memory.*lower --sequences or --n"),
    ],
)
def test_a_context_length_in_meta_is_checked_as_the_flag_is(tmp_path, capsys, n, match):
    """Before, a meta ``n`` of 10^12 aborted inside XLA, and 20.5 or ``true`` were silently truncated."""
    save_model(tmp_path / "model.npz", np.zeros((1, 1, 3, 3)), np.zeros((1, 1, 3, 3)), {"n": n})
    _one_line_error(capsys, ["inspect", str(tmp_path / "model.npz"), "--sequences", "4"], match)


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--sigma", "1e200"], "--sigma must be >= 0 and <= 1e\\+06"),
        (["--x", "uniform:-1e300,1e300"], "within \\[-1e\\+06, 1e\\+06\\]"),
    ],
)
def test_inspect_bounds_sigma_and_inputs_as_noise_specs_are(capsys, argv, match):
    _one_line_error(capsys, ["inspect", str(COMMITTED), "--sequences", "4", *argv], match)


def test_inspect_of_a_model_that_overflows_is_an_error_not_a_table_of_made_up_cosines(
    tmp_path, capsys
):
    """The committed model's shapes and :data:`SEQUENCES`: the programs the test of its own noise
    compiles."""
    from numerics.model_file import load_model

    P, Q, meta = load_model(COMMITTED)
    save_model(
        tmp_path / "model.npz", P * 1e160, Q * 1e160, meta
    )  # finite, but w^1 overflows float64
    _one_line_error(
        capsys,
        ["inspect", str(tmp_path / "model.npz"), "--sequences", str(SEQUENCES)],
        f"implicit weights w\\^l are not finite on {SEQUENCES} of {SEQUENCES} sequences",
    )


def test_inspect_without_a_ridge_reference_at_sigma_zero_and_n_below_d(capsys):
    """With σ = 0 and n < d ridge is OLS on a singular Σ: the ridge columns are left out, not printed as NaN.
    :data:`SEQUENCES` sequences, as the committed model's other tests sample: only the programs
    of ``n = 5`` are new."""
    argv = ["inspect", str(COMMITTED), "--noise", "fixed:0", "--n", "5"]
    assert main([*argv, "--sequences", str(SEQUENCES), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["layers"]
    assert rows and all("cos_ridge" not in r and "dist_ridge" not in r for r in rows)
    assert all(np.isfinite(v) for r in rows for v in r.values())
    assert main([*argv, "--sequences", str(SEQUENCES)]) == 0
    assert (
        "no ridge reference: sigma = 0 on some sequence and n=5 < d=10 (singular)"
        in capsys.readouterr().out
    )
