"""Figures drawn from cells' metrics: what Fig. 5 averages over."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from numerics.reproduce import plots
from numerics.reproduce.grid import Cell
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
    monkeypatch.setattr(plots, "save", lambda fig, path: figs.append(fig))
    plots.fig5({"diag-L2-uniform5": cell}, {}, "uniform:5", 2, tmp_path / "fig5.png")
    ax = next(a for a in figs[0].axes if a.get_title().startswith("DIAG"))
    (bars,) = ax.containers
    assert np.allclose(bars.lines[0].get_ydata(), np.mean(loss[:2], axis=0))
    assert bars.get_label() == "mean ± std over 2 of 3 seeds"
