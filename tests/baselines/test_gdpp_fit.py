"""GD++ per-eigenvalue rule (derived) vs the model, the spectral fit, ``--init spectral``.

Independent routes: :func:`numerics.models.predict` (Gram-form model pass) and the one-layer closed
form of :mod:`lintf_theory._closed_forms` (derived from Wishart moments, not from spectra).
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lintf_theory import one_step_rule
from numerics.baselines import gdpp_fit as gf
from numerics.cli import main as cli_main
from numerics.models import Gdpp, predict, universal
from numerics.train.config import TrainConfig
from numerics.train.loop import init_state, train
from numerics.train.rundir import run as run_dir
from proofs.gdpp_spectral import RTOL, conditional_loss_error, spectral_prediction_error

#: Fit-sample size for the fast tests (the default is 200 000): enough for L <= 4.
SMALL = 20_000


@pytest.mark.parametrize("seed,sigma", [(0, 0.0), (5, 1.5)])
def test_derived_spectral_rule_matches_predict(seed: int, sigma: float) -> None:
    rng = np.random.default_rng(seed)
    wxx = np.append(-rng.uniform(0.005, 0.05, 3), 0.0)
    wyx = -rng.uniform(0.01, 0.5, 4)
    assert spectral_prediction_error(seed, sigma, wxx, wyx) < RTOL
    gap, exact = conditional_loss_error(seed, sigma, wxx, wyx)
    assert gap < RTOL and exact > 0


def test_a_fit_is_deterministic_by_seed_and_goes_on_from_the_path_of_a_shallower_one() -> None:
    """A fit from nothing (after :func:`gf.clear_cache`) gives the same numbers every time, and a
    fit that goes on from the path of a shallower one gives the fit from nothing; another seed
    gives another fit.  Seed 0 and fixed:0, as the four-layer fit below: it goes on from this path,
    and the residual programs compile once."""
    gf.clear_cache()
    fresh = gf.fit_gdpp(3, sequences=SMALL, seed=0)
    gf.clear_cache()
    gf.fit_gdpp(2, sequences=SMALL, seed=0)  # from nothing again: the first two steps of fresh
    went_on = gf.fit_gdpp(3, sequences=SMALL, seed=0)
    one = gf.fit_gdpp(1, sequences=SMALL, seed=0)
    same = lambda p, q: all(np.array_equal(x, y) for x, y in zip(p, q))  # noqa: E731
    assert went_on.loss == fresh.loss and same(went_on.params, fresh.params)
    assert all(a == b and same(p, q) for (a, p), (b, q) in zip(went_on.path, fresh.path))
    assert (
        one.path == went_on.path[:1]
        and one.loss == fresh.path[0][0]
        and 0 < one.seconds <= went_on.seconds
    )
    # another seed at depth 1: another sample of spectra, so another step already
    other = gf.fit_gdpp(1, sequences=SMALL, seed=1)
    assert not np.array_equal(other.params.omega_yx, one.params.omega_yx)


def test_one_layer_fit_is_the_closed_form_step_and_four_layers_reach_a_low_loss() -> None:
    eta, loss1 = (float(v) for v in one_step_rule()[1].numpy(20, 10, 0.0))
    fit = gf.fit_gdpp(4, sequences=SMALL, seed=0)
    l1, p1 = fit.path[0]
    assert abs(-p1.omega_yx[0] - eta) < 0.01 * eta and abs(l1 - loss1) < 0.02 * loss1
    # held out: the model's own pass on fresh float64 sequences (independent of the spectral route)
    with jax.enable_x64(True):
        from numerics.data import sample

        b = sample(jax.random.PRNGKey(11), "fixed:0", 20_000, 20, 10, jnp.float64)
        P, Q = universal(Gdpp(*(jnp.asarray(p) for p in fit.params)), 10)
        pred = np.asarray(predict(P, Q, b.X, b.y, b.x_query))
    held = float(np.mean(0.5 * (pred - np.asarray(b.y_query)) ** 2))
    losses = [l for l, _ in fit.path]
    assert all(b2 < a2 for a2, b2 in zip(losses, losses[1:]))  # deeper is better
    assert held < 5e-4 and fit.loss < 5e-4, (held, fit.loss)


def test_init_spectral_is_gdpp_only() -> None:
    with pytest.raises(ValueError, match="needs model gdpp"):
        TrainConfig(model="diag", layers=2, init="spectral")
    with pytest.raises(ValueError, match="init must be one of"):
        TrainConfig(model="gdpp", layers=2, init="zeros")


def test_cli_init_spectral_error_is_one_line(capsys) -> None:
    rc = cli_main(
        [
            "train",
            "--model",
            "full",
            "--layers",
            "2",
            "--init",
            "spectral",
            "--steps",
            "1",
            "--json",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "gdpp" in err, err


def test_default_init_leaves_config_json_unchanged() -> None:
    from numerics.train.config import config_dict

    assert "init" not in config_dict(TrainConfig(model="gdpp", layers=2))
    assert config_dict(TrainConfig(model="gdpp", layers=2, init="spectral"))["init"] == "spectral"


SPEC = dict(
    model="gdpp",
    layers=2,
    noise="fixed:0",
    n=6,
    d=3,
    seeds=2,
    steps=4,
    chunk=2,
    batch=64,
    select_sequences=2048,  # = eval_sequences: selection and evaluation share one compiled program
    eval_sequences=2048,
    init="spectral",
    dtype="float64",
)


def test_spectral_init_trains_keeps_the_fit_frozen_and_resumes(tmp_path: Path) -> None:
    with jax.enable_x64(True):
        cfg = TrainConfig(**SPEC)
        fit = gf.fit_gdpp(2, n=6, d=3)
        s0 = init_state(cfg)
        res = train(cfg)
        # seed 0 is the fit, frozen; seed 1 started there and moved
        for got, want in zip(res.state.params, fit.params):
            np.testing.assert_array_equal(np.asarray(got[0]), want)
        assert not np.array_equal(np.asarray(res.state.params.omega_yx[1]), fit.params.omega_yx)
        assert float(s0.rho[0]) == 0.0 and float(s0.rho[1]) == 1.0
        # resumed after a "kill" at step 2: same numbers as uninterrupted
        assert run_dir(cfg, tmp_path / "cut", progress=False, baselines=False, stop_at=2) is None
        cut = run_dir(cfg, tmp_path / "cut", progress=False, baselines=False)
        whole = run_dir(cfg, tmp_path / "whole", progress=False, baselines=False)
        assert cut is not None and whole is not None
        assert cut["adjusted_loss"] == whole["adjusted_loss"] and cut["curve"] == whole["curve"]
        # the fit's exact expected loss and the run's evaluation agree (2048 sequences, 6 SE)
        assert (
            abs(whole["eval_adjusted_per_seed"][0] - fit.loss) < 6 * whole["se"] + 0.05 * fit.loss
        )
