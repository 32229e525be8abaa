"""Baselines (numerics.baselines, numerics.baselines.spectral) and evaluation helpers (numerics.evaluate.losses)."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics import baselines
from numerics.baselines.spectral import ridge, ridge_weights, spectral
from numerics.cli import main as lintf
from numerics.data import Batch
from numerics.evaluate import losses as evaluation

# Per-instance float64 linear algebra on well-conditioned 10×10 systems: agreement to 1e-9.
LINALG_RTOL = 1e-9
# Sampling checks: |estimate − closed form| <= Z_SE standard errors.
Z_SE = 4.0
# Every test draws data in chunks of this size, so the sampler and the batched kernels compile once.
TCHUNK = 10_000
# A few shapes covering n < d, n = d and n > d (each new shape recompiles the kernels).
SHAPES = [(1, 3), (4, 6), (6, 6), (12, 5), (20, 10)]


def _rand(seed: int, B: int, n: int, d: int, noise: float = 0.5):
    rng = np.random.default_rng(seed)
    X, xq, w = (
        rng.standard_normal((B, n, d)),
        rng.standard_normal((B, d)),
        rng.standard_normal((B, d)),
    )
    return X, np.einsum("bnd,bd->bn", X, w) + noise * rng.standard_normal((B, n)), xq


@settings(max_examples=15)
@given(
    shape=st.sampled_from(SHAPES),
    seed=st.integers(0, 2**16),
    s=st.one_of(st.just(0.0), st.floats(1e-2, 50.0)),
)
def test_ridge_matches_numpy_per_instance(shape: tuple[int, int], seed: int, s: float) -> None:
    """Eigen route vs numpy.linalg.solve (s > 0) / lstsq minimum-norm (s = 0), one instance at a time."""
    n, d = shape
    X, y, xq = _rand(seed, 3, n, d)
    w = np.asarray(ridge_weights(jnp.asarray(X), jnp.asarray(y), s))
    pred = np.asarray(ridge(jnp.asarray(X), jnp.asarray(y), jnp.asarray(xq), s))
    for b in range(3):
        if s > 0:
            ref = np.linalg.solve(X[b].T @ X[b] + s * np.eye(d), X[b].T @ y[b])
        else:
            ref = np.linalg.lstsq(X[b], y[b], rcond=None)[0]
        np.testing.assert_allclose(w[b], ref, rtol=1e-7, atol=1e-7)
        assert np.isclose(pred[b], xq[b] @ ref, rtol=1e-7, atol=1e-7)


def test_ols_residual_and_ada_sigma() -> None:
    X, y, xq = _rand(1, 3, 20, 10)  # three sequences, as the instances above: one spectral program
    sp = spectral(jnp.asarray(X), jnp.asarray(y), jnp.asarray(xq))
    for b in range(3):
        w = np.linalg.solve(X[b].T @ X[b], X[b].T @ y[b])
        rho = np.sum((y[b] - X[b] @ w) ** 2)
        assert np.isclose(float(sp.rho[b]), rho, rtol=LINALG_RTOL)
        assert np.isclose(float(baselines.sigma2_hat(sp)[b]), rho / 10, rtol=LINALG_RTOL)
        assert np.isclose(
            float(baselines.gd_direction(sp)[b]), xq[b] @ X[b].T @ y[b], rtol=LINALG_RTOL
        )


@pytest.mark.parametrize("n,d", [(20, 10), pytest.param(8, 5, marks=pytest.mark.slow)])
def test_one_layer_optimum_sigma0(n: int, d: int) -> None:
    r"""σ = 0: the tuned GD step is 1/(n+d+1) and its loss is d(d+1)/(2(n+d+1)) (docs/model.md: the loss convention)."""
    r = baselines.table(
        "fixed:0",
        n=n,
        d=d,
        sequences=20_000,
        tune_sequences=20_000,
        seed=1,
        methods=("GD", "Oracle"),
        chunk=TCHUNK,
    )
    eta_star, loss_star = 1 / (n + d + 1), d * (d + 1) / (2 * (n + d + 1))
    key = jax.random.split(jax.random.PRNGKey(1))[0]
    parts = list(evaluation.batches(key, "fixed:0", 20_000, n, d, TCHUNK))
    g = np.concatenate([np.asarray(baselines.gd_direction(sp)) for _, sp in parts])
    yq = np.concatenate([np.asarray(b.y_query) for b, _ in parts])
    eta_se = np.sqrt(np.sum(g**2 * (yq - r["GD"]["eta"] * g) ** 2)) / np.sum(
        g**2
    )  # sandwich SE of the slope
    assert abs(r["GD"]["eta"] - eta_star) < Z_SE * eta_se, (r["GD"]["eta"], eta_star, eta_se)
    assert abs(r["GD"]["raw"] - loss_star) < Z_SE * r["GD"]["raw_se"], (r["GD"], loss_star)
    assert r["Oracle"]["raw"] < 1e-20  # noiseless, n > d: the oracle (= OLS) interpolates


def _tuned_const(noise: str) -> float:
    """ConstRR's tuned ``λ`` on 20 000 sequences of ``noise`` (n = 20, d = 10, key 2)."""
    with jax.enable_x64(True):
        parts = list(evaluation.batches(jax.random.PRNGKey(2), noise, 20_000, 20, 10, TCHUNK))
        sp = baselines.Spectral(*(jnp.concatenate(f) for f in zip(*(p[1] for p in parts))))
        return baselines.tune_const(sp, jnp.concatenate([p[0].y_query for p in parts]))


