r"""``lintf inspect MODEL.npz [DATA.npz]``: per-layer implicit weights ``(M^l, u^l, a^l, w^l)`` of a saved model.

Theorem 4.1 / Lemma 4.3 (docs/model.md): every layer keeps an implicit linear-regression weight
``w^l`` with read-out ``ŷ^l = ⟨w^l, x_t⟩``.  This command computes the states by the derived
recursion (through the lintf_theory bridge), checks ``w^l`` against autodiff ``∂ŷ^l/∂x_t`` of the
model's forward pass, and compares ``w^l`` with OLS ``w*`` and ridge ``w*_{σ²}`` layer by layer
(batch means).  See :mod:`numerics.evaluate.inspector`.

Data: ``DATA.npz`` (as for ``lintf predict``; ``sigma`` and ``y_query`` are used if present), or
without it ``--sequences`` fresh sequences drawn with ``--noise``, ``--x``, ``--n`` and ``--seed``.
Unset, ``--noise``, ``--x`` and ``--n`` take the model's own setting from its ``meta`` (top level,
or the training ``config``), else ``uniform:5``, ``normal`` and ``20``; the output says which.
Exit status 1 if the two routes disagree (relative difference above ``--tol``).  A family member's file
(docs/family.md) is inspected by :mod:`numerics.cli.inspect_family`.
"""

from __future__ import annotations

import argparse
import io

from numerics.cli.layer_table import print_layers
from numerics.cli.validate import SIGMA_MAX, SIZE_MAX, bounded, memory, model_bytes
from numerics.errors import LintfError
from numerics.io import strict_json

#: The defaults of the options that only sampled data has besides ``--noise``, ``--x`` and ``--n``.
SAMPLED = {"sequences": 256, "seed": 0}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "model", metavar="MODEL.npz", help="saved model (universal P, Q, or a family member's file)"
    )
    p.add_argument("data", metavar="DATA.npz", nargs="?", help="optional data file (else sampled)")
    p.add_argument(
        "--noise",
        default=None,
        help="noise spec for sampled data (default: the model's meta "
        "'noise' if present, else uniform:5)",
    )
    p.add_argument(
        "--x",
        default=None,
        metavar="DIST",
        help="input distribution for sampled data: normal or "
        "uniform:a,b (default: the model's meta 'x' if present, else normal)",
    )
    p.add_argument(
        "--n",
        type=int,
        default=None,
        help="context length for sampled data (default: the model's meta 'n' if present, else 20)",
    )
    p.add_argument(
        "--sequences",
        type=int,
        default=None,
        help=f"number of sampled sequences (default {SAMPLED['sequences']})",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help=f"PRNG seed for sampled data (default {SAMPLED['seed']})",
    )
    p.add_argument(
        "--sigma",
        type=float,
        default=None,
        help="noise level for the ridge reference (default: the data's sigma)",
    )
    p.add_argument(
        "--tol",
        type=float,
        default=1e-9,
        help="relative tolerance of the recursion-vs-autodiff check (default 1e-9)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument(
        "--plot", metavar="FILE.png", help="plot w^l components vs w* and ridge (sequence 0)"
    )


def _get_data(args: argparse.Namespace, d: int, meta: dict) -> tuple[dict, str]:
    import jax  # lazy: start-up
    import numpy as np  # lazy: start-up

    from numerics.cli._userdata import load_data  # lazy: start-up
    from numerics.data import sample  # lazy: start-up

    if args.data:
        return load_data(args.data, d), f"data file {args.data}"
    b = sample(
        jax.random.key(args.seed), args.noise, args.sequences, args.n, d, jax.numpy.float64, args.x
    )
    data = {k: np.asarray(getattr(b, k)) for k in ("X", "y", "x_query", "y_query", "sigma")}
    return data, f"{args.sequences} sampled sequences, seed {args.seed}"


def meta_setting(meta: dict, key: str) -> object:
    """The model's own ``key`` from its meta: top level (``lintf convert``) or the training ``config``."""
    config = meta.get("config") if isinstance(meta.get("config"), dict) else {}
    return meta[key] if key in meta else config.get(key)


