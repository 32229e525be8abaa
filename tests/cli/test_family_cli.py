"""``lintf train``, ``predict`` and ``inspect`` on the family's members, end to end (tmp files
only)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from numerics.cli import main
from numerics.models.family_io import load_member, save_member
from numerics.train.config import CONFIG_EXTRAS, TrainConfig
from numerics.train.loop import init_state
from tests.strategies import RTOL64, max_rel_err, member_params, toy_batch


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A one-layer gated DeltaNet trained for 10 steps through ``lintf train`` (a few seconds),
    evaluated on 8192 sequences, as many as the selection of the best seed uses (one compiled
    evaluation program serves both); a data file of four sequences; and the member file of a
    two-layer gated DeltaNet (random parameters of :func:`tests.strategies.member_params`, one head,
    ``d = 3`` as trained), for ``inspect``, whose routes are compared layer by layer."""
    tmp = tmp_path_factory.mktemp("family")
    out = tmp / "run"
    rc = main(
        [
            "train",
            "--model",
            "gated-deltanet",
            "--layers",
            "1",
            "--steps",
            "10",
            "--batch",
            "32",
            "--chunk-steps",
            "5",
            "--eval-sequences",
            "8192",
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
    save_member(tmp / "two-layer.npz", member_params("gated-deltanet", 52, layers=2, heads=1))
    data = toy_batch(51, n=6, d=3)
    arrays = {k: np.asarray(getattr(data, k)) for k in ("X", "y", "x_query", "y_query", "sigma")}
    np.savez(tmp / "data.npz", **arrays)
    return tmp, out, arrays


def test_train_saves_the_member_and_its_metrics(trained, capsys):
    """The saved member is the run's start moved by training: the start is ``init_state`` of the
    config the file records (programs the run has compiled already)."""
    _, out, _ = trained
    saved = load_member(out / "model.npz")
    assert saved.kind.name == "gated-deltanet" and saved.meta["config"]["model"] == "gated-deltanet"
    cfg = TrainConfig(**{k: v for k, v in saved.meta["config"].items() if k not in CONFIG_EXTRAS})
    start = init_state(cfg).params
    assert (
        float(np.max(np.abs(np.asarray(saved.params.W_Q) - np.asarray(start.W_Q[0])))) > 1e-4
    )  # it trained
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["model"] == "gated-deltanet" and np.isfinite(metrics["adjusted_loss"])


def test_predict_on_a_member_file_uses_its_own_pass(trained, capsys):
    """On the trained member's file and on the two-layer one."""
    tmp, out, arrays = trained
    for model in (out / "model.npz", tmp / "two-layer.npz"):
        capsys.readouterr()
        assert main(["predict", str(model), str(tmp / "data.npz"), "--json"]) == 0
        got = np.asarray(json.loads(capsys.readouterr().out)["predictions"])
        saved = load_member(model)
        want = saved.kind.forward(saved.params, arrays["X"], arrays["y"], arrays["x_query"])
        assert max_rel_err(got, np.asarray(want)) < RTOL64


def test_inspect_reports_w_by_two_routes_and_linearity(trained, capsys):
    tmp, _, _ = trained
    capsys.readouterr()
    assert main(["inspect", str(tmp / "two-layer.npz"), str(tmp / "data.npz"), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["kind"] == "gated-deltanet" and rep["agree"] and len(rep["layers"]) == 3
    assert rep["autodiff_max_rel_diff"] < 1e-10 and rep["linearity_gap"] < 1e-10
    assert rep["layers"][2]["w_norm"] > 0  # the text report: the test below


def test_inspect_fails_when_the_routes_disagree(trained, capsys, monkeypatch):
    """A transfer route that drops a layer's update disagrees with autodiff: exit status 1, and the
    text report (its header names the member) says so.  The member file and data of the test
    above: its shapes cost no new compilations."""
    from numerics.models import family_weights

    tmp, _, _ = trained
    real = family_weights.transfer_weights
    monkeypatch.setattr(
        family_weights, "transfer_weights", lambda *a: real(*a).at[-1].set(real(*a)[-2])
    )
    capsys.readouterr()
    assert main(["inspect", str(tmp / "two-layer.npz"), str(tmp / "data.npz")]) == 1
    text = capsys.readouterr().out
    assert "gated-deltanet, L=2 layers" in text and "DISAGREE" in text