def test_const_rr_recovers_fixed_sigma() -> None:
    """For fixed σ the Bayes rule is ridge with λ = σ², so ConstRR must tune to ≈ σ² = 4."""
    lam = _tuned_const("fixed:2")
    assert 3.0 < lam < 5.3, lam


def test_const_rr_follows_a_noise_beyond_its_first_grid() -> None:
    """At σ = 300 the Bayes rule is ridge with λ = σ² = 9e4, past the first grid's top (1e4): the grid goes on."""
    lam = _tuned_const("fixed:300")
    assert 9e4 / 3 < lam < 9e4 * 3, (
        lam
    )  # the loss is flat near λ = σ² here; the first grid stopped at 1e4


def test_the_gd_step_is_never_a_step_against_the_gradient() -> None:
    """``tune_eta`` minimises the tuning loss over ``η >= 0``: targets built as ``c·g`` give ``c`` for ``c > 0`` and
    ``0`` for ``c < 0``, where the unconstrained minimiser would step against the gradient (the loss is quadratic)."""
    key = jax.random.PRNGKey(3)
    with jax.enable_x64(True):
        # one chunk of the size of every other draw here: the sampler and spectral programs are
        # shared
        ((_, sp),) = evaluation.batches(key, "fixed:1", TCHUNK, 20, 10, TCHUNK)
        g = baselines.gd_direction(sp)
        assert baselines.tune_eta(sp, 2.0 * g) == pytest.approx(2.0, rel=1e-12)
        assert baselines.tune_eta(sp, -2.0 * g) == 0.0
        assert baselines.tune_eta(sp, jnp.zeros_like(g)) == 0.0


def _solve_loss(
    X: np.ndarray, y: np.ndarray, xq: np.ndarray, yq: np.ndarray
) -> Callable[[np.ndarray | float], float]:
    """``s ↦`` mean ``½(y_t − x_tᵀ (Σ + s I)^{-1} α)²`` by ``numpy.linalg.solve`` per sequence (no
    eigenbasis); ``Σ = XᵀX`` and ``α = Xᵀy`` are formed once, the brute-force searches call it thousands
    of times."""
    sigma, alpha, eye = (
        np.einsum("bni,bnj->bij", X, X),
        np.einsum("bni,bn->bi", X, y)[..., None],
        np.eye(X.shape[-1]),
    )

    def loss(s: np.ndarray | float) -> float:
        S = sigma + np.reshape(np.asarray(s, float), (-1, 1, 1)) * eye
        w = np.linalg.solve(S, alpha)[..., 0]
        return float(np.mean(0.5 * (yq - np.einsum("bd,bd->b", xq, w)) ** 2))

    return loss


def _brute_const(loss) -> tuple[float, float]:  # noqa: ANN001
    """``argmin_λ loss(λ)`` over ``[1e-6, 1e4]``: 400 log-spaced points, then a bounded Brent search."""
    from scipy.optimize import minimize_scalar

    grid = np.linspace(np.log(1e-6), np.log(1e4), 400)
    i = int(np.argmin([loss(np.exp(u)) for u in grid]))
    r = minimize_scalar(
        lambda u: loss(np.exp(u)),
        bounds=(grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]),
        method="bounded",
        options={"xatol": 1e-9},
    )
    return float(np.exp(r.x)), float(r.fun)


