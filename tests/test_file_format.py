r"""The model file format, pinned from outside: a plain ``numpy.savez`` file and the layer rule written out here.

Nothing in this module calls lintf except the ``lintf predict`` command under test: the file is written
with NumPy, and the expected prediction comes from the rule

    e_i ← e_i + Σ_k P[l, k] (Σ_{j≤n} e_j e_jᵀ) Q[l, k] e_i   for every token, the query included,
    ŷ = −(last coordinate of the query token after the last layer),

looped token by token.  ``P`` and ``Q`` are random and non-symmetric, so a file read with ``Q``
transposed, ``P`` and ``Q`` swapped, or the layers or heads reordered gives other numbers.
"""

from __future__ import annotations

import numpy as np

from numerics.cli import main

L, H, d, n, B = 3, 2, 3, 5, 4


def rule_by_hand(
    P: np.ndarray, Q: np.ndarray, X: np.ndarray, y: np.ndarray, xq: np.ndarray
) -> np.ndarray:
    out = []
    for b in range(X.shape[0]):
        tokens = [np.append(X[b, j], y[b, j]) for j in range(n)] + [np.append(xq[b], 0.0)]
        for l in range(P.shape[0]):
            E = sum(np.outer(e, e) for e in tokens[:n])
            tokens = [e + sum(P[l, k] @ E @ Q[l, k] @ e for k in range(P.shape[1])) for e in tokens]
        out.append(-tokens[n][-1])
    return np.array(out)


def test_plain_numpy_model_file_predicts_by_the_layer_rule(tmp_path):
    rng = np.random.default_rng(2024)
    P = 0.15 * rng.standard_normal((L, H, d + 1, d + 1))
    Q = 0.15 * rng.standard_normal((L, H, d + 1, d + 1))
    X, y, xq = (
        rng.standard_normal((B, n, d)),
        rng.standard_normal((B, n)),
        rng.standard_normal((B, d)),
    )
    expected = rule_by_hand(P, Q, X, y, xq)
    np.savez(tmp_path / "model.npz", P=P, Q=Q)
    np.savez(tmp_path / "data.npz", X=X, y=y, x_query=xq)
    assert (
        main(
            [
                "predict",
                str(tmp_path / "model.npz"),
                str(tmp_path / "data.npz"),
                "--out",
                str(tmp_path / "pred.npy"),
            ]
        )
        == 0
    )
    got = np.load(tmp_path / "pred.npy")
    assert got.shape == (B,)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12 * np.max(np.abs(expected)))
    # the check can tell the layouts apart: each misreading moves the prediction by far more than the tolerance
    misread = {
        "Q transposed": (P, np.swapaxes(Q, -1, -2)),
        "P, Q swapped": (Q, P),
        "layers reversed": (P[::-1], Q[::-1]),
        "P transposed": (np.swapaxes(P, -1, -2), Q),
    }
    for name, (Pm, Qm) in misread.items():
        assert np.max(np.abs(rule_by_hand(Pm, Qm, X, y, xq) - expected)) > 1e-3 * np.max(
            np.abs(expected)
        ), name
