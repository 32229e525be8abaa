"""Figures drawn from cells' metrics: what Fig. 5 averages over, and how Fig. 1 draws the gap to
the Bayes floor on a log axis."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from numerics.reproduce import plots
from numerics.reproduce.grid import Cell
from numerics.reproduce.table import Entry
from tests.fakes import TINY, fake_record


def test_fig5_spreads_over_the_seed_replicas_that_pass_the_tail_rules(tmp_path, monkeypatch):
    loss = [[1.0, 0.5, 0.25], [1.0, 0.7, 0.45], [1.0, 9.0, 900.0]]
    rec = fake_record(Cell("diag", 2, "uniform:5"), TINY)
    rec.eval["layers"]["loss"] = loss[0]
    cell = replace(
        rec,
        replicas={
            "seed": [0, 100, 200],
            "loss": loss,
            "se": loss,
            "failed": [None, None, "largest loss 2e+03 > 1e+03"],
        },
    )
    figs = []
    monkeypatch.setattr(plots, "save", lambda fig, title, path: figs.append(fig))
    plots.fig5({("diag", 2, "uniform:5"): cell}, {}, "uniform:5", 2, tmp_path / "fig5.png")
    ax = next(a for a in figs[0].axes if a.get_title().startswith("DIAG"))
    (bars,) = ax.containers
    assert np.allclose(bars.lines[0].get_ydata(), np.mean(loss[:2], axis=0))
    assert bars.get_label() == "mean ± std over 2 of 3 seeds"


def test_fig1_draws_the_gap_to_bayes_on_a_log_axis_and_clips_a_gap_at_or_below_zero(
    tmp_path, monkeypatch
):
    """GD++ at depth 2 and every baseline sit at the floor (gap ≤ 0): they are drawn on the bottom
    edge, a tenth of the smallest positive gap, and marked; the other gaps are drawn as they are."""
    nz = "uniform:0"
    t = {
        ("gdpp", 1, nz): Entry(1.7, 0.01, 1.7, 0.01),
        ("gdpp", 2, nz): Entry(-1e-9, 1e-9, -1e-9, 1e-9),
        ("diag", 1, nz): Entry(1.7, 0.01, 1.7, 0.01),
        ("diag", 2, nz): Entry(2e-6, 1e-7, 2e-6, 1e-7),
    } | {(b, 0, nz): Entry(0.0, 0.0, 0.0, 0.0) for b in ("ConstRR", "AdaRR", "TunedRR", "Bayes")}
    figs = []
    monkeypatch.setattr(plots, "save", lambda fig, title, path: figs.append(fig))
    plots.fig1(t, [nz], tmp_path / "fig1.png")
    (ax,) = [a for a in figs[0].axes if a.get_visible()]
    lo = plots.CLIP * 2e-6
    assert ax.get_yscale() == "log" and ax.get_ylim()[0] < lo
    models = {c.get_label(): c.lines[0] for c in ax.containers}
    assert np.allclose(models["GD++"].get_ydata(), [1.7, lo])
    assert np.allclose(models["DIAG"].get_ydata(), [1.7, 2e-6])
    curves = {ln.get_label(): ln for ln in ax.lines}
    marks = [ln for ln in ax.lines if ln.get_marker() == "v" and len(ln.get_xdata())]
    assert [(list(m.get_xdata()), list(m.get_ydata())) for m in marks] == [([2], [lo])]
    assert all(np.allclose(curves[b].get_ydata(), lo) for b in ("ConstRR", "AdaRR", "TunedRR"))
    assert "Bayes" not in curves  # the floor itself: every gap is measured from it
    assert [x.get_text() for x in ax.texts] == [plots.CLIPPED]
