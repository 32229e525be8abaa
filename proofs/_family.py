r"""Checks that every ``proofs/family_*.py`` script runs for its member (the two routes of each
question).

* :func:`check_query`: ring tokens (symbolic context and gates, or rational context with symbolic
  ``x_t`` for
  depth) through the literal layers, against Lemma 4.3's ``M, w`` recursion through the bridge.
* :func:`check_self_reading`: the derived extra term of a query that reads itself, against the
  literal layer on
  exact rationals, and the conditions read off its factors.
* :func:`check_closure`: per-position tuples on rationals, and the exact swap counterexample.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy as sp

from lintf_theory import (
    FamilyHead,
    decide_query_linearity,
    derive_context_weights,
    derive_query_recursion,
    derive_self_reading,
    distinct_positions,
    family_layer,
    family_states,
    gate_from_query_counterexample,
    self_reading_symbols,
    swap_contexts,
)
from lintf_theory.exact import rational_array
from proofs._check import Report


def check_query(report: Report, member: str) -> None:
    """ŷ linear in x_t with w from the query's recursion: symbolic context (2 layers) and deep
    rational context."""

    q = derive_query_recursion()
    report.require(
        not q.uses_u_or_a and q.matches_lemma_4_3,
        "block level: a query moved by (I + G_t) keeps (M x_t, -<w, x_t>), and its (M, w) follow "
        "Lemma 4.3 with G_t alone",
    )
    runs = {
        "symbolic context and gates, n=2, d=1, 2 layers": decide_query_linearity(
            member, n=2, d=1, layers=2, seed=1
        ),
        "symbolic context and gates, n=2, d=2, 1 layer, 2 heads": decide_query_linearity(
            member, n=2, d=2, layers=1, heads=2, seed=2
        ),
        "rational context and gates, symbolic x_t, n=4, d=2, 3 layers, 2 heads": decide_query_linearity(
            member, n=4, d=2, layers=3, heads=2, seed=3, symbolic_context=False
        ),
    }
    for label, r in runs.items():
        report.require(
            r.linear
            and r.context_free_of_query
            and r.matches_query_recursion
            and r.shares_last_token,
            f"{member}, {label}: y_hat is a linear form in x_t; no context token involves x_t; "
            "dy_hat/dx_t equals w_t^L of Lemma 4.3's recursion (bridge) driven by "
            "G_t^l = sum_h S_n^h W_Q^h; the last context token moves by the same G_t^l",
        )
    r = decide_query_linearity(member, n=2, d=1, layers=1, seed=4, query_reads_itself=True)
    report.require(
        not r.linear,
        f"{member}, the query reading itself (S_t = step(S_n, k_t, v_t)): "
        "y_hat is not linear in x_t for random weights (ring, n=2, d=1)",
    )


def check_self_reading(report: Report, member: str) -> None:
    """The query's own update adds a cubic term; derived factors; literal layer on rationals
    agrees."""

    sr = derive_self_reading(member)
    s = self_reading_symbols()
    report.require(
        len(sr.factors) >= 2,
        f"{member}: query reads itself: y_hat = l(x_t) + c(x_t), the cubic "
        f"part factors as {' * '.join(f'({f})' for f in sr.factors)}",
    )
    rng = np.random.default_rng(11)
    D, n = 3, 3
    WQ, WK, WV = (rational_array(rng, (D, D), num=2, den=2) for _ in range(3))
    head = FamilyHead(WQ, WK, WV, gamma=Fraction(1, 3))
    Z = rational_array(rng, (n + 1, D), num=3, den=2)
    Z[n, -1] = Fraction(0)
    alpha_t, beta_t = Fraction(2, 5), Fraction(3, 7)
    gl = np.array([alpha_t] * D, dtype=object) if member == "gla" else alpha_t
    gate = (Fraction(1, 3) if member == "retnet" else gl, beta_t)
    gates = [[gate] * (n + 1)]
    literal = -family_layer(member, [head], Z, n, gates=gates, query_reads_itself=True)[n, -1]
    S_n = family_states(member, head, Z, n, gates[0])[n]
    subs = {s["alpha_t"]: gate[0] if member != "gla" else alpha_t, s["beta_t"]: beta_t}
    for name, val in (("WQ", WQ), ("WK", WK), ("WV", WV), ("S", S_n)):
        subs.update({s[name][i, j]: sp.Rational(val[i, j]) for i in range(D) for j in range(D)})
    subs.update(dict(zip(s["xt"], (sp.Rational(v) for v in Z[n, :2]), strict=True)))
    report.require(
        sr.y_hat.subs(subs) == sp.Rational(literal),
        f"{member}: the derived y_hat (symbolic S_n) equals the literal layer on exact rationals "
        "(n=3, d=2, its own S_n, query gates 2/5, 3/7)",
    )
    xt = sr.xt
    zero_value = {s["WV"][2, 0]: 0, s["WV"][2, 1]: 0}
    antisym = {s["WQ"][i, j]: int(i == j) for i in range(D) for j in range(D)}
    antisym.update({s["WK"][i, j]: 0 for i in range(D) for j in range(D)})
    antisym.update({s["WK"][0, 1]: 1, s["WK"][1, 0]: -1})
    keys_free = {s["WK"][i, j]: 0 for i in range(D) for j in range(2)}
    conds = {
        "W_K x-columns zero": keys_free,
        "k_t ⊥ q_t (x-block of W_Kᵀ W_Q antisymmetric)": antisym,
    }
    if member not in ("deltanet", "gated_deltanet"):
        conds["the value's y-row reads no x ((W_V)_yx = 0)"] = zero_value
    for label, sub in conds.items():
        report.require(
            sp.expand(sr.cubic_part.subs(sub)) == 0,
            f"{member}: with {label} the cubic part vanishes, so y_hat is linear in x_t",
        )
    report.require(
        all(f.free_symbols & set(xt) for f in sr.factors if f.free_symbols - {s["beta_t"]}),
        f"{member}: every factor but beta_t is a form in x_t, so c = 0 iff one factor vanishes "
        "identically (a product of polynomials is zero iff a factor is)",
    )


def check_closure(report: Report, member: str) -> None:
    """Per-position tuples on rationals, and the swap: same S_n^0, different S_n^1 (exact)."""

    rng = np.random.default_rng(5)
    D, n = 3, 4
    gate_w = np.zeros((D, D) if member == "gla" else (D,), dtype=object)
    head = FamilyHead(
        *(rational_array(rng, (D, D), num=2, den=2) for _ in range(3)),
        gamma=Fraction(1, 2),
        w_alpha=gate_w,
        w_beta=np.zeros(D, dtype=object),
    )
    Z = rational_array(rng, (n + 1, D), num=3, den=2)
    Z[n, -1] = Fraction(0)
    count = distinct_positions(member, [head], Z, n)
    sw = swap_contexts(member)
    if member == "linear":
        report.require(
            count == 1 and not sw.next_states_differ,
            "linear (non-causal): one T for every context token, and the swapped context's next "
            "state agrees: the layer closes over E (Lemma 4.3)",
        )
        return
    report.require(
        count == n,
        f"{member}: on exact rationals (n=4, d=2) the context tokens move by {count} "
        "different T_i = I + S_i W_Q: the state is per position",
    )
    report.require(
        sw.same_state and sw.next_states_differ and sw.predictions_differ,
        f"{member}: two 2-token contexts (x_1 ⊥ x_2 keys, the second swapped and rescaled by "
        "sqrt of the decay) have the same S_n at layer 0"
        + (" and the same Gram E" if sw.same_gram else "")
        + " but different S_n at layer 1 and different 2-layer predictions: no map S_n^l -> "
        "S_n^{l+1} exists (exact, Q(sqrt c))",
    )


def check_query_gate(report: Report, member: str) -> None:
    """A query that reads itself with its own gate sigmoid(w^T e_t): y_hat(2 x_t) != 2 y_hat(x_t),
    exactly."""

    gap = gate_from_query_counterexample(member)
    value = sp.N(gap, 30, strict=True)
    report.require(
        gap != 0 and abs(value) > 1e-6,
        f"{member}: one layer, the query reads itself and takes its gate from its own token, the "
        f"query's key on y only (its own key and value add nothing): y_hat(2 x_t) - 2 y_hat(x_t) = "
        f"{float(value):.6g} (exact expression in exp, evaluated to 30 certified digits): not "
        f"linear",
    )


def check_weighted_gd(report: Report, member: str, stated, loss_inputs=None) -> None:
    """Derived weights omega_ik against ``stated(i, k, n, gates)``; y_hat against -grad of the
    weighted LS at 0."""

    cw = derive_context_weights(member)
    n, d = cw.weights.shape
    expected = sp.Matrix(n, d, lambda i, k: stated(i, k, n, cw.gates))
    report.require(
        cw.bilinear and sp.expand(cw.weights - expected) == sp.zeros(n, d),
        f"{member}, regression head, one layer (n=3, d=2, symbolic data and gates): "
        f"y_hat = sum_ik omega_ik y_i x_ik x_tk with omega = {cw.weights.tolist()}",
    )
    w = sp.symbols(f"w0:{d}")
    feats = [
        [cw.X[i, k] * (expected[i, k] if loss_inputs == "gated" else 1) for k in range(d)]
        for i in range(n)
    ]
    weight = [1 if loss_inputs == "gated" else expected[i, 0] for i in range(n)]
    loss = sp.Rational(1, 2) * sum(
        weight[i] * (cw.y[i] - sum(w[k] * feats[i][k] for k in range(d))) ** 2 for i in range(n)
    )
    step = [-sp.diff(loss, wk).subs(dict.fromkeys(w, 0)) for wk in w]
    report.require(
        sp.expand(cw.y_hat - sum(s * x for s, x in zip(step, cw.xt, strict=True))) == 0,
        f"{member}: y_hat = <-grad L(0), x_t>, L = "
        + (
            "1/2 sum_i (y_i - w^T D_i x_i)^2 with D_i = diag(omega_i.): least squares on gated "
            "inputs"
            if loss_inputs == "gated"
            else "1/2 sum_i omega_i (y_i - w^T x_i)^2: one GD step (step 1) "
            "on weighted least squares from w = 0"
        )
        + " (SymPy gradient of the loss)",
    )