def _size(value: object) -> int:
    """A context length: an integer (not a bool, not a fraction) in ``[1, SIZE_MAX]``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= SIZE_MAX:
        raise ValueError(f"must be an integer >= 1 and <= {SIZE_MAX}")
    return value


def _noise(spec: str):  # noqa: ANN202
    """:meth:`numerics.data.Noise.parse`, held to the command line's bound (:func:`numerics.cli.validate.bounded`)."""
    from numerics.data import Noise  # lazy: start-up

    return bounded(Noise.parse(spec))


def sampling_setting(args: argparse.Namespace, meta: dict) -> str:
    """Resolve ``--noise``, ``--x``, ``--n`` (flag, else the model's meta, else the default) in place and describe them;
    ``--sequences`` and ``--seed`` take :data:`SAMPLED` where unset."""
    from numerics.data import XDist  # lazy: start-up

    parts = []
    for key, default, parse in (
        ("noise", "uniform:5", _noise),
        ("x", "normal", XDist.parse),
        ("n", 20, _size),
    ):
        given, own = getattr(args, key), meta_setting(meta, key)
        value, where = (
            (given, "from the command line")
            if given is not None
            else (own, "the model's own, from its meta")
            if own is not None
            else (default, "default; the model's meta has none")
        )
        try:
            parsed = parse(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{key} {value!r} ({where}) is not valid: {exc}") from None
        setattr(args, key, parsed)
        parts.append(f"{'x ~ ' if key == 'x' else key + ' '}{parsed} ({where})")
    for key, default in SAMPLED.items():
        if getattr(args, key) is None:
            setattr(args, key, default)
    return "sampled data: " + "; ".join(parts)


def _plot(path: str, ins, rows: list[dict]) -> None:  # noqa: ANN001
    import matplotlib  # lazy: start-up

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: start-up
    import numpy as np  # lazy: start-up

    from numerics.cli._userdata import save_bytes  # lazy: start-up

    w = np.asarray(ins.states.w[:, 0])  # (L+1, d), sequence 0
    L, d = w.shape[0] - 1, w.shape[1]
    idx = np.arange(d)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    colors = plt.cm.viridis(np.linspace(0, 1, L))
    for l in range(1, L + 1):
        ax1.plot(idx, w[l], "-o", ms=3, color=colors[l - 1], label=f"$w^{{{l}}}$")
    if ins.w_ols is not None:
        ax1.plot(idx, np.asarray(ins.w_ols[0]), "ks", mfc="none", ms=8, label="OLS $w^*$")
    if ins.w_ridge is not None:
        ax1.plot(idx, np.asarray(ins.w_ridge[0]), "rx", ms=8, label=r"ridge $w^*_{\sigma^2}$")
    ax1.set_xticks(idx)
    ax1.set(xlabel="component i", ylabel="value", title="implicit weights, sequence 0")
    ax1.legend(fontsize=7, ncol=2)
    layers = [r["layer"] for r in rows]
    for key, label, style in (
        ("dist_ols", "to OLS $w^*$", "k-s"),
        ("dist_ridge", "to ridge", "r-x"),
    ):
        if key in rows[0]:
            ax2.semilogy(layers, [r[key] for r in rows], style, label=label)
    ax2.set(
        xlabel="layer l",
        ylabel=r"mean $\|w^l - w_{ref}\| / \|w_{ref}\|$",
        title="relative distance",
    )
    ax2.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    plt.close(fig)
    save_bytes(path, buf.getvalue())


def run(args: argparse.Namespace) -> int:
    import jax  # lazy: start-up
    import numpy as np  # lazy: start-up

    from numerics.data import check_sizes  # lazy: start-up
    from numerics.evaluate.inspector import inspect, summary  # lazy: start-up
    from numerics.model_file import load_model  # lazy: start-up

    if args.sigma is not None and not 0 <= args.sigma <= SIGMA_MAX:
        raise ValueError(f"--sigma must be >= 0 and <= {SIGMA_MAX:g}, got {args.sigma:g}")
    if not args.tol > 0:
        raise ValueError(f"--tol must be > 0, got {args.tol}")
    from numerics.models.family_io import is_member_file, load_member  # lazy: start-up

    member = (
        load_member(args.model) if is_member_file(args.model) else None
    )  # a family member (docs/family.md)
    if member is None:
        P, Q, meta = load_model(args.model)
        L, H, d = P.shape[0], P.shape[1], P.shape[2] - 1
    else:
        meta = member.meta
        L, H, d = (
            member.params.W_V.shape[0],
            member.params.W_V.shape[1],
            member.params.W_V.shape[2] - 1,
        )
    setting = None
    if not args.data:
        setting = sampling_setting(args, meta)
        check_sizes(args.n, d, args.sequences)
        memory(
            model_bytes(args.sequences, args.n, L, d),
            f"a model with L={L}, d={d} on {args.sequences} sequences of n={args.n}",
            "--sequences or --n",
        )
    if member is not None:
        from numerics.cli.inspect_family import run as run_member  # lazy: start-up

        with jax.enable_x64(True):
            data, source = _get_data(args, d, meta)
        return run_member(args, member, data, source, setting)
    with jax.enable_x64(True):
        data, source = _get_data(args, d, meta)
        B = data["X"].shape[0]
        sigma = jax.numpy.full((B,), args.sigma) if args.sigma is not None else data.get("sigma")
        ins = inspect(P, Q, data["X"], data["y"], data["x_query"], sigma, data.get("y_query"))
        rows = summary(ins)
    w = np.asarray(ins.states.w)
    if not np.all(np.isfinite(w)):
        seqs = np.flatnonzero(~np.all(np.isfinite(w), axis=(0, 2)))
        raise LintfError(
            f"the implicit weights w^l are not finite on {seqs.size} of {B} sequences (the model "
            f"overflows in float64 on {source}, e.g. sequence {int(seqs[0])}); nothing to compare"
        )
    off = [
        (r["layer"], k)
        for r in rows
        for k, v in r.items()
        if isinstance(v, (float, np.floating)) and not np.isfinite(v)
    ]
    if off:
        raise LintfError(
            f"{off[0][1]} of layer {off[0][0]} is not finite in float64 on {source} (the model's "
            "read-outs overflow there); nothing to compare"
        )
    agree = ins.max_rel_diff <= args.tol
    if args.plot:
        _plot(args.plot, ins, rows)
    if args.json:
        sampled = (
            {"noise": str(args.noise), "x": str(args.x), "n": args.n, "setting": setting}
            if setting
            else None
        )
        print(
            strict_json(
                {
                    "model": args.model,
                    "source": source,
                    "sampled": sampled,
                    "L": L,
                    "H": H,
                    "d": d,
                    "B": B,
                    "autodiff_max_abs_diff": ins.max_abs_diff,
                    "autodiff_max_rel_diff": ins.max_rel_diff,
                    "agree": agree,
                    "layers": rows,
                    "plot": args.plot,
                }
            )
        )
        return 0 if agree else 1
    print(f"model {args.model}: L={L} layers, H={H} heads, d={d}; {source} (B={B})")
    if setting:
        print(setting)
    print_layers(rows)
    ridge = (
        f"ridge uses sigma = {args.sigma:g} (--sigma)"
        if args.sigma is not None
        else "ridge uses each sequence's true sigma"
        if sigma is not None
        else "no ridge"
    )
    print(f"(batch means; w* = OLS, {ridge}; loss = 1/2 mean (y_t - <w^l, x_t>)^2)")
    n = data["X"].shape[1]
    singular = (
        f"n={n} < d={d} (singular)"
        if n < d
        else "X^T X is singular on some sequence (its inputs span fewer than d directions)"
    )
    if ins.w_ols is None:
        print(f"no OLS reference: {singular}")
    if sigma is None:
        print("no ridge reference: the data has no sigma; give --sigma S")
    elif ins.w_ridge is None:
        print(f"no ridge reference: sigma = 0 on some sequence and {singular}")
    verdict = "agree" if agree else f"DISAGREE (tolerance {args.tol:g})"
    print(
        f"autodiff check: max_l,b |w^l(recursion) - d y_hat^l / d x_t (autodiff)| = {ins.max_abs_diff:.3g} "
        f"(relative {ins.max_rel_diff:.3g}): {verdict}"
    )
    if args.plot:
        print(f"plot written to {args.plot}")
    return 0 if agree else 1
