r"""``numerics.models.convert`` and ``lintf convert`` against forward passes written the way other code bases write them.

The reference passes below are NumPy transcriptions of softmax-free multi-head attention as it appears
in JAX/Haiku code (row vectors ``h @ W``, heads as column slices of the fused ``W_Q, W_K, W_V`` and row
slices of ``W_O``, a ``1/n`` in the value path) and in PyTorch code (``F.linear(h, W) = h @ Wᵀ`` with
``W`` of shape ``(out, in)``: the column convention ``W h``).  They never call lintf.  All weights are
random and non-symmetric, so a transposed factor, a missing scale or a flipped sign changes the result.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from lintf_theory import derive_attention_head, derive_attention_inverse
from numerics import models
from numerics.cli import main
from numerics.data import Noise
from numerics.errors import LintfError
from numerics.model_file import load_model, save_model
from numerics.models import convert
from tests.strategies import RTOL64, max_rel_err, toy_batch

L, H, K = 3, 2, 3  # layers, heads, key size; the data has d = 3 (D = 4)


def tokens_as_rows(X: np.ndarray, y: np.ndarray, xq: np.ndarray) -> np.ndarray:
    ctx = np.concatenate([X, y[..., None]], axis=-1)
    q = np.concatenate([xq, np.zeros_like(xq[:, :1])], axis=-1)
    return np.concatenate([ctx, q[:, None]], axis=1)  # (B, n+1, D)


def haiku_style(
    layers: list[dict], X, y, xq, value_scale=1.0, divide_by_n=False, y_only=False
) -> np.ndarray:
    """Row convention: per layer fused ``W_Q, W_K, W_V (D, H*K)``, ``W_O (H*K, D)``; prediction ``−y`` of the query."""
    h = tokens_as_rows(X, y, xq)
    B, n1, D = h.shape
    n = n1 - 1
    for p in layers:
        nh = p["heads"]
        q = (h @ p["W_Q"]).reshape(B, n1, nh, -1)
        k = (h[:, :n] @ p["W_K"]).reshape(B, n, nh, -1)  # keys and values: context tokens only
        v = (h[:, :n] @ p["W_V"]).reshape(B, n, nh, -1) * value_scale
        scores = np.einsum("bihk,bjhk->bhij", q, k)  # no softmax
        attn = np.einsum("bhij,bjhk->bihk", scores, v)
        if divide_by_n:
            attn = attn / n
        out = attn.reshape(B, n1, -1) @ p["W_O"]
        if y_only:
            out[..., :-1] = 0.0
        h = h + out
    return -h[:, -1, -1]


def torch_style(layers: list[dict], X, y, xq, value_scale=1.0, y_only=False) -> np.ndarray:
    """Column convention as ``torch.nn.functional.linear`` computes it: ``W_{Q,K,V} (H*K, D)``, ``W_O (D, H*K)``."""
    h = tokens_as_rows(X, y, xq)
    B, n1, D = h.shape
    n = n1 - 1
    for p in layers:
        nh = p["heads"]
        linear = lambda t, W: t @ W.T  # noqa: E731  (F.linear without bias)
        q = linear(h, p["W_Q"]).reshape(B, n1, nh, -1).transpose(0, 2, 1, 3)  # (B, H, n+1, K)
        k = linear(h[:, :n], p["W_K"]).reshape(B, n, nh, -1).transpose(0, 2, 1, 3)
        v = linear(h[:, :n], p["W_V"]).reshape(B, n, nh, -1).transpose(0, 2, 1, 3) * value_scale
        attn = (q @ k.transpose(0, 1, 3, 2)) @ v  # (B, H, n+1, K)
        out = linear(attn.transpose(0, 2, 1, 3).reshape(B, n1, -1), p["W_O"])
        h = h + (
            out * np.eye(D)[-1] if y_only else out
        )  # y-only: keep the last coordinate of the update
    return -h[:, -1, -1]


def random_layers(
    seed: int, convention: str, D: int, layers: int = L, heads: int = H, scale: float = 0.35
) -> list[dict]:
    rng = np.random.default_rng(seed)
    inner = (D, heads * K) if convention == "row" else (heads * K, D)
    return [
        {
            "heads": heads,
            **{k: scale * rng.standard_normal(inner) for k in ("W_Q", "W_K", "W_V")},
            "W_O": scale * rng.standard_normal(inner[::-1]),
        }
        for _ in range(layers)
    ]


def stacked(layers: list[dict]) -> dict[str, np.ndarray]:
    """The 3-D fused layout ``(L, ·, ·)`` that ``lintf convert`` reads."""
    return {k: np.stack([p[k] for p in layers]) for k in convert.NAMES}


@pytest.fixture(scope="module")
def data():
    b = toy_batch(5, n=6, d=3)
    return tuple(np.asarray(v) for v in (b.X, b.y, b.x_query))


def lintf_predict(P, Q, data) -> np.ndarray:
    return np.asarray(models.predict(P, Q, *data))


@pytest.mark.parametrize(
    ("convention", "value_scale", "divide_by_n", "y_only"),
    [
        ("row", 1.0, False, False),
        ("column", 1.0, False, False),
        ("row", 0.7, False, False),
        ("column", 0.7, False, False),
        ("row", 1.0, True, False),
        ("row", 0.7, False, True),
        ("column", 0.7, False, True),
    ],
)
def test_converted_model_predicts_like_its_own_forward_pass(
    data, convention, value_scale, divide_by_n, y_only
):
    D = data[0].shape[-1] + 1
    layers = random_layers(11, convention, D)
    if convention == "row":
        ref = haiku_style(layers, *data, value_scale, divide_by_n, y_only)
    else:
        ref = torch_style(layers, *data, value_scale, y_only)
    n = data[0].shape[1]
    s = value_scale / n if divide_by_n else value_scale
    P, Q = convert.to_universal(stacked(layers), convention, s, y_only, heads=H)
    assert P.shape == (L, H, D, D)
    assert float(np.max(np.abs(ref))) > 0.1  # the layers do something
    assert max_rel_err(lintf_predict(P, Q, data), ref) < RTOL64
    if y_only:
        assert np.all(P[:, :, :-1, :] == 0)


@pytest.mark.parametrize("convention", ["row", "column"])
def test_weight_tied_model_repeats_one_layer(data, convention):
    D = data[0].shape[-1] + 1
    layer = random_layers(12, convention, D, layers=1)[0]
    forward = haiku_style if convention == "row" else torch_style
    ref = forward([layer] * 4, *data)
    single = {k: layer[k] for k in convert.NAMES}  # 2-D arrays: one layer, heads fused
    P, Q = convert.to_universal(single, convention, heads=H, layers=4)
    assert P.shape[0] == 4 and max_rel_err(lintf_predict(P, Q, data), ref) < RTOL64


def test_4d_layout_equals_fused_layout(data):
    layers = random_layers(13, "row", 4)
    fused = stacked(layers)
    split_in = lambda W: np.moveaxis(W.reshape(L, 4, H, K), 2, 1)  # noqa: E731  (L, H, D, K)
    four = {k: split_in(fused[k]) for k in ("W_Q", "W_K", "W_V")} | {
        "W_O": fused["W_O"].reshape(L, H, K, 4)
    }
    a, b = convert.to_universal(fused, "row", heads=H), convert.to_universal(four, "row")
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


@pytest.mark.parametrize("convention", ["row", "column"])
def test_inverse_loads_a_lintf_model_into_other_code(data, convention):
    rng = np.random.default_rng(14)
    P, Q = 0.3 * rng.standard_normal((2, 2, 4, 4)), 0.3 * rng.standard_normal((2, 2, 4, 4))
    W = convert.from_universal(P, Q, convention, value_scale=0.5)
    assert W["W_Q"].shape == (2, 2, 4, 4)
    fused = [
        {
            "heads": 2,
            **{
                k: (
                    np.concatenate(
                        list(W[k][l]), axis=-1 if (convention == "row") == (k != "W_O") else -2
                    )
                )
                for k in convert.NAMES
            },
        }
        for l in range(2)
    ]
    forward = haiku_style if convention == "row" else torch_style
    assert max_rel_err(forward(fused, *data, value_scale=0.5), lintf_predict(P, Q, data)) < RTOL64
    P2, Q2 = convert.to_universal(W, convention, value_scale=0.5)
    assert max_rel_err(P2, P) < 1e-15 and max_rel_err(Q2, Q) < 1e-15


@pytest.mark.parametrize("convention", ["row", "column"])
def test_derivation_is_exact(convention):
    head = derive_attention_head(convention)
    assert head.identity_holds and derive_attention_inverse(convention).round_trip


def test_bad_weights_are_one_line_errors():
    good = stacked(random_layers(15, "row", 4))
    cases = [
        ({k: v for k, v in good.items() if k != "W_V"}, "missing: W_V"),
        (good | {"W_K": good["W_K"][..., :-2]}, "W_K has shape"),
        (good | {"W_O": good["W_O"].astype(complex)}, "W_O must hold real numbers"),
        (good | {"W_Q": np.where(good["W_Q"] > 0.2, np.inf, good["W_Q"])}, "W_Q must be finite"),
        (good | {"W_Q": good["W_Q"][None, None]}, "must be 2-D, 3-D or 4-D"),
    ]
    for weights, match in cases:
        with pytest.raises((ValueError, LintfError), match=match):
            convert.to_universal(weights, "row", heads=H)
    with pytest.raises(ValueError, match="does not split into heads=4"):
        convert.to_universal(good, "row", heads=4)
    with pytest.raises(ValueError, match="convention must be one of row, column"):
        convert.to_universal(good, "rows")
    with pytest.raises(ValueError, match="layers=5 repeats one weight-tied layer"):
        convert.to_universal(good, "row", heads=H, layers=5)


def test_cli_convert_predict_and_back(tmp_path, data, capsys):
    layers = random_layers(16, "column", 4)
    np.savez(tmp_path / "w.npz", **stacked(layers))
    X, y, xq = data
    np.savez(tmp_path / "data.npz", X=X, y=y, x_query=xq)
    model, out = tmp_path / "m.npz", tmp_path / "pred.npy"
    assert (
        main(
            [
                "convert",
                str(tmp_path / "w.npz"),
                "--out",
                str(model),
                "--convention",
                "column",
                "--heads",
                str(H),
                "--value-scale",
                "1/2",
                "--noise",
                "fixed:0.5",
            ]
        )
        == 0
    )
    assert main(["predict", str(model), str(tmp_path / "data.npz"), "--out", str(out)]) == 0
    assert max_rel_err(np.load(out), torch_style(layers, *data, value_scale=0.5)) < RTOL64
    _, _, meta = load_model(model)
    assert meta["noise"] == "fixed:0.5" and meta["source"]["convention"] == "column"
    assert meta["source"]["value_scale"] == 0.5 and meta["source"]["heads"] == H
    back = tmp_path / "back.npz"
    assert main(["convert", str(model), "--out", str(back), "--convention", "row"]) == 0
    with np.load(back) as z:
        assert json.loads(str(z["meta"]))["convention"] == "row" and z["W_O"].shape == (L, H, 4, 4)
    bad = tmp_path / "bad.npz"
    np.savez(bad, **(stacked(layers) | {"W_K": stacked(layers)["W_K"][..., :-2]}))
    nan = tmp_path / "nan.npz"
    np.savez(nan, **(stacked(layers) | {"W_Q": np.full_like(stacked(layers)["W_Q"], np.nan)}))
    capsys.readouterr()
    for argv, match in [
        ([str(tmp_path / "w.npz"), "--out", str(model)], "exists; choose a new file name"),
        ([str(bad), "--out", str(tmp_path / "x.npz")], f"IN.npz {str(bad)!r}: W_K has shape"),
        ([str(nan), "--out", str(tmp_path / "x.npz")], f"IN.npz {str(nan)!r}: W_Q must be finite"),
        ([str(model), "--out", str(tmp_path / "x.npz"), "--y-only"], "--y-only applies to weights"),
        ([str(tmp_path / "data.npz"), "--out", str(tmp_path / "x.npz")], "must hold either"),
        ([str(tmp_path / "nope.npz"), "--out", str(tmp_path / "x.npz")], "does not exist"),
        *[
            (
                [str(model), "--out", str(tmp_path / "x.npz"), "--value-scale", s],
                "--value-scale: must be a number > 0",
            )
            for s in ("1e400", "1e-320", "0", "-1", "1/0", "x")
        ],
    ]:
        assert main(["convert", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and match in err, err
    assert not (tmp_path / "x.npz").exists()
    huge = (
        tmp_path / "huge.npz"
    )  # entries near float64's edge: the weights at a tiny value scale overflow
    P, Q, _ = load_model(model)
    np.savez(huge, P=np.full_like(P, 1e300), Q=Q)
    assert (
        main(["convert", str(huge), "--out", str(tmp_path / "x.npz"), "--value-scale", "1e-100"])
        == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gives non-finite W_" in err and "nothing written" in err, err
    assert not (tmp_path / "x.npz").exists()


def test_convert_refuses_weights_without_attention_and_layers_that_cannot_fit(tmp_path, capsys):
    rng = np.random.default_rng(0)
    np.savez(
        tmp_path / "one.npz",
        **{k: rng.standard_normal((1, 4, 4)) for k in ("W_Q", "W_K", "W_V", "W_O")},
    )
    np.savez(
        tmp_path / "k0.npz",
        W_Q=np.zeros((1, 4, 0)),
        W_K=np.zeros((1, 4, 0)),
        W_V=np.zeros((1, 4, 0)),
        W_O=np.zeros((1, 0, 4)),
    )
    for argv, match in [
        (["k0.npz"], "holds no attention: the key size K and the layers L must be >= 1, got K=0"),
        (["one.npz", "--layers", str(10**9)], "times needs about .* of memory.*; lower --layers"),
    ]:
        assert (
            main(["convert", str(tmp_path / argv[0]), "--out", str(tmp_path / "x.npz"), *argv[1:]])
            == 2
        )
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and re.search(match, err), err
    assert not (tmp_path / "x.npz").exists()


@pytest.mark.parametrize(
    ("noise", "levels"),
    [
        ("categorical:1,3,5", (1.0, 3.0, 5.0)),
        ("categorical: 0.1, 0.25 ,7", (0.1, 0.25, 7.0)),
        ("uniform:2", (2.0,)),
    ],
)
def test_model_meta_keeps_every_noise_level_through_the_model_file(tmp_path, noise, levels):
    """The data setting written into a converted model's meta reads back, from the file, as the same
    distribution: every categorical level, each exactly, and the input distribution."""
    meta = convert.model_meta(
        {"from": "attention weights", "file": "w.npz"}, noise, "uniform:-0.5,0.5"
    )
    path = tmp_path / "m.npz"
    save_model(path, np.zeros((1, 1, 3, 3)), np.zeros((1, 1, 3, 3)), meta, exclusive=True)
    back = load_model(path)[2]
    assert Noise.parse(back["noise"]) == Noise(noise.partition(":")[0], levels)
    assert (
        back["x"] == "uniform:-0.5,0.5"
        and back["kind"] == "full"
        and back["source"]["file"] == "w.npz"
    )
    assert "noise" not in convert.model_meta({}) and "x" not in convert.model_meta({})
