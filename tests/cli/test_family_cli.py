"""``lintf train``, ``predict`` and ``inspect`` on the family's members, end to end (tmp files
only)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from numerics import models
from numerics.cli import main
from numerics.models.family_io import load_member
from tests.strategies import RTOL64, max_rel_err, toy_batch


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A 2-layer gated DeltaNet trained for 10 steps through ``lintf train`` (a few seconds)."""
    tmp = tmp_path_factory.mktemp("family")
    out = tmp / "run"
    rc = main(
        [
            "train",
            "--model",
            "gated-deltanet",
            "--layers",
            "2",
            "--steps",
            "10",
            "--batch",
            "32",
            "--chunk-steps",
            "5",
            "--eval-sequences",
            "256",
            "--d",
            "3",
            "--n",
            "6",
            "--no-baselines",
            "--out",
            str(out),
            "--json",
        ]
    )
    assert rc == 0
    data = toy_batch(51, n=6, d=3)
    arrays = {k: np.asarray(getattr(data, k)) for k in ("X", "y", "x_query", "y_query", "sigma")}
    np.savez(tmp / "data.npz", **arrays)
    return tmp, out, arrays


def test_train_saves_the_member_and_its_metrics(trained, capsys):
    _, out, _ = trained
    saved = load_member(out / "model.npz")
    assert saved.kind.name == "gated-deltanet" and saved.meta["config"]["model"] == "gated-deltanet"
    start = models.init("gated-deltanet", __import__("jax").random.PRNGKey(0), 2, 3, 1, 1e-3)
    assert (
        float(np.max(np.abs(np.asarray(saved.params.W_Q) - np.asarray(start.W_Q)))) > 1e-4
    )  # it trained
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["model"] == "gated-deltanet" and np.isfinite(metrics["adjusted_loss"])


def test_predict_on_a_member_file_uses_its_own_pass(trained, capsys):
    tmp, out, arrays = trained
    capsys.readouterr()
    assert main(["predict", str(out / "model.npz"), str(tmp / "data.npz"), "--json"]) == 0
    got = np.asarray(json.loads(capsys.readouterr().out)["predictions"])
    saved = load_member(out / "model.npz")
    want = np.asarray(saved.kind.forward(saved.params, arrays["X"], arrays["y"], arrays["x_query"]))
    assert max_rel_err(got, want) < RTOL64


def test_inspect_reports_w_by_two_routes_and_linearity(trained, capsys):
    tmp, out, _ = trained
    capsys.readouterr()
    assert main(["inspect", str(out / "model.npz"), str(tmp / "data.npz"), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["kind"] == "gated-deltanet" and rep["agree"] and len(rep["layers"]) == 3
    assert rep["autodiff_max_rel_diff"] < 1e-10 and rep["linearity_gap"] < 1e-10
    assert rep["layers"][2]["w_norm"] > 0
    assert main(["inspect", str(out / "model.npz"), str(tmp / "data.npz")]) == 0
    assert "gated-deltanet, L=2 layers" in capsys.readouterr().out


def test_inspect_fails_when_the_routes_disagree(trained, capsys, monkeypatch):
    """A transfer route that drops a layer's update disagrees with autodiff: exit status 1.  The
    member file and data of ``trained``: the kind is not what is checked, and the shapes the test
    above already ran cost no new compilations."""
    from numerics.models import family_weights

    tmp, out, _ = trained
    real = family_weights.transfer_weights
    monkeypatch.setattr(
        family_weights, "transfer_weights", lambda *a: real(*a).at[-1].set(real(*a)[-2])
    )
    capsys.readouterr()
    assert main(["inspect", str(out / "model.npz"), str(tmp / "data.npz")]) == 1
    assert "DISAGREE" in capsys.readouterr().out
