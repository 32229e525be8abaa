r"""Best GD++ loss at ``fixed:0`` per depth, fitted on sampled spectra (issue 6, target 3; an analysis, not a test).

For GD++ (``ω_xy = ω_yy = 0``) every quantity is a polynomial in ``Σ``; per eigenvalue ``λ`` of
``Σ = XᵀX`` the scaling ``m_l`` of ``x`` and the residual ``r_l = 1 − λ s_l`` of the implicit weight
``w^l = s_l(Σ) α`` follow (our reading of Lemma 4.3 with ``A = ω_xx Σ^l``, ``b = 0``, ``c = ω_yx α^l``)
``m_{l+1} = m_l (1 + ω_xx^l λ m_l²)``, ``r_{l+1} = r_l (1 + ω_yx^l λ m_l²)``, ``m_0 = r_0 = 1``, and
with ``w, x_t ~ N(0, I)`` the loss is ``½ E Σ_j r_L(λ_j)²``.  This cheap objective is minimised with
L-BFGS over the ``2L`` parameters on the spectra of 50 000 sequences; the fitted model is then
evaluated on 50 000 held-out sequences with the independent route :func:`numerics.models.predict`
(the first line checks the formula against ``predict`` on a construction).

    python benchmarks/gdpp_spectral_fit.py      # minutes per depth beyond 5 on 2 cores
"""
import sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np, scipy.optimize as so
from numerics.data import sample
from numerics.constructions import gdpp_second_order
from numerics.models import predict, universal, Gdpp
b = sample(jax.random.PRNGKey(123), "fixed:0", 100_000, 20, 10, jnp.float64)
lam = jnp.asarray(np.linalg.eigvalsh(np.asarray(jnp.einsum("bnd,bne->bde", b.X, b.X))))  # (B, d)
def resid(wxx, wyx, lam):
    m = jnp.ones_like(lam); r = jnp.ones_like(lam)
    for l in range(wxx.shape[0]):
        r = r * (1 + wyx[l] * lam * m**2)
        m = m * (1 + wxx[l] * lam * m**2)
    return r
def loss(theta, lam):
    L = theta.shape[0] // 2
    return 0.5 * jnp.mean(jnp.sum(resid(theta[:L], theta[L:], lam) ** 2, -1))
# validate vs Monte Carlo with the model's predict
pc = gdpp_second_order(1.9, 58, precondition=3).params
P, Q = universal(Gdpp(jnp.asarray(pc.omega_xx), jnp.asarray(pc.omega_yx)), 10)
mc = float(jnp.mean(0.5 * (predict(P, Q, b.X, b.y, b.x_query) - b.y_query) ** 2))
print("check spectral formula vs predict:", float(loss(jnp.concatenate([jnp.asarray(pc.omega_xx), jnp.asarray(pc.omega_yx)]), lam)), mc)
vg = jax.jit(jax.value_and_grad(loss))
fit_lam = lam[:50_000]; test_lam = lam[50_000:]
best_prev = None
for L in range(1, 8):
    starts = []
    pc = gdpp_second_order(1.9, 58, precondition=L - 1).params
    starts.append(np.concatenate([pc.omega_xx, pc.omega_yx]))
    if best_prev is not None:  # deeper from shallower: prepend a preconditioning layer
        starts.append(np.concatenate([[-1 / (3 * 60.0)], best_prev[:L-1], [0.0], best_prev[L-1:]]))
    best = None
    for x0 in starts:
        r = so.minimize(lambda t: tuple(np.asarray(v) for v in vg(jnp.asarray(t), fit_lam)), x0, jac=True,
                        method="L-BFGS-B", options=dict(maxiter=3000, ftol=1e-30, gtol=1e-30))
        if best is None or r.fun < best.fun: best = r
    best_prev = best.x
    te = float(loss(jnp.asarray(best.x), test_lam))
    # monte carlo with predict on held-out sequences
    P, Q = universal(Gdpp(jnp.asarray(best.x[:L]), jnp.asarray(best.x[L:])), 10)
    mc = float(jnp.mean(0.5 * (predict(P, Q, b.X[50_000:], b.y[50_000:], b.x_query[50_000:]) - b.y_query[50_000:]) ** 2))
    print(f"L={L} fit {best.fun:.3e} held-out spectral {te:.3e} held-out predict {mc:.3e}  params {np.array2string(best.x, precision=4)}", flush=True)
    
