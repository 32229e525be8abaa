r"""Constructed transformers follow their derivations, over drawn data and parameters.

The fixed-example versions live in ``tests/models/test_constructions.py``; here Hypothesis draws the
step, the depth, the spectrum and the data.
"""

from __future__ import annotations

import dataclasses
import os

import jax.numpy as jnp
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lintf_theory import gdpp_eigen_rule, layer_count
from numerics import models
from numerics.evaluate import inspector
from numerics.models import constructions
from tests.strategies import (
    RTOL64,
    TRAINED_D,
    TRAINED_N,
    ModelConfig,
    config_batch,
    max_rel_err,
    model_configs,
    property_settings,
)


def gdpp_configs(max_L: int = 7) -> st.SearchStrategy[ModelConfig]:
    """GD++ configs (one head) whose ``(d, n, L)`` the default run draws from four, with four
    sequences (:data:`BATCH`): the trained models' sizes (``tests/properties/test_trained.py``;
    Hypothesis's first example); one input, token and layer; fewer tokens than inputs and four
    layers; five inputs, ten tokens and ``max_L`` layers.  Most of an example's time is compiling
    the operations of its model's conversion and passes for its shapes; drawn from these four (the
    data and the degeneracy as ``model_configs`` draws them), examples meet shapes met before, here
    or in the other property tests, and reuse their programs.  The slow profile draws every size."""
    configs = model_configs(kinds=("gdpp",), max_L=max_L)
    if os.environ.get("HYPOTHESIS_PROFILE") == "slow":
        return configs
    sizes = st.sampled_from(((TRAINED_D, TRAINED_N, 3), (1, 1, 1), (3, 2, 4), (5, 10, max_L)))
    return st.tuples(configs, sizes).map(
        lambda c: dataclasses.replace(c[0], d=c[1][0], n=c[1][1], L=c[1][2])
    )


BATCH = 4  # sequences per batch, as the trained models' tests draw


@property_settings()
@given(gdpp_configs(), st.floats(0.01, 1.0))
def test_gd_construction_equals_explicit_gd_at_every_layer(cfg: ModelConfig, step: float) -> None:
    b = config_batch(cfg, batch=BATCH)
    X, y, xq = (np.asarray(v) for v in (b.X, b.y, b.x_query))  # sliced below in NumPy, not JAX
    Sigma_norm = max(1.0, float(np.max(np.linalg.norm(X, axis=(-2, -1)) ** 2)))
    eta = step / Sigma_norm  # stable steps: eta * ||Sigma|| <= 1
    P, Q = (jnp.asarray(m) for m in models.universal(constructions.gd(eta, cfg.L), cfg.d))
    w = np.asarray(inspector.implicit_states(P, Q, b.X, b.y, backend="numpy").w)  # (L+1, B, d)
    reads = np.asarray(models.predict(P, Q, b.X, b.y, b.x_query, all_layers=True))  # Gram form
    for i in range(BATCH):
        explicit = constructions.gd_explicit(X[i], y[i], eta, cfg.L)
        assert max_rel_err(w[:, i], explicit) < RTOL64
        assert max_rel_err(reads[:, i], explicit @ xq[i]) < RTOL64


@property_settings()
@given(gdpp_configs(max_L=4), st.lists(st.floats(-1.0, 0.5), min_size=4, max_size=4))
def test_gdpp_layer_maps_every_eigenvalue_by_the_derived_map(
    cfg: ModelConfig, scales: list[float]
) -> None:
    b = config_batch(cfg, batch=BATCH)  # the first sequence checked
    C0 = np.asarray(b.X[0])
    mu0 = np.linalg.eigvalsh(C0.T @ C0)
    top = max(float(mu0[-1]), 1e-3)
    omega_xx = np.array(scales[: cfg.L]) / (3 * top)  # keeps 1 + omega_xx mu in [0, 1.2]
    params = models.Gdpp(jnp.asarray(omega_xx), jnp.asarray(np.full(cfg.L, -0.1 / top)))
    P, Q = models.universal(params, cfg.d)
    Z = np.asarray(models.forward_tokens(P, Q, b.X, b.y, b.x_query))  # sliced below in NumPy
    f = gdpp_eigen_rule().numpy
    mu = mu0
    for l in range(cfg.L):
        mu = np.asarray(f(mu, omega_xx[l]), dtype=np.float64)
        C = Z[l + 1, 0, : cfg.n, : cfg.d]
        observed = np.linalg.eigvalsh(C.T @ C)
        assert (
            max_rel_err(observed, np.sort(mu)) < 1e-10
        )  # eigvalsh: backward-stable, ~d*eps*||Sigma||


@property_settings()
@given(st.floats(1.01, 1000.0), st.floats(1e-11, 1e-2), st.integers(0, 2**16), st.integers(2, 6))
def test_theorem_5_1_reaches_eps_within_the_derived_layer_count(
    kappa: float, eps: float, seed: int, d: int
) -> None:
    X, w, xq = constructions.spectrum_data(seed, 3 * d, d, 1.0, kappa)
    pc = constructions.gdpp_second_order(1.0, kappa, eps=eps)
    assert len(pc.params.omega_xx) == layer_count(kappa, eps).total
    w_hat = constructions.implicit_weight(pc.params, X, X @ w)
    assert abs((w_hat - w) @ xq) <= eps * np.linalg.norm(xq) * np.linalg.norm(w)


def _error_to_ridge(n: int, sigmas: tuple[float, float], seeds: range, d: int = 3) -> float:
    errs = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        sigma = sigmas[seed % 2]
        X = rng.standard_normal((n, d)) / np.sqrt(n)  # Theorem 5.2: x_i ~ N(0, I/n)
        y = X @ rng.standard_normal(d) + sigma * rng.standard_normal(n)
        ridge = np.linalg.solve(X.T @ X + sigma**2 * np.eye(d), X.T @ y)
        w2 = constructions.implicit_weight(constructions.theorem_5_2(*sigmas, n), X, y)
        errs.append(np.linalg.norm(w2 - ridge) / np.linalg.norm(ridge))
    return float(np.mean(errs))


@property_settings(default_examples=3)
@given(st.floats(0.0, 2.0), st.floats(2.5, 5.0))
def test_theorem_5_2_error_to_ridge_shrinks_as_n_grows(s1: float, s2: float) -> None:
    ns = (100, 400, 1600, 6400)
    errs = [_error_to_ridge(n, (s1, s2), range(16)) for n in ns]
    assert all(e2 < e1 for e1, e2 in zip(errs, errs[1:])), (
        f"errors {errs} do not decrease over n={ns}"
    )
    slope = np.polyfit(np.log(ns), np.log(errs), 1)[0]
    assert slope < -0.3, f"fitted rate n^{slope:.2f} is slower than the ~n^-1/2 of the derivation"