def _brute_tuned(loss, s2: np.ndarray) -> tuple[float, float, float]:  # noqa: ANN001
    """``argmin_{c, m} loss(m · min(σ̂², c))``: every ``σ̂²`` value (and ∞) as the cap with a Brent search over
    ``m``, then Nelder–Mead on ``(log c, log m)`` from the best pair."""
    from scipy.optimize import minimize, minimize_scalar

    best = (np.inf, 0.0, 0.0)
    for c in [*np.sort(s2), np.inf]:
        r = minimize_scalar(
            lambda u: loss(np.exp(u) * np.minimum(s2, c)),
            bounds=(np.log(1e-2), np.log(50.0)),
            method="bounded",
            options={"xatol": 1e-7},
        )
        best = min(best, (float(r.fun), float(min(c, 2 * s2.max())), float(np.exp(r.x))))
    r = minimize(
        lambda v: loss(np.exp(v[1]) * np.minimum(s2, np.exp(v[0]))),
        np.log(best[1:]),
        method="Nelder-Mead",
        options={"xatol": 1e-9, "fatol": 1e-15},
    )
    return float(np.exp(r.x[0])), float(np.exp(r.x[1])), float(r.fun)


def test_const_and_tuned_rr_reach_the_brute_force_optimum() -> None:
    """ConstRR's ``λ_c`` and TunedRR's ``(cap, mult)`` against scipy on the same 200 sequences (n = 20, d = 3,
    ``σ ~ U(0, 3)``).

    The tuners' last refinement round has a grid step under 1 %; 2 % on the parameters is above that and
    far below one coarse grid step (58 % for ``λ_c``, 26 % for ``mult``).  The losses agree to 1e-4
    relative (TunedRR's loss has kinks at every ``σ̂²``, so it is not flat at the optimum); the cap
    only matters up to ``max σ̂²``.
    """
    B, n, d = 200, 20, 3
    rng = np.random.default_rng(7)
    X, xq, w = (
        rng.standard_normal((B, n, d)),
        rng.standard_normal((B, d)),
        rng.standard_normal((B, d)),
    )
    y = np.einsum("bnd,bd->bn", X, w) + rng.uniform(0, 3, (B, 1)) * rng.standard_normal((B, n))
    yq = np.einsum("bd,bd->b", xq, w)
    sp = spectral(jnp.asarray(X), jnp.asarray(y), jnp.asarray(xq))
    lam, (cap, mult) = (
        baselines.tune_const(sp, jnp.asarray(yq)),
        baselines.tune_tuned(sp, jnp.asarray(yq)),
    )

    loss = _solve_loss(X, y, xq, yq)

    lam_b, loss_b = _brute_const(loss)
    assert abs(lam / lam_b - 1) < 0.02, (lam, lam_b)
    assert abs(loss(lam) - loss_b) < 1e-4 * loss_b, (loss(lam), loss_b)
    s2 = np.array(
        [
            np.sum((y[b] - X[b] @ np.linalg.lstsq(X[b], y[b], rcond=None)[0]) ** 2) / (n - d)
            for b in range(B)
        ]
    )
    cap_b, mult_b, tuned_b = _brute_tuned(loss, s2)
    assert (
        abs(min(cap, s2.max()) / min(cap_b, s2.max()) - 1) < 0.02 and abs(mult / mult_b - 1) < 0.02
    ), ((cap, mult), (cap_b, mult_b))
    assert abs(loss(mult * np.minimum(s2, cap)) - tuned_b) < 1e-4 * tuned_b, (
        loss(mult * np.minimum(s2, cap)),
        tuned_b,
    )


def test_adjusted_loss_and_paired_se() -> None:
    """Chunked Chan merge vs numpy on the concatenated per-sequence differences."""
    rng = np.random.default_rng(0)
    yq, pred, orc = rng.standard_normal(1000), rng.standard_normal(1000), rng.standard_normal(1000)
    acc = evaluation.LossAccumulator()
    for sl in (slice(0, 300), slice(300, 301), slice(301, 1000)):
        acc.add({"m": jnp.asarray(pred[sl])}, jnp.asarray(yq[sl]), jnp.asarray(orc[sl]))
    diff = 0.5 * (yq - pred) ** 2 - 0.5 * (yq - orc) ** 2
    res = acc.result()["m"]
    assert np.isclose(res["loss"], diff.mean(), rtol=1e-12)
    assert np.isclose(res["se"], diff.std(ddof=1) / np.sqrt(1000), rtol=1e-12)


def test_layer_losses_and_profile() -> None:
    B = TCHUNK  # the chunk's size: the spectral and oracle programs of the draws above
    X, y, xq = _rand(2, B, 20, 10)
    w_true = np.random.default_rng(3).standard_normal((B, 10))
    sig = np.full(B, 0.5)
    batch = Batch(
        *(jnp.asarray(a) for a in (X, y, xq, np.einsum("bd,bd->b", xq, w_true), sig, w_true))
    )
    sp = spectral(batch.X, batch.y, batch.x_query)
    orc = np.asarray(evaluation.oracle_predict(sp, batch.sigma))
    reads = jnp.stack([jnp.zeros(B), jnp.asarray(orc), jnp.asarray(orc) + 1.0])
    res = evaluation.layer_losses(reads, batch)
    yq = np.asarray(batch.y_query)
    np.testing.assert_allclose(
        res["loss"],
        [
            np.mean(0.5 * yq**2 - 0.5 * (yq - orc) ** 2),
            0.0,
            np.mean(0.5 * (yq - orc - 1) ** 2 - 0.5 * (yq - orc) ** 2),
        ],
        rtol=1e-12,
    )
    with pytest.raises(ValueError, match="reads"):
        evaluation.layer_losses(reads[:, :10], batch)
    grid = evaluation.sigma_grid("uniform:2", points=4)
    assert grid[-1] == 3.0 and grid[0] == 0.0
    with jax.enable_x64(True):
        prof = evaluation.profile(
            baselines.predictor(
                baselines.Tuned(lam_const=1.0), "uniform:2", methods=("ConstRR", "Oracle")
            ),
            grid,
            20,
            10,
            B,
            jax.random.PRNGKey(0),
            chunk=TCHUNK,
        )
    assert prof["Oracle"]["loss"].shape == (4,) and np.all(prof["Oracle"]["loss"] == 0)
    assert (
        prof["ConstRR"]["loss"][1] < prof["ConstRR"]["loss"][-1]
    )  # λ=1 is right at σ=1, wrong at σ=3


def test_bad_inputs() -> None:
    for m in baselines.OLS_BASED:
        with pytest.raises(ValueError, match="n > d"):
            baselines.table("uniform:1", n=10, d=10, sequences=10, tune_sequences=10, methods=(m,))
    with pytest.raises(ValueError, match=">= 0"):
        baselines.table("uniform:-1", sequences=10)
    with pytest.raises(ValueError, match="methods"):
        baselines.table("uniform:1", sequences=10, methods=("Ridge",))
    X, y, xq = (jnp.asarray(a) for a in _rand(0, 2, 20, 10))
    with pytest.raises(ValueError, match="ridge parameter"):
        ridge(X, y, xq, -1.0)
    with pytest.raises(ValueError, match="x_query"):
        ridge(X, y, xq[:, :3], 1.0)
    with pytest.raises(ValueError, match="cap"):
        baselines.Tuned(cap=-1.0)


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--noise", "uniform:-1"], "got -1.0"),
        (["--noise", "bogus:1"], "bogus"),
        (["--noise", "uniform:1", "--n", "5"], "leave OLS, AdaRR, TunedRR out with --methods"),
        (["--noise", "uniform:1", "--methods", "OLS,Foo"], "--methods 'OLS,Foo'"),
        (["--noise", "uniform:1", "--methods", "Bayes,,GD"], "got an empty name"),
        (["--noise", "uniform:1", "--methods", ""], "--methods '':"),
        (
            ["--noise", "uniform:1", "--nodes", "7"],
            "--nodes must be a positive multiple of 8, got 7",
        ),
        (
            ["--noise", "uniform:1", "--json", "--markdown"],
            "--json and --markdown each choose the output",
        ),
    ],
)
def test_cli_bad_input_is_one_line(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert lintf(["baselines", *argv, "--eval-sequences", "10"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("lintf baselines: error:") and "\n" not in err and needle in err


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert (
        lintf(
            [
                "baselines",
                "--noise",
                "categorical:1,3",
                "--eval-sequences",
                "10000",
                "--tune-sequences",
                "20000",
                "--chunk-sequences",
                str(TCHUNK),
                "--seed",
                "3",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    res = out["results"]["categorical:1,3"]
    assert set(res) == set(baselines.NAMES) and res["Oracle"]["loss"] == 0.0
    # the posterior mean under the discrete prior beats every other baseline (each by more than
    # five paired standard errors on these 10k sequences), and the oracle, which knows σ_τ, beats it
    others = [m for m in baselines.NAMES if m not in ("Bayes", "Oracle")]
    assert all(res["Bayes"]["loss"] < res[m]["loss"] for m in others), res
    assert res["Bayes"]["loss"] > 0


def test_every_closed_form_prediction_matches_numpy_per_sequence() -> None:
    """:func:`numerics.baselines.predictor` against a NumPy loop over sequences: OLS by ``lstsq``, AdaRR at
    ``σ̂² = ‖y − X w_ols‖²/(n − d)``, TunedRR at ``m · min(σ̂², c)`` with the cap binding on about half of the
    sequences, ConstRR at ``λ_c``, the floor at ``E σ²``, the oracle at ``σ_τ²`` and GD as ``η x_tᵀ Xᵀ y``."""
    B, n, d = 40, 12, 4
    X, y, xq = _rand(21, B, n, d, noise=1.5)
    sigma = np.random.default_rng(22).uniform(0.5, 2.0, B)
    s2 = np.array(
        [
            np.sum((y[b] - X[b] @ np.linalg.lstsq(X[b], y[b], rcond=None)[0]) ** 2) / (n - d)
            for b in range(B)
        ]
    )
    cap, mult = float(np.median(s2)), 1.7
    tuned = baselines.Tuned(lam_const=0.8, cap=cap, mult=mult, eta=0.03)
    noise = "uniform:2"  # E σ² = 4/3
    names = ("OLS", "AdaRR", "TunedRR", "ConstRR", "ConstRR_Esigma2", "Oracle", "GD")
    with jax.enable_x64(True):
        batch = Batch(*(jnp.asarray(a) for a in (X, y, xq, np.zeros(B), sigma, np.zeros((B, d)))))
        got = baselines.predictor(tuned, noise, names)(
            batch, spectral(batch.X, batch.y, batch.x_query)
        )

    def ridge_np(b: int, s: float) -> float:
        return float(xq[b] @ np.linalg.solve(X[b].T @ X[b] + s * np.eye(d), X[b].T @ y[b]))

    want = {
        "OLS": [ridge_np(b, 0.0) for b in range(B)],
        "AdaRR": [ridge_np(b, s2[b]) for b in range(B)],
        "TunedRR": [ridge_np(b, mult * min(s2[b], cap)) for b in range(B)],
        "ConstRR": [ridge_np(b, 0.8) for b in range(B)],
        "ConstRR_Esigma2": [ridge_np(b, 4.0 / 3.0) for b in range(B)],
        "Oracle": [ridge_np(b, sigma[b] ** 2) for b in range(B)],
        "GD": [0.03 * float(xq[b] @ X[b].T @ y[b]) for b in range(B)],
    }
    for name in names:
        np.testing.assert_allclose(
            np.asarray(got[name]), want[name], rtol=LINALG_RTOL, err_msg=name
        )
    capped = s2 > cap
    assert 0 < capped.sum() < B  # the cap binds on some sequences and not on the others
    assert np.min(np.abs(np.array(want["TunedRR"]) - np.array(want["AdaRR"]))[capped]) > 1e-6


def test_the_tuning_loss_grids_are_mean_losses_of_numpy_ridge() -> None:
    """``mean_loss_grid`` (ConstRR's objective) and ``tuned_loss_grid`` (TunedRR's, at ``m · min(σ̂², c)``) against
    the mean of ``½(y_t − ŷ)²`` with ``ŷ`` by NumPy, on caps that bind on some sequences and not on others."""
    B, n, d = 40, 12, 4  # the sizes of the test above: one spectral program
    X, y, xq = _rand(23, B, n, d, noise=1.0)
    yq = np.random.default_rng(24).standard_normal(B)
    s2 = np.array(
        [
            np.sum((y[b] - X[b] @ np.linalg.lstsq(X[b], y[b], rcond=None)[0]) ** 2) / (n - d)
            for b in range(B)
        ]
    )

    def mean_loss(s: np.ndarray) -> float:
        pred = [
            xq[b] @ np.linalg.solve(X[b].T @ X[b] + s[b] * np.eye(d), X[b].T @ y[b])
            for b in range(B)
        ]
        return float(np.mean(0.5 * (yq - np.array(pred)) ** 2))

    grid = np.array([0.0, 0.3, 2.0])
    caps, mults = np.quantile(s2, [0.3, 0.7]), np.array([0.5, 2.0])
    with jax.enable_x64(True):
        sp = spectral(jnp.asarray(X), jnp.asarray(y), jnp.asarray(xq))
        const = np.asarray(baselines.mean_loss_grid(sp, jnp.asarray(yq), jnp.asarray(grid)))
        tuned = np.asarray(
            baselines.tuned_loss_grid(sp, jnp.asarray(yq), jnp.asarray(caps), jnp.asarray(mults))
        )
    np.testing.assert_allclose(const, [mean_loss(np.full(B, s)) for s in grid], rtol=LINALG_RTOL)
    np.testing.assert_allclose(
        tuned, [mean_loss(m * np.minimum(s2, c)) for c, m in zip(caps, mults)], rtol=LINALG_RTOL
    )
