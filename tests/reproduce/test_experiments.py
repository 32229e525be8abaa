"""`lintf reproduce`: resumable sweep, tables and report, claim checks on synthetic tables, CLI errors.

The fast tests use a stub trainer (deterministic small random models written like a training run),
so they exercise everything but the optimiser in seconds; the real training path runs in the slow test
and in the committed quick-budget results.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numerics.reproduce import experiments as ex
from numerics.reproduce import judge
from numerics import models
from numerics.cli import main
from numerics.errors import LintfError
from numerics.io import save_model
from numerics.models.constructions import gd
from numerics.reproduce.claims import (Entry, check_claims, claim_baseline_order, claim_diag_extrapolates,
                                       claim_diag_matches_full, claim_five_plus_match_tunedrr,
                                       claim_four_layers_beat_adarr, claim_gdpp_near_constrr,
                                       claim_gdpp_superexponential, log_rates)
from numerics.reproduce.report import write_outputs

TEST = ex.get_budget("test")


class StubTrainer:
    """Writes ``seeds`` small random models (scale 0.02, drawn from the depth and the master seed) and picks seed 0;
    records the cell of every call."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.starts: dict[str, str | None] = {}  # each cell's first stage: the model file it starts from

    def __call__(self, cfg, run: Path) -> ex.Trained:
        cell = next(p for p in run.parents if not p.name.startswith(("stage", "attempt", "replica"))).name
        self.calls.append(cell)
        if run.name == "stage1" and run.parent.name == cell:
            self.starts[cell] = cfg.warm_start
        keys = jax.random.split(jax.random.PRNGKey(cfg.layers + 1000 * cfg.seed), cfg.seeds)
        PQ = [models.universal(models.init(cfg.model, k, cfg.layers, cfg.d, scale=0.02), cfg.d) for k in keys]
        Ps, Qs = (np.stack([np.asarray(x[i], np.float64) for x in PQ]) for i in (0, 1))
        save_model(run / "model.npz", Ps[0], Qs[0])
        return ex.Trained({"best_seed": 0, "steps": cfg.steps}, run / "model.npz")


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    root = tmp_path_factory.mktemp("reproduce")
    stub = StubTrainer()
    first = ex.sweep(TEST, ("table1", "fig1", "fig5"), root / "out", root / "runs", trainer=stub)
    return root, stub, first


def test_sweep_writes_cells_tables_and_report(swept):
    root, stub, sw = swept
    names = {c.name for c in ex.cells_for(TEST, ("table1", "fig1", "fig5"))}
    assert set(sw.trained) == names == set(stub.calls) == set(sw.cells)
    assert len(names) == 2 * 2 + 1  # 2 noises × depths {1,2} × DIAG, plus the Fig. 5 cells at uniform:5 (L = 2)
    for n in names:
        d = root / "out" / "models" / n
        assert (d / "model.npz").stat().st_size < 20_000 and (d / "metrics.json").exists()
    keep = [c for c in ex.cells_for(TEST, ("fig5",)) if c.keep_seeds]
    assert keep and all((root / "out" / "models" / c.name / "seeds.npz").exists() for c in keep)
    for c in keep:  # the cell's model and TEST.seeds - 1 replicas trained through the stages with their own seeds
        seeds, d = sw.cells[c.name]["seeds"], root / "out" / "models" / c.name
        assert seeds["seed"] == [ex.REPLICA_SEED * r for r in range(TEST.seeds)]
        assert (root / "runs" / TEST.name / c.name / "replica1" / "stage1").is_dir()
        with np.load(d / "seeds.npz") as z, np.load(d / "model.npz") as own:
            assert z["P"].shape[0] == TEST.seeds and np.array_equal(z["P"][0], own["P"])
            assert not np.allclose(z["P"][1], own["P"])
            for r in range(TEST.seeds):  # each on the seed sequences, judged as a cell is
                want = ex.evaluate_model(z["P"][r], z["Q"][r], c.noise, TEST, TEST.seed_sequences)
                assert seeds["loss"][r] == want["layers"]["loss"]
                assert seeds["failed"][r] == judge.failure({"eval": want, "train": {}})
        assert seeds["loss"][0] != seeds["loss"][1]
    res = write_outputs(sw, TEST, ("table1", "fig1", "fig5"), root / "out")
    rows = (root / "out" / "table1.csv").read_text().strip().splitlines()
    assert len(rows) == 1 + 4 + 4 * 2  # header, DIAG cells of the grid, 4 baselines × 2 noises
    md = (root / "out" / "table1.md").read_text()
    assert "**Bayes** (floor)" in md and "DIAG-2" in md
    rep = (root / "out" / "report.md").read_text()
    assert "## The paper's claims, checked" in rep and "--budget test" in rep
    assert {c.key for c in res["claims"]} >= {"diag_matches_full", "gdpp_superexponential"}
    for f in ("fig1.png", "fig5.png"):
        assert (root / "out" / f).read_bytes()[:4] == b"\x89PNG"


def test_machine_time_counts_cells_that_ran_side_by_side_once(swept):
    from numerics.reproduce.timing import machine_seconds

    root, _, sw = swept
    cells = list(sw.cells.values())
    spans = [c["wall"] for c in cells]
    assert all(a <= b and b - a <= c["seconds"] + 1 for (a, b), c in zip(spans, cells))  # a sweep runs cells in turn
    assert machine_seconds(cells) == pytest.approx(sum(b - a for a, b in spans))
    cells = [{"wall": [0, 10], "seconds": 10}, {"wall": [5, 12], "seconds": 7}, {"wall": [20, 21], "seconds": 1},
             {"wall": [6, 8], "seconds": 2}, {"seconds": 30}]  # the last stored before cells kept "wall"
    assert machine_seconds(cells) == 12 + 1 + 30
    write_outputs(sw, TEST, ("table1",), root / "out")
    busy = machine_seconds(sw.cells.values()) / 3600
    rep = (root / "out" / "report.md").read_text()
    assert f"{busy:.2f} h of machine time" in rep and "by device" not in rep  # one device: no split
    assert {c["device"] for c in sw.cells.values()} == {jax.devices()[0].device_kind}
    from numerics.reproduce.timing import host

    assert {c["host"] for c in sw.cells.values()} == {host()} and host()  # the CPU, named by the system


def test_report_splits_machine_time_by_device(swept):
    from numerics.reproduce.timing import by_device

    root, _, sw = swept
    cells = [{"wall": [0, 10]}, {"wall": [5, 12], "device": "cpu"}, {"wall": [5, 8], "device": "H100"},
             {"seconds": 30}]
    assert by_device(cells) == {"H100": (1, 3.0), "cpu": (3, 42.0)}  # a cell stored without a device ran on a CPU
    went_on = {"wall": [100, 104], "device": "H100", "continued": [{"wall": [50, 90], "device": "cpu"}]}
    assert by_device([went_on]) == {"H100": (1, 4.0), "cpu": (1, 40.0)}  # each run counts on its own device only
    failed = {"failed": "tail check", "eval": {"loss": 1.0, "tail": {"max": 2e4}}, "seconds": 4,
              "train": {"steps": 9, "converged": True}, "signature": {"train": {"seed": 0}}} | went_on
    kept = {"wall": [200, 210], "device": "H100", "attempts": [ex.attempt_record(failed)]}
    assert by_device([kept]) == {"H100": (1, 14.0), "cpu": (1, 40.0)}  # a failed attempt's earlier runs count too
    gpu = dict(sw.cells)
    name = next(iter(gpu))
    gpu[name] = gpu[name] | {"device": "H100"}
    write_outputs(replace(sw, cells=gpu), TEST, ("table1",), root / "out")
    rep = (root / "out" / "report.md").read_text()
    assert f"1 cells in {by_device([gpu[name]])['H100'][1] / 3600:.2f} h on H100" in rep
    assert f"{len(gpu) - 1} cells in" in rep and "h on cpu" in rep


def test_a_budget_without_continuation_starts_every_cell_but_full_from_the_random_start(swept, tmp_path):
    root, stub, _ = swept
    assert stub.starts["diag-L2-uniform1"] == str(root / "out" / "models" / "diag-L1-uniform1" / "model.npz")
    alone, fresh = replace(TEST, continuation=False), StubTrainer()
    cell = ex.Cell("diag", 2, "uniform:1")
    ex.run_cell(cell, alone, tmp_path / "out", tmp_path / "runs", fresh, starts=root / "out")
    assert fresh.starts == {"diag-L2-uniform1": None}  # the finished DIAG-1 under `starts` is not used
    assert ex.cell_signature(cell, alone) != ex.cell_signature(cell, TEST)
    with pytest.raises(LintfError, match="another configuration"):  # cells of one recipe are not read as the other's
        ex.load_cell(root / "out", cell, alone)
    # FULL starts from the DIAG cell of its depth (full_from_diag), not from FULL one layer shallower ...
    full = ex.Cell("full", 2, "uniform:1")
    ex.run_cell(full, alone, tmp_path / "out", tmp_path / "runs", fresh)
    assert fresh.starts["full-L2-uniform1"] == str(tmp_path / "out" / "models" / "diag-L2-uniform1" / "model.npz")
    assert ex.cell_signature(full, alone)["full_from_diag"] and "full_from_diag" not in ex.cell_signature(cell, alone)
    # ... and from the random start without that cell, or without the flag
    ex.run_cell(ex.Cell("full", 1, "uniform:1"), alone, tmp_path / "out", tmp_path / "runs", fresh)
    assert fresh.starts["full-L1-uniform1"] is None
    plain = replace(alone, full_from_diag=False)
    ex.run_cell(full, plain, tmp_path / "o2", tmp_path / "r2", fresh, starts=tmp_path / "out")
    assert fresh.starts["full-L2-uniform1"] is None and "full_from_diag" not in ex.cell_signature(full, plain)


def test_spectral_check_is_the_mean_of_the_sequences_at_sigma_zero():
    """Two routes to GD++'s mean loss at σ = 0: per-sequence losses of the forward pass on fresh sequences, and the
    derived per-eigenvalue expectation given Σ on Wishart spectra (``spectral_check``)."""
    from numerics.evaluate import losses as evaluation
    from numerics.models.kinds import GDPP, Gdpp

    params = Gdpp(jnp.array([-0.02, -0.03, -0.05, 0.0]), jnp.array([-0.03, -0.05, -0.1, -0.3]))
    P, Q = (np.asarray(a, np.float64) for a in GDPP.universal(params, 10))
    spec = ex.spectral_check(P, Q, ex.Cell("gdpp", 4, "uniform:0"), replace(TEST, spectral_sequences=20_000))
    with jax.enable_x64(True):
        a = evaluation.adjusted_per_sequence(P, Q, "uniform:0", 20, 10, jax.random.PRNGKey(9), 20_000)
    se = np.hypot(spec["se"], a.std(ddof=1) / np.sqrt(a.size))
    assert spec["spectra"] == 20_000 and spec["se"] < a.std(ddof=1) / np.sqrt(a.size)  # w and x_t averaged out
    assert abs(spec["mean"] - a.mean()) < 4 * se and spec["se"] < 0.05 * spec["mean"]
    assert spec["above"] == 0 and spec["max"] < evaluation.TAIL_MAX
    growing = params._replace(omega_xx=jnp.array([0.05, 0.05, 0.05, 0.0]))  # ω_xx > 0: large μ blow up
    P, Q = (np.asarray(a, np.float64) for a in GDPP.universal(growing, 10))
    spec = ex.spectral_check(P, Q, ex.Cell("gdpp", 4, "uniform:0"), replace(TEST, spectral_sequences=4096))
    assert spec["above"] > 0 and spec["max"] > evaluation.TAIL_MAX


def test_rerun_skips_finished_cells(swept):
    root, stub, first = swept
    n_calls = len(stub.calls)
    again = ex.sweep(TEST, ("table1", "fig1", "fig5"), root / "out", root / "runs", trainer=stub)
    assert again.trained == [] and len(stub.calls) == n_calls
    assert again.cells == first.cells


def test_deleted_cells_are_retrained_alone_and_share_programs_within_a_depth(swept, monkeypatch):
    from numerics.train import CHUNK_CACHE

    root, stub, _ = swept
    victims = ["diag-L1-categorical1_3", "diag-L1-uniform1", "diag-L2-uniform1"]
    for c in victims:
        (root / "out" / "models" / c / "metrics.json").unlink()
    cleared, clear = [], ex.clear_caches
    monkeypatch.setattr(ex, "clear_caches", lambda: (cleared.append(len(stub.calls)), clear()))
    CHUNK_CACHE["sentinel"] = object()  # a compiled program of an earlier cell
    n = len(stub.calls)
    again = ex.sweep(TEST, ("table1",), root / "out", root / "runs", trainer=stub)
    assert again.trained == victims
    # the programs of a depth are dropped once it is done: after depth 1 (two cells), after depth 2
    assert [k - n for k in cleared] == [2 * TEST.stages.most, 3 * TEST.stages.most]
    assert "sentinel" not in CHUNK_CACHE


class ExplodingTrainer(StubTrainer):
    """Writes plain gradient descent with the step 0.08 (``gd``): its adjusted loss passes 10³ on about one
    sequence in 500, and halving its update makes it safe."""

    def __call__(self, cfg, run: Path) -> ex.Trained:
        self.calls.append(run.parent.name)
        P, Q = (np.asarray(x, np.float64) for x in models.universal(gd(0.08, cfg.layers), cfg.d))
        save_model(run / "model.npz", P, Q)
        return ex.Trained({"best_seed": 0, "steps": cfg.steps}, run / "model.npz")


def test_a_failed_cell_is_rescued_by_the_larger_pool(tmp_path, monkeypatch):
    """The stages' pool (2 sequences) misses the tail, the evaluation fails, and the rescue's pool (4096) fits a scale
    that passes; without a rescue that finds the tail, the cell fails and keeps no model."""
    from dataclasses import replace

    from numerics.io import load_model

    fixed = []
    monkeypatch.setattr(ex.evaluation, "fix_mmap_threshold", lambda: fixed.append(True))
    cell = ex.Cell("diag", 2, "uniform:1")
    blind = replace(TEST, depths=(2,), noises=(cell.noise,), stages=replace(TEST.stages, scale_pool=2))
    m = ex.run_cell(cell, blind, tmp_path / "out", tmp_path / "runs", ExplodingTrainer())
    assert fixed  # a cell churns the evaluation's cached chunks: freed ones go back to the system
    assert "1.49e+03 > 1000" in m["rescue"]["before"]["failed"] and m["failed"] is None
    assert m["rescue"]["scale"] < 0.9 and m["eval"]["tail"]["max"] < 1e3
    P, Q, meta = load_model(tmp_path / "out" / "models" / cell.name / "model.npz")
    P0, Q0 = (np.asarray(x) for x in models.universal(gd(0.08, 2), 10))
    np.testing.assert_allclose(Q, m["rescue"]["scale"] * Q0, rtol=1e-15)
    assert meta["scale"] == m["rescue"]["scale"]
    assert ex.load_cell(tmp_path / "out", cell, blind) is not None
    with pytest.raises(LintfError, match="another configuration"):  # rescued with other constants: refused
        ex.load_cell(tmp_path / "out", cell, replace(blind, rescue_pool=8192))

    small = replace(blind, rescue_pool=2, tail_sequences=2, attempts=1)  # one attempt: more are tested below
    m = ex.run_cell(cell, small, tmp_path / "o2", tmp_path / "r2", ExplodingTrainer())
    assert m["failed"] and m["rescue"]["scale"] == 1.0
    assert not (tmp_path / "o2" / "models" / cell.name / "model.npz").exists()
    assert ex.load_cell(tmp_path / "o2", cell, small) is not None  # failed after this rescue: finished
    assert ex.load_cell(tmp_path / "o2", cell, blind) is None  # failed before another rescue: redone


class SeedTrainer(StubTrainer):
    """The stub's models; the runs of master seed 0 report a sequence left out of their final phase, which fails a
    cell without a rescue, and every other master seed trains cleanly."""

    def __call__(self, cfg, run: Path) -> ex.Trained:
        t = super().__call__(cfg, run)
        self.calls[-1] = run.as_posix().split(f"/{TEST.name}/", 1)[1]  # <cell>[/attempt<k>]/stage<j>
        return t._replace(metrics=t.metrics | {"dropped_final": int(cfg.seed == 0)})


def test_a_cell_that_fails_every_rescue_is_trained_again_with_the_next_seed(tmp_path):
    """Attempt 1 (master seed 0) fails and keeps no model; attempt 2 trains again with master seed 1 into its own run
    directory and passes; ``"attempts"`` records the failure, and the report names the cell."""
    from numerics.reproduce.report import attempts_lines

    cell = ex.Cell("diag", 1, "uniform:1")
    trainer = SeedTrainer()
    m = ex.run_cell(cell, TEST, tmp_path / "out", tmp_path / "runs", trainer)
    assert m["failed"] is None and (m["attempt"], m["seed"]) == (2, 1)
    [a] = m["attempts"]
    assert (a["attempt"], a["seed"], a["steps"]) == (1, 0, m["train"]["steps"]) and "final phase" in a["failed"]
    assert trainer.calls == [f"{cell.name}/stage{k}" for k in (1, 2)] + [f"{cell.name}/attempt2/stage{k}" for k in (1, 2)]
    assert (tmp_path / "out" / "models" / cell.name / "model.npz").exists()
    assert ex.load_cell(tmp_path / "out", cell, TEST) == json.loads(json.dumps(m))
    [line] = attempts_lines([m], TEST.attempts)
    assert "1 of 1 cells passed at a later attempt" in line and cell.name in line and "attempt 1: training left" in line


def test_a_stored_failed_cell_with_attempts_left_goes_on_with_its_next_attempt(tmp_path):
    """A cell that failed its only attempt is finished for a budget of one attempt; for a budget of two the sweep
    trains it again (``load_cell`` gives ``None``), and attempt 2 follows without training attempt 1 again; a cell
    that fails there too stays failed, with both reasons."""
    from numerics.reproduce.report import attempts_lines

    cell, one = ex.Cell("diag", 1, "uniform:1"), replace(TEST, attempts=1)
    m = ex.run_cell(cell, one, tmp_path / "out", tmp_path / "runs", SeedTrainer())
    assert m["failed"] and "attempts" not in m and ex.load_cell(tmp_path / "out", cell, one) is not None
    assert ex.load_cell(tmp_path / "out", cell, TEST) is None
    trainer = SeedTrainer()
    m = ex.run_cell(cell, TEST, tmp_path / "out", tmp_path / "runs", trainer)
    assert m["failed"] is None and [a["attempt"] for a in m["attempts"]] == [1]
    assert trainer.calls == [f"{cell.name}/attempt2/stage{k}" for k in (1, 2)]

    class Never(SeedTrainer):
        def __call__(self, cfg, run: Path) -> ex.Trained:
            return super().__call__(replace(cfg, seed=0), run)

    m = ex.run_cell(cell, TEST, tmp_path / "o2", tmp_path / "r2", Never())
    assert m["failed"] and m["attempt"] == 2 and [a["attempt"] for a in m["attempts"]] == [1]
    assert ex.load_cell(tmp_path / "o2", cell, TEST) is not None
    [line] = attempts_lines([m], TEST.attempts)
    assert "1 of 1 cells failed" in line and "attempt 1: training left" in line and "attempt 2: training left" in line
    events = []  # the sweep's progress names the failure, so that its line does not print the loss as a result
    ex.sweep(TEST, ("table1",), tmp_path / "o3", tmp_path / "r3", progress=lambda e, info: events.append((e, info)),
             trainer=Never(), only=[cell.name])
    [done] = [info for e, info in events if e == "cell"]
    assert done["name"] == cell.name and done["failed"].startswith("training left")


def test_the_convergence_check_retrains_the_attempt_that_passed(tmp_path):
    """A cell that passed at attempt 2 is retrained with attempt 2's master seed, not from attempt 1 again."""
    from numerics.reproduce import convergence

    cell = convergence.CELLS["test"][0]
    ex.run_cell(cell, TEST, tmp_path / "out", tmp_path / "runs", SeedTrainer())
    trainer = SeedTrainer()
    e = convergence.check(TEST, tmp_path / "out", tmp_path / "runs", trainer=trainer)["cells"][cell.name]
    assert e["holds"] and not e.get("failed")
    assert trainer.calls == [f"{cell.name}/attempt2/stage{k}" for k in (1, 2)]


def test_a_convergence_entry_of_a_model_the_cell_no_longer_holds_is_checked_again(tmp_path, monkeypatch):
    from numerics.reproduce import convergence

    cell = convergence.CELLS["test"][0]
    ex.run_cell(cell, TEST, tmp_path / "out", tmp_path / "runs", StubTrainer())
    convergence.check(TEST, tmp_path / "out", tmp_path / "runs", trainer=StubTrainer())
    calls, real = [], convergence.check_cell
    monkeypatch.setattr(convergence, "check_cell", lambda *a, **k: calls.append(a[0].name) or real(*a, **k))
    convergence.check(TEST, tmp_path / "out", tmp_path / "runs", trainer=StubTrainer())
    assert calls == []  # the entry is the cell's
    path = tmp_path / "out" / "models" / cell.name / "metrics.json"
    m = json.loads(path.read_text())
    path.write_text(json.dumps(m | {"eval": m["eval"] | {"loss": m["eval"]["loss"] * 1.001}}))  # another model
    convergence.check(TEST, tmp_path / "out", tmp_path / "runs", trainer=StubTrainer())
    assert calls == [cell.name]
    path.unlink()  # the cell is gone (retrained under another recipe): its entry goes, and the cell is pending
    res = convergence.check(TEST, tmp_path / "out", tmp_path / "runs", trainer=StubTrainer())
    assert res["cells"] == {} and res["pending"] == [cell.name]


def test_a_convergence_check_cut_short_lists_the_cells_it_did_not_reach_as_pending(tmp_path):
    from numerics.reproduce import convergence

    first, second = ex.Cell("diag", 1, "uniform:1"), ex.Cell("diag", 1, "categorical:1,3")
    for cell in (first, second):
        ex.run_cell(cell, TEST, tmp_path / "out", tmp_path / "runs", StubTrainer())

    class Cut(StubTrainer):
        def __call__(self, cfg, run: Path) -> ex.Trained:
            if second.name in run.parts:
                raise KeyboardInterrupt
            return super().__call__(cfg, run)

    with pytest.raises(KeyboardInterrupt):
        convergence.check(TEST, tmp_path / "out", tmp_path / "runs", cells=(first, second), trainer=Cut())
    res = json.loads((tmp_path / "out" / "convergence.json").read_text())
    assert list(res["cells"]) == [first.name] and res["pending"] == [second.name]
    res = convergence.check(TEST, tmp_path / "out", tmp_path / "runs", cells=(first, second), trainer=StubTrainer())
    assert list(res["cells"]) == [first.name, second.name] and res["pending"] == []


def test_convergence_checks_of_other_cells_share_one_out(tmp_path):
    """Two processes given disjoint cells: the entry the other writes while this one trains is kept."""
    from numerics.reproduce import convergence

    first, second = ex.Cell("diag", 1, "uniform:1"), ex.Cell("diag", 1, "categorical:1,3")
    for cell in (first, second):
        ex.run_cell(cell, TEST, tmp_path / "out", tmp_path / "runs", StubTrainer())
    path = tmp_path / "out" / "convergence.json"

    class Meanwhile(StubTrainer):  # the other process finishes `second` while this one trains `first`
        def __call__(self, cfg, run: Path) -> ex.Trained:
            if not path.exists():
                convergence.check(TEST, tmp_path / "out", tmp_path / "runs2", cells=(second,), trainer=StubTrainer())
            return super().__call__(cfg, run)

    res = convergence.check(TEST, tmp_path / "out", tmp_path / "runs", cells=(first,), trainer=Meanwhile())
    assert list(res["cells"]) == [first.name, second.name] and res["pending"] == []
    assert json.loads(path.read_text()) == json.loads(json.dumps(res))


def test_convergence_with_cell_checks_the_named_cells_alone(swept, monkeypatch, capsys):
    """``--convergence --cell NAME`` hands the check exactly the named cells (as the sweep made them); without
    ``--cell`` it checks the budget's own."""
    from numerics.reproduce import convergence

    root, _, _ = swept
    seen = []
    monkeypatch.setattr(convergence, "check", lambda budget, out, runs, cells=None, progress=None: seen.append(cells)
                        or {"budget": "test", "factor": 2, "rel": 0.03, "se": 2.0, "cells": {}, "pending": []})
    argv = ["reproduce", "--budget", "test", "--out", str(root / "out"), "--runs", str(root / "runs"), "--convergence"]
    assert main([*argv, "--cell", "diag-L2-uniform5", "--cell", "diag-L1-uniform1"]) == 0
    assert main(argv) == 0
    assert [c.name for c in seen[0]] == ["diag-L2-uniform5", "diag-L1-uniform1"] and seen[0][0].keep_seeds
    assert seen[1] is None


def test_a_cell_judged_before_a_check_existed_is_judged_again_without_training(tmp_path):
    """A stored passing cell without its tail check gets it on the next sweep, the same numbers the cell got when it
    was made, and no training; a model that fails the added check loses its place: the sweep trains the cell again,
    and a cell whose every attempt fails keeps no model."""
    cell = ex.Cell("diag", 4, "uniform:1")
    deep = replace(TEST, depths=(4,), noises=(cell.noise,), beyond_depths=())
    m = ex.run_cell(cell, deep, tmp_path / "out", tmp_path / "runs", StubTrainer())
    path = tmp_path / "out" / "models" / cell.name / "metrics.json"
    path.write_text(json.dumps({k: v for k, v in m.items() if k != "tail_check"}))
    trainer = StubTrainer()
    sw = ex.sweep(deep, ("table1",), tmp_path / "out", tmp_path / "runs", trainer=trainer)
    assert not trainer.calls and sw.cells[cell.name]["tail_check"] == json.loads(json.dumps(m["tail_check"]))
    assert json.loads(path.read_text()) == json.loads(json.dumps(m))

    P, Q = (np.asarray(x, np.float64) for x in models.universal(gd(0.08, 4), 10))  # explodes on a few in 10³
    save_model(path.parent / "model.npz", P, Q)
    assert ex.rejudge(cell, deep, tmp_path / "out", {k: v for k, v in m.items() if k != "tail_check"}) is None
    assert "tail check" in json.loads(path.read_text())["failed"]

    class Never(SeedTrainer):
        def __call__(self, cfg, run: Path) -> ex.Trained:
            return super().__call__(replace(cfg, seed=0), run)

    never = Never()
    sw = ex.sweep(replace(deep, attempts=1), ("table1",), tmp_path / "out", tmp_path / "runs", trainer=never)
    assert sw.cells[cell.name]["failed"] and never.calls and not (path.parent / "model.npz").exists()


def test_a_cell_that_an_earlier_rule_passed_is_judged_again_and_its_dependants_turn_stale(tmp_path):
    """A stored passing cell that the current :func:`judge.failure` fails (one sequence in 10⁵ at 560 carries its
    evaluation's mean; its 10⁶-sequence tail check missed that context) is a failed cell on the next sweep: without
    training, the report reads it as failed and nothing is written; with training, its ``metrics.json`` says why, and
    the FULL cell that started from its model is ``"stale"``."""
    diag, full = ex.Cell("diag", 4, "uniform:1"), ex.Cell("full", 4, "uniform:1")
    deep = replace(TEST, depths=(4,), noises=(diag.noise,), beyond_depths=())
    out = tmp_path / "out"
    m = ex.run_cell(diag, deep, out, tmp_path / "runs", StubTrainer())
    ex.run_cell(full, deep, out, tmp_path / "runs", StubTrainer())
    assert Path(json.loads((out / "models" / full.name / "metrics.json").read_text())["train"]["start"]).parent.name \
        == diag.name
    m["eval"]["tail"] |= {"mean": 5.7e-3, "se": 5.6e-3, "max": 560.0, "sequences": 10**5, "failed": "SE 0.0056"}
    m["tail_check"] |= {"mean": 1.2e-4, "se": 4.7e-6, "max": 1.75, "above": 0, "passed": True, "sequences": 10**6}
    assert judge.failure(m).startswith("evaluation: SE")
    path = out / "models" / diag.name / "metrics.json"
    path.write_text(json.dumps(m | {"failed": None}))
    before = path.read_text()
    sw = ex.sweep(deep, ("table1",), out, tmp_path / "runs", train=False)
    assert sw.cells[diag.name]["failed"].startswith("evaluation: SE") and path.read_text() == before
    assert ex.rejudge(diag, deep, out, json.loads(before)) is None
    assert json.loads(path.read_text())["failed"].startswith("evaluation: SE")
    assert diag.name in json.loads((out / "models" / full.name / "metrics.json").read_text())["stale"]


def test_a_run_of_some_parts_keeps_the_report_of_every_finished_part(swept, tmp_path, capsys):
    """``--only table1`` redraws the table; the report still counts the Fig. 5 cells and shows Fig. 5."""
    import shutil

    root, _, _ = swept
    shutil.copytree(root / "out", tmp_path / "out")
    assert "fig5" in ex.finished_parts(TEST, tmp_path / "out") and "beyond" not in ex.finished_parts(TEST, tmp_path / "out")
    argv = ["reproduce", "--budget", "test", "--out", str(tmp_path / "out"), "--runs", str(tmp_path / "runs")]
    assert main([*argv, "--no-train"]) == 0  # every finished part drawn
    before = (tmp_path / "out" / "fig5.png").read_bytes()
    capsys.readouterr()
    assert main([*argv, "--only", "table1"]) == 0
    report = (tmp_path / "out" / "report.md").read_text()
    assert "- 5 cells," in report and "![fig5](fig5.png)" in report
    assert (tmp_path / "out" / "fig5.png").read_bytes() == before and "wrote table1.csv, table1.md, report.md" in \
        capsys.readouterr().out


def test_cell_from_other_config_is_refused(swept):
    root, stub, _ = swept
    other = ex.Budget(**{**TEST.__dict__, "eval_sequences": TEST.eval_sequences + 1})
    with pytest.raises(LintfError, match="another configuration"):
        ex.sweep(other, ("table1",), root / "out", root / "runs", trainer=stub)


def test_cell_metrics_are_paired_with_bayes(swept):
    root, _, sw = swept
    m = json.loads((root / "out" / "models" / "diag-L1-uniform1" / "metrics.json").read_text())
    e = m["eval"]
    assert e["minus_Bayes"] == pytest.approx(e["loss"] - e["Bayes"], rel=1e-9, abs=1e-12)
    assert len(e["layers"]["loss"]) == 2 and e["layers"]["loss"][-1] == e["loss"]
    # the same sequences as the baselines' table: Bayes computed in the cell equals Bayes in the table
    assert e["Bayes"] == pytest.approx(sw.baselines["uniform:1"]["methods"]["Bayes"]["loss"], rel=1e-9, abs=1e-12)


# ------------------------------------------------------------------------------- claims on synthetic tables

U5, C13, U0 = "uniform:5", "categorical:1,3", "uniform:0"


def _base(nz: str, const=0.36, ada=0.07, tuned=0.05, bayes=0.04) -> dict:
    return {("ConstRR", 0, nz): Entry(const, 0.001), ("AdaRR", 0, nz): Entry(ada, 0.001),
            ("TunedRR", 0, nz): Entry(tuned, 0.001), ("Bayes", 0, nz): Entry(bayes, 0.001)}


def test_claims_hold_and_fail_on_synthetic_tables():
    good = _base(U5) | {("diag", 4, U5): Entry(0.06, 0.001), ("full", 4, U5): Entry(0.058, 0.001),
                        ("diag", 7, U5): Entry(0.05, 0.001), ("full", 7, U5): Entry(0.049, 0.001),
                        ("gdpp", 7, U5): Entry(0.37, 0.002)}
    assert claim_diag_matches_full(good).verdict == "holds"
    assert claim_four_layers_beat_adarr(good).verdict == "holds"
    assert claim_five_plus_match_tunedrr(good).verdict == "holds"
    assert claim_gdpp_near_constrr(good).verdict == "holds"
    assert claim_baseline_order(good).verdict == "holds"
    bad = good | {("full", 4, U5): Entry(0.2, 0.001), ("diag", 7, U5): Entry(0.09, 0.001),
                  ("gdpp", 7, U5): Entry(0.07, 0.001), ("AdaRR", 0, U5): Entry(0.5, 0.001)}
    assert claim_diag_matches_full(bad).verdict == "does not hold"
    assert claim_four_layers_beat_adarr(good | {("diag", 4, U5): Entry(0.08, 0.001)}).verdict == "does not hold"
    assert claim_five_plus_match_tunedrr(bad).verdict == "does not hold"
    assert claim_gdpp_near_constrr(bad).verdict == "does not hold"
    assert claim_baseline_order(bad).verdict == "does not hold"
    assert all(c.verdict == "not evaluated" for c in check_claims({}))
    wild = good | {("full", 7, U5): Entry(1e15, 1e15)}  # heavy-tailed (diverging) model: evidence neither way
    assert claim_diag_matches_full(wild).verdict == "undecided"
    assert claim_five_plus_match_tunedrr(wild).verdict == "undecided"
    assert "too noisy to call" in claim_diag_matches_full(wild).evidence[-1]
    assert "FULL 1.000e+15 ± 1.000e+15" in claim_diag_matches_full(wild).evidence[-1]  # not 31 digits
    noisy = good | {("diag", 4, U5): Entry(0.06, 0.02)}  # losses 0.002 apart, SE above the match scale
    assert "too noisy to call" in " ".join(claim_diag_matches_full(noisy).evidence)
    assert claim_diag_matches_full(noisy).verdict == "undecided"
    # a clear miss elsewhere still decides it
    assert claim_diag_matches_full(wild | {("full", 4, U5): Entry(0.2, 0.001)}).verdict == "does not hold"
    assert claim_five_plus_match_tunedrr(wild | {("diag", 7, U5): Entry(0.09, 0.001)}).verdict == "does not hold"


@pytest.mark.parametrize("fit, slack, kept", [(0.45, 0.5, [0.5]), (0.5, 0.6, [0.6, 0.5])])
def test_the_rescue_tries_the_scale_at_the_edge_of_the_minimum_before_the_se_step(fit, slack, kept, tmp_path,
                                                                                 monkeypatch):
    """The fit's own scale is kept only when the edge of the pool's minimum (``slack``) fails the evaluation: the
    exploding model fails at 0.6 (SE 0.40 > 0.1 × its mean 3.4) and passes at 0.5."""
    from dataclasses import replace

    cell = ex.Cell("diag", 2, "uniform:1")
    blind = replace(TEST, depths=(2,), noises=(cell.noise,), stages=replace(TEST.stages, scale_pool=2))
    real = judge.fit_scale
    monkeypatch.setattr(judge, "fit_scale", lambda *a: (fit, {"slack": slack}) if a[5] == blind.rescue_pool else real(*a))
    m = ex.run_cell(cell, blind, tmp_path / "out", tmp_path / "runs", ExplodingTrainer())
    assert [t["scale"] for t in m["rescue"]["tried"]] == kept and m["rescue"]["scale"] == kept[-1]
    assert m["failed"] is None and [t["failed"] is None for t in m["rescue"]["tried"]] == [False] * (len(kept) - 1) + [True]
    assert "assessed" not in m["rescue"] and m["eval"]["tail"]["max"] < 1e3


def test_a_claim_that_does_not_hold_says_how_its_failing_cells_were_trained():
    from numerics.reproduce.report import claims_markdown, training_reason

    table = _base(U5) | {("diag", 4, U5): Entry(0.08, 0.001), ("full", 4, U5): Entry(0.058, 0.001)}
    claims = check_claims(table)
    four = next(c for c in claims if c.key == "four_layers_beat_adarr")
    assert four.verdict == "does not hold" and four.failing == (("diag", 4, U5),)

    def cell(converged: bool) -> dict:
        return {"cell": "diag-L4-uniform5", "model": "diag", "layers": 4, "noise": U5,
                "train": {"steps": 3000, "converged": converged,
                          "stages": [{"held_out": 0.10}, {"held_out": 0.09}, {"held_out": 0.08}]}}

    worse = cell(True)  # the last stage went on from stage 2 (the best), ended 10 % above it and needed c = 0.6
    worse["train"] |= {"chosen_stage": 2, "stages": [{"held_out": 0.10}, {"held_out": 0.08}, {"held_out": 0.12},
                                                     {"held_out": 0.088, "scale": {"searched": True, "scale": 0.6}}]}
    assert "stopped by the convergence rule (the last doubling of its steps moved its held-out loss by +10.0%)" \
           "; the last stage's update needed c = 0.6 against a tail of its pool" in training_reason(worse)
    md = claims_markdown(claims, "cmd", {"diag-L4-uniform5": cell(False)})
    assert "- DIAG-4 at uniform:5: 3000 steps in 3 stages, stopped at the last stage it was allowed while still " \
           "moving (the last doubling of its steps moved its held-out loss by -11.1%): undertrained at this budget" in md
    checked = {"diag-L4-uniform5": {"relative": -0.004, "holds": True}}
    md = claims_markdown(claims, "cmd", {"diag-L4-uniform5": cell(True)}, checked)
    assert "stopped by the convergence rule" in md and "twice the steps it moves by -0.4% (within" in md
    assert md.count("Why, from how") == 2  # DIAG-4 fails two claims: against FULL-4 and against AdaRR
    assert "scaled by" not in md and "rescued" not in md
    scaled = cell(True) | {"rescue": {"scale": 0.9}}
    scaled["train"] |= {"chosen_stage": 2}
    scaled["train"]["stages"][1]["scale"] = {"searched": True, "scale": 0.75, "pool_max": 1.4e7, "mean_unscaled": 29.4,
                                              "mean": 0.224}
    md = claims_markdown(claims, "cmd", {"diag-L4-uniform5": scaled})
    assert "its update is scaled by c = 0.75 against a tail of the stage's pool (largest loss 1.4e+07 at c = 1; " \
           "the pool's mean 29.4 at c = 1, 0.224 at c); rescued with a further c = 0.9" in md


def test_beating_adarr_needs_the_paired_difference_beyond_two_se():
    """The paper budget's DIAG-4 at uniform:4: 0.0499 against AdaRR's 0.0519, a paired difference of -0.0020 ±
    0.0018, is too close to call; the same gap with a tenth of the SE beats it, and a model 2 SE above does not."""
    U4 = "uniform:4"
    t = _base(U4) | {("AdaRR", 0, U4): Entry(0.0519, 0.0023, 0.0222, 0.0013),
                     ("diag", 4, U4): Entry(0.0499, 0.0020, 0.0202, 0.0013)}
    close = claim_four_layers_beat_adarr(t)
    assert close.verdict == "undecided" and close.failing == ()
    assert close.evidence == ("uniform:4: DIAG-4 0.0499 ± 0.0020 vs AdaRR 0.0519 ± 0.0023, difference -0.0020 ± "
                              "0.0018 → within 2 SE: too close to call",)
    sure = t | {("diag", 4, U4): Entry(0.0499, 0.0020, 0.0202, 0.0001), ("AdaRR", 0, U4): Entry(0.0519, 0.0023,
                                                                                                0.0222, 0.0001)}
    assert claim_four_layers_beat_adarr(sure).verdict == "holds"
    above = t | {("diag", 4, U4): Entry(0.0569, 0.0020, 0.0272, 0.0013)}
    assert claim_four_layers_beat_adarr(above).verdict == "does not hold"
    assert claim_four_layers_beat_adarr(above).failing == (("diag", 4, U4),)


def test_claims_of_a_sweep_under_way_use_complete_series_only():
    """GD++ at depths 1-2 of a 1-2-4 grid is not yet "the deepest GD++": its claims wait; a complete series counts."""
    from numerics.reproduce.report import complete_series

    t = _base(U5) | {("gdpp", 1, U5): Entry(0.9, 0.01), ("gdpp", 2, U5): Entry(0.6, 0.01)}
    part = complete_series(t, (1, 2, 4))
    assert ("gdpp", 2, U5) not in part and ("ConstRR", 0, U5) in part
    assert claim_gdpp_near_constrr(part).verdict == "not evaluated"
    assert claim_gdpp_near_constrr(t).verdict == "does not hold"  # what the partial table alone would say
    full = t | {("gdpp", 4, U5): Entry(0.37, 0.002)}
    assert complete_series(full, (1, 2, 4)) == full and claim_gdpp_near_constrr(full).verdict == "holds"


def test_match_uses_the_gaps_paired_with_bayes():
    """The committed quick-budget numbers at uniform:5: DIAG-7 0.0853 ± 0.0076 (gap to Bayes 0.0456 ± 0.0053)
    against TunedRR 0.0477 ± 0.0067 (gap 0.0081 ± 0.0038) is worse, not a match."""
    t = _base(U5, tuned=0.0477) | {("TunedRR", 0, U5): Entry(0.0477, 0.0067, 0.0081, 0.0038),
                                   ("diag", 7, U5): Entry(0.0853, 0.0076, 0.0456, 0.0053)}
    assert claim_five_plus_match_tunedrr(t).verdict == "does not hold"
    # the same losses 0.005 apart, with tight paired gaps: a match
    close = t | {("diag", 7, U5): Entry(0.0527, 0.0076, 0.0131, 0.0010)}
    assert claim_five_plus_match_tunedrr(close).verdict == "holds"


def test_superexponential_rates():
    assert log_rates([1, 2, 3], [1.0, 0.5, 0.125]) == pytest.approx([np.log(2), np.log(4)])
    fast = {("gdpp", L, U0): Entry(v) for L, v in ((1, 1.8), (2, 0.9), (4, 0.05), (7, 1e-5))}
    slow = {("gdpp", L, U0): Entry(v) for L, v in ((1, 1.8), (2, 0.9), (4, 0.225), (7, 0.028))}
    assert claim_gdpp_superexponential(fast).verdict == "holds"
    assert claim_gdpp_superexponential(slow).verdict == "does not hold"  # exactly exponential: rates equal


def test_extrapolation_claim_uses_unseen_sigma_only():
    sigma = [0.0, 1.0, 2.0, 3.0, 4.0]
    t = _base(C13) | {("diag", 7, C13): Entry(0.02), ("full", 7, C13): Entry(0.02)}
    prof = {("diag", 7, C13): {"sigma": sigma, "loss": [0.1, 9.0, 0.1, 9.0, 0.2]},  # bad only at seen σ
            ("full", 7, C13): {"sigma": sigma, "loss": [0.3, 0.0, 0.3, 0.0, 0.5]}}
    assert claim_diag_extrapolates(t, prof).verdict == "holds"
    prof[("diag", 7, C13)]["loss"][4] = 5.0
    assert claim_diag_extrapolates(t, prof).verdict == "does not hold"
    prof[("full", 7, C13)] = dict(prof[("diag", 7, C13)])  # FULL kept its DIAG start: one model
    same = claim_diag_extrapolates(t, prof)
    assert same.verdict == "undecided" and "the same model" in same.evidence[0]


# ------------------------------------------------------------------------------- CLI errors


@pytest.mark.parametrize("name", ["paper", "quick"])
def test_cells_come_in_training_order(name):
    """Every cell a cell starts from comes before it, and depth never decreases (a sweep cut short has every model
    at the depths it reached)."""
    from numerics.train.continuation import start_for

    cells = ex.cells_for(ex.get_budget(name), ex.PARTS)
    where = {(c.model, c.layers, c.noise): i for i, c in enumerate(cells)}
    asked = []
    for i, c in enumerate(cells):
        start_for(c.model, c.layers, c.noise, lambda m, L: asked.append((i, where.get((m, L, c.noise)))))
    assert asked and all(j is None or j < i for i, j in asked)
    assert [c.layers for c in cells] == sorted(c.layers for c in cells)
    # the cells of one depth and noise come together: they evaluate on the same (cached) sequences
    runs = [(c.layers, c.noise) for i, c in enumerate(cells) if i == 0 or (c.layers, c.noise) != (cells[i - 1].layers, cells[i - 1].noise)]
    assert len(runs) == len(set(runs))


def test_parts_and_budgets_are_validated():
    assert ex.parse_parts(None) == ex.PARTS and ex.parse_parts("fig4, beyond") == ("fig4", "beyond")
    for bad in ("table1,fig6", ",", "Fig1"):
        with pytest.raises(ValueError, match="--only"):
            ex.parse_parts(bad)
    with pytest.raises(ValueError, match="--budget"):
        ex.get_budget("huge")
    for b in ex.BUDGETS.values():  # a rescue pool smaller than the tail check rarely holds what fails it
        assert b.rescue_pool >= b.tail_sequences, b.name
    with pytest.raises(ValueError, match=r"rescue_pool must be >= tail_sequences \(1000\), got 999"):
        replace(TEST, rescue_pool=999)


@pytest.mark.parametrize("argv, word", [(["--budget", "huge"], "--budget"),
                                        (["--budget", "test", "--only", "table1,fig6"], "--only")])
def test_bad_arguments_give_one_line_errors(argv, word, tmp_path, capsys):
    assert main(["reproduce", *argv, "--out", str(tmp_path / "o"), "--runs", str(tmp_path / "r"), "--json"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and word in err and "error" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("theirs", ["report.md", "table1.md", "fig1.png"])
def test_reproduce_refuses_an_out_that_holds_files_no_sweep_wrote(theirs, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / theirs).write_text("# my notes\n")
    rc = main(["reproduce", "--budget", "test", "--out", str(out), "--runs", str(tmp_path / "runs"), "--no-train"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and f"holds {theirs}, which lintf reproduce did not write" in err, err
    assert (out / theirs).read_text() == "# my notes\n" and [p.name for p in out.iterdir()] == [theirs]
    assert not (tmp_path / "runs").exists()
    from numerics.cli.reproduce import sweep_out

    (out / "report.md").write_text("# Reproduction report: budget `test`\n")  # a sweep's own report: its files
    sweep_out(str(out))
    (out / "report.md").unlink()
    (out / "table1.csv").write_text("mine\n")
    (out / "baselines").mkdir()  # an empty folder beside it is not a sweep's
    with pytest.raises(LintfError, match="which lintf reproduce did not write"):
        sweep_out(str(out))
    (out / "baselines" / "uniform1.json").write_text("{}")  # a setting's baselines: the sweep's own
    sweep_out(str(out))


def test_a_corrupt_cell_under_out_is_named(swept, tmp_path, capsys):
    import shutil

    root, _, _ = swept
    shutil.copytree(root / "out", tmp_path / "out")
    base = next(iter(sorted((tmp_path / "out" / "baselines").glob("uniform1.json"))))
    m = json.loads(base.read_text())
    base.write_text(json.dumps(m | {"methods": m["methods"] | {"ConstRR": m["methods"]["ConstRR"] | {"loss": None}}}))
    rc = main(["reproduce", "--budget", "test", "--out", str(tmp_path / "out"), "--runs", str(tmp_path / "r"),
               "--no-train"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and f"error: {str(base)!r} is corrupt (no finite loss and se for ConstRR)" in err[-1], err
    base.write_text(json.dumps(m))
    bad = next(iter(sorted((tmp_path / "out" / "models").glob("*/metrics.json"))))
    bad.write_text("{'failed': ")
    rc = main(["reproduce", "--budget", "test", "--out", str(tmp_path / "out"), "--runs", str(tmp_path / "r"),
               "--no-train"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and f"{str(bad)!r} is corrupt" in err[0], err

def test_a_corrupt_run_directory_of_a_cell_is_named_as_under_runs(tmp_path):
    """A cell's run directory lies under ``--runs``, so its errors name that option, not ``--out``."""
    from numerics.train import TrainConfig
    from numerics.train.config import config_dict

    cfg = TrainConfig(model="diag", layers=1, steps=4, batch=8, n=4, d=2)
    run = tmp_path / "runs" / "cell"
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps(config_dict(cfg)))
    (run / "checkpoint.npz").write_bytes(b"not an archive")
    with pytest.raises(LintfError, match=r"^--runs: .*checkpoint\.npz' is corrupt"):
        ex.train_rundir(cfg, run)
    (run / "config.json").write_text(json.dumps(config_dict(replace(cfg, steps=5))))
    with pytest.raises(LintfError, match=r"^--runs '.*cell' holds a run with a different config \(steps.*another --runs"):
        ex.train_rundir(cfg, run)


def test_jobs_processes_take_the_chains_left_in_turn(swept, tmp_path, monkeypatch, capsys):
    """``--jobs 2`` queues the chains of cells left, the most layers first, and starts one process per chain, at
    most two at a time, each the next chain when one ends; then it writes the report from every cell.  A process
    that fails is named and its exit status returned, and no chain starts after it."""
    import shutil
    import subprocess

    root, _, _ = swept
    parts = ("table1", "fig1", "fig5")
    out, runs = tmp_path / "out", tmp_path / "runs"
    shutil.copytree(root / "out", out)
    left = ("diag-L1-uniform1", "diag-L2-categorical1_3", "diag-L2-uniform5")  # 1, 2 and 2 layers (and replicas)
    for name in left:
        (out / "models" / name / "metrics.json").unlink()
    assert ex.queue_cells(TEST, parts, out) == [("diag-L2-uniform5",), ("diag-L2-categorical1_3",),
                                                ("diag-L1-uniform1",)]
    assert ex.queue_cells(TEST, parts, out, ["uniform:1"]) == [("diag-L1-uniform1",)]
    launched, status, envs, alive = [], {}, [], []
    monkeypatch.delenv("LINTF_HOST_DEVICES", raising=False)
    monkeypatch.setattr("numerics.train.devices.cores", lambda: 2)
    monkeypatch.setattr("time.sleep", lambda s: None)

    class Process:  # trains its cells in this process, with the stub trainer; the k-th "ends" when polled 2 + 2k times
        def __init__(self, argv, stdout=None, env=None):
            self.named = [argv[i + 1] for i, a in enumerate(argv) if a == "--cell"]
            launched.append((self.named, len(alive)))  # and how many ran when it started
            envs.append(env)
            alive.append(self)
            ex.sweep(TEST, parts, Path(argv[argv.index("--out") + 1]), Path(argv[argv.index("--runs") + 1]),
                     trainer=StubTrainer(), only=self.named)
            self.returncode, self.polls, self.ends = None, 0, 2 * len(launched)

        def poll(self):
            self.polls += 1
            if self.polls == self.ends:
                self.returncode = status.get(tuple(self.named), 0)
                alive.remove(self)
            return self.returncode

    monkeypatch.setattr(subprocess, "Popen", Process)
    argv = ["reproduce", "--budget", "test", "--only", ",".join(parts), "--out", str(out), "--runs", str(runs),
            "--jobs", "2"]
    assert main(argv) == 0
    assert launched == [(["diag-L2-uniform5"], 0), (["diag-L2-categorical1_3"], 1), (["diag-L1-uniform1"], 1)]
    assert [e["LINTF_HOST_DEVICES"] for e in envs] == ["1"] * 3  # two processes share the two cores
    assert all((out / "models" / n / "metrics.json").exists() for n in left)
    assert "3 cells left in 3 chain(s), 2 process(es) side by side" in capsys.readouterr().err
    launched.clear()
    assert main(argv) == 0 and launched == []  # nothing left: no process
    assert "reproduce --budget test: no cell left to train" in capsys.readouterr().err
    for name in left:
        (out / "models" / name / "metrics.json").unlink()
    launched.clear()
    status[("diag-L2-uniform5",)] = 3
    assert main(argv) == 3
    assert [n for n, _ in launched] == [["diag-L2-uniform5"], ["diag-L2-categorical1_3"]]  # the third waits
    err = capsys.readouterr().err
    assert "error: the process for diag-L2-uniform5 exited with status 3; its finished cells are kept, and " \
        "the 1 chain(s) not started wait; rerun" in err


@pytest.mark.slow
def test_jobs_in_real_processes_give_the_serial_sweeps_table(tmp_path):
    import subprocess
    import sys

    tables = []
    for name, jobs in (("serial", "1"), ("jobs", "2")):
        argv = [sys.executable, "-m", "numerics.cli", "reproduce", "--budget", "test", "--only", "table1",
                "--out", str(tmp_path / name), "--runs", str(tmp_path / f"{name}-runs"), "--jobs", jobs, "--json"]
        env = os.environ | {"LINTF_HOST_DEVICES": "1"}  # the same arithmetic: --jobs otherwise shares out the cores
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=1200, env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        tables.append((tmp_path / name / "table1.csv").read_text())
    assert tables[0] == tables[1]


def test_a_failed_cell_behind_a_figure_leaves_the_figure_out_not_the_report(tmp_path):
    """A failed cell has no model: Fig. 4 and the implicit weights of the deepest DIAG at uniform:5 are not drawn,
    the report says why, and everything else is written.  Every part of the test budget, at depth 1 and with
    depth 2 beyond (10 cells, not 15)."""
    small = replace(TEST, depths=(1,), beyond_depths=(2,))
    sw = ex.sweep(small, ex.PARTS, tmp_path / "out", tmp_path / "runs", trainer=StubTrainer())
    cells, out = dict(sw.cells), tmp_path / "out"
    for name in (f"diag-L{small.max_depth}-uniform5", "full-L4-categorical1_3"):
        cells[name] = cells[name] | {"failed": "SE 1 > 0.1 x mean 2 (a test)"}
        (out / "models" / name / "model.npz").unlink()
    for f in ("fig4.png", "fig_beyond_weights.png"):
        (out / f).unlink(missing_ok=True)
    res = write_outputs(replace(sw, cells=cells), small, ex.PARTS, out)
    assert "fig4.png" not in res["files"] and "fig_beyond_weights.png" not in res["files"]
    assert {"fig_beyond_depth.png", "table1.md", "report.md"} <= set(res["files"])
    rep = (out / "report.md").read_text()
    why = "is a failed cell (SE 1 > 0.1 x mean 2 (a test))."
    assert f"No implicit weights: DIAG-{small.max_depth} at uniform:5 {why}" in rep


def test_a_passed_cell_whose_model_is_lost_or_corrupt_is_made_again(swept, tmp_path):
    import shutil

    root, _, _ = swept
    shutil.copytree(root / "out", tmp_path / "out")
    shutil.copytree(root / "runs", tmp_path / "runs")
    cell = ex.Cell("diag", 1, "uniform:1")
    model = tmp_path / "out" / "models" / cell.name / "model.npz"
    good = model.read_bytes()
    for damage in (lambda: model.unlink(), lambda: model.write_bytes(good[:100])):
        damage()
        assert ex.load_cell(tmp_path / "out", cell, TEST) is None
        sw = ex.sweep(TEST, ("table1",), tmp_path / "out", tmp_path / "runs", trainer=StubTrainer())
        assert sw.trained == [cell.name] and model.read_bytes() == good  # resumed from its run: the same model

@pytest.mark.slow
def test_cli_real_training_test_budget(tmp_path, capsys):
    argv = ["reproduce", "--budget", "test", "--only", "table1", "--out", str(tmp_path / "o"),
            "--runs", str(tmp_path / "r"), "--json"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert len(first["trained"]) == 4 and "table1.csv" in first["files"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["trained"] == []


def test_gdpp_cells_at_sigma_zero_start_from_the_spectral_fit() -> None:
    """Only GD++ at σ_max = 0 uses ``init="spectral"``; every other cell keeps the random start."""
    from numerics.reproduce.experiments import Cell, get_budget, train_config

    b = get_budget("quick")
    assert train_config(Cell("gdpp", 4, "uniform:0"), b).init == "spectral"
    assert train_config(Cell("gdpp", 4, "uniform:5"), b).init == "random"
    assert train_config(Cell("diag", 4, "uniform:0"), b).init == "random"
    assert train_config(Cell("full", 4, "uniform:0"), b).init == "random"


class DriftingTrainer(StubTrainer):
    """Gradient descent whose step grows with the steps trained (``gd(steps / 2000)``): a cell that never converges."""

    def __call__(self, cfg, run: Path) -> ex.Trained:
        self.calls.append(run.parent.name)
        P, Q = (np.asarray(x, np.float64) for x in models.universal(gd(cfg.steps / 2000, cfg.layers), cfg.d))
        save_model(run / "model.npz", P, Q)
        return ex.Trained({"best_seed": 0, "steps": cfg.steps}, run / "model.npz")


def test_convergence_check_reruns_with_twice_the_steps(swept, capsys, monkeypatch):
    """A stub trained the same whatever its steps holds the check; one whose model moves with the steps does not;
    the report carries the table.  (The cell does not take the longer run here: tests/reproduce/test_adopt.py.)"""
    from dataclasses import replace

    from numerics.reproduce import convergence

    monkeypatch.setattr(convergence, "MOST_FACTOR", 1)

    root, stub, sw = swept
    out = root / "conv"
    import shutil

    shutil.copytree(root / "out", out)
    cell = convergence.CELLS["test"][0]
    res = convergence.check(TEST, out, root / "runs", trainer=stub)
    e = res["cells"][cell.name]
    assert e["holds"] and e["change"] == 0.0 and e["steps_longer"] == 2 * e["steps"]
    assert ex.load_cell(out / "convergence", cell, replace(TEST, stages=TEST.stages.scaled(2)))["cell"] == cell.name
    (out / "convergence.json").unlink()
    res = convergence.check(TEST, out, root / "runs2", trainer=DriftingTrainer(), cells=(cell,))
    assert res["cells"][cell.name]["holds"]  # the finished retrained cell is reused: same model, same verdict
    shutil.rmtree(out / "convergence")
    (out / "convergence.json").unlink()
    res = convergence.check(TEST, out, root / "runs3", trainer=DriftingTrainer(), cells=(cell,))
    e = res["cells"][cell.name]
    assert not e["holds"] and abs(e["relative"]) > 0.03
    fig5 = ex.Cell("diag", 2, "uniform:5")  # named without its seeds, as CELLS names cells: found as swept
    res = convergence.check(TEST, out, root / "runs4", trainer=stub, cells=(fig5,))
    assert res["cells"][fig5.name]["holds"]  # its model is retrained; its seed replicas are not
    assert (out / "convergence" / "models" / fig5.name / "model.npz").exists()
    assert not (out / "convergence" / "models" / fig5.name / "seeds.npz").exists()
    write_outputs(sw, TEST, ("table1",), out)
    report = (out / "report.md").read_text()
    assert "## Convergence" in report and "**no**" in report
    assert "- **no**: DIAG-1 at uniform:1: " in report and "beyond the convergence tolerance" in report  # and why
    assert convergence.check(TEST, out, root / "runs3", cells=(ex.Cell("diag", 3, "uniform:1"),))["pending"]
    res = json.loads((out / "convergence.json").read_text())
    assert res["cells"][cell.name]["holds"] is False  # a check of another cell keeps this one's entry
    (out / "convergence.json").write_text(json.dumps(res | {"cells": {cell.name: {"holds": "stale"}}, "rel": 0.5}))
    again = convergence.check(TEST, out, root / "runs3", trainer=DriftingTrainer(), cells=(cell,))
    assert again["cells"][cell.name]["holds"] is False  # an entry made with other constants is checked again


def test_a_change_below_the_float32_floor_holds(swept, monkeypatch, tmp_path):
    """A cell whose loss moves by more than 3 % and 2 SE, but by less than the float32 floor, holds, and the table
    says which rule decided."""
    import shutil

    from numerics.reproduce import convergence

    root, _, _ = swept
    out = tmp_path / "out"
    shutil.copytree(root / "out", out, ignore=shutil.ignore_patterns("convergence*"))
    cell = convergence.CELLS["test"][0]
    monkeypatch.setattr(convergence, "float32_floor", lambda cell, budget: 10.0)
    res = convergence.check(TEST, out, tmp_path / "runs", trainer=DriftingTrainer(), cells=(cell,))
    e = res["cells"][cell.name]
    assert e["holds"] and abs(e["relative"]) > 0.03 and abs(e["change"]) > 2 * e["change_se"] and e["floor"] == 10.0, e
    assert "yes, below the float32 floor 10 |" in convergence.markdown(res)


def test_the_report_names_the_cells_stopped_at_the_last_stage_still_moving():
    from numerics.reproduce.report import capped_lines

    most = TEST.stages.most
    cells = {"a": {"train": {"converged": True, "stages": [{}] * 2}}, "c": {"failed": "x"},
             "b": {"train": {"converged": False, "stages": [{}] * most}},
             "d": {"train": {"converged": False, "stages": [{}] * (most - 1)}}}  # capped lower: goes on
    capped, later = capped_lines(cells, TEST)
    assert capped.startswith(f"- 1 of 4 cells stopped at the budget's last stage ({most} stages)")
    assert capped.endswith(": b.")
    assert later.startswith(f"- 1 of 4 cells stopped still moving at a smaller cap on their stages than the "
                            f"budget's {most}") and later.endswith(": d.")
    assert capped_lines({"a": cells["a"]}, TEST) == []


def test_the_float32_floor_is_the_rounding_loss_of_the_targets():
    """Measured on 10⁵ evaluation sequences, against the expectation: the query target ``y = w·x`` has ``E y² = d``,
    and rounding ``y = m 2^e`` (mantissa ``m`` in [1, 2), log-uniform) to float32 errs uniformly within half a unit
    ``2^(e-24)``, so ``½ E δ² = ½ · 2⁻⁴⁸ E[y² / m²] / 3 = 2⁻⁴⁸ d (3/8) / (6 ln 2)``."""
    import math

    from numerics.reproduce import convergence

    budget = replace(TEST, eval_sequences=100_000)
    want = 2.0**-48 * budget.d * (3 / 8) / (6 * math.log(2))
    for noise in ("uniform:0", "categorical:1,3"):  # the query target carries no noise: the same floor
        assert convergence.float32_floor(ex.Cell("diag", 1, noise), budget) == pytest.approx(want, rel=0.03, abs=0)


def test_sweeps_given_disjoint_noise_settings_share_one_out(swept, tmp_path):
    """``noises`` trains only the cells of those settings and lists the others as missing; a second sweep with the
    other settings trains the rest and reads the first sweep's cells back."""
    import shutil

    shutil.copytree(swept[0] / "out" / "baselines", tmp_path / "out" / "baselines")  # computed once per module
    stub, parts = StubTrainer(), ("table1", "fig1")
    names = {c.name: c.noise for c in ex.cells_for(TEST, parts)}
    first = ex.sweep(TEST, parts, tmp_path / "out", tmp_path / "runs", trainer=stub, noises=["uniform:1.0"])
    assert first.trained and {names[n] for n in first.trained} == {"uniform:1"}
    assert {names[n] for n in first.missing} == {"categorical:1,3"} and set(first.cells) == set(first.trained)
    second = ex.sweep(TEST, parts, tmp_path / "out", tmp_path / "runs", trainer=stub, noises=["categorical:1,3"])
    assert set(second.trained) == set(first.missing) and not second.missing
    assert set(second.cells) == set(names) == set(stub.calls)
    with pytest.raises(ValueError, match="--noise must be one of budget test's settings"):
        ex.sweep(TEST, parts, tmp_path / "out", tmp_path / "runs", trainer=stub, noises=["uniform:5"])


def test_a_sweep_given_cells_trains_those_alone(swept, tmp_path):
    """``only`` trains the named cells, in training order, and lists every other unfinished cell as missing; a cell
    whose start by the recipe (here the cell one layer shallower) is neither finished nor named is refused before
    anything trains, and so is a name outside the budget."""
    import shutil

    shutil.copytree(swept[0] / "out" / "baselines", tmp_path / "out" / "baselines")
    stub, parts = StubTrainer(), ("table1", "fig1")
    shallow, deep = ex.Cell("diag", 1, "uniform:1"), ex.Cell("diag", 2, "uniform:1")
    args = (TEST, parts, tmp_path / "out", tmp_path / "runs")
    with pytest.raises(ValueError, match=f"--cell {deep.name} starts from {shallow.name}, which is not finished"):
        ex.sweep(*args, trainer=stub, only=[deep.name])
    with pytest.raises(ValueError, match="--cell must name a cell of budget test"):
        ex.sweep(*args, trainer=stub, only=["diag-L9-uniform1"])
    assert not stub.calls
    sw = ex.sweep(*args, trainer=stub, only=[deep.name, shallow.name])
    assert sw.trained == [shallow.name, deep.name] and set(stub.calls) == set(sw.trained)
    assert set(sw.missing) == {c.name for c in ex.cells_for(TEST, parts)} - set(sw.trained)
    assert stub.starts[deep.name] is not None  # it continued from the shallower cell, as the recipe has it
    assert not ex.sweep(*args, trainer=stub, only=[deep.name]).trained  # finished cells are read back


def test_a_full_cell_named_alone_needs_its_diag_start():
    """In the paper budget FULL starts from the DIAG cell of its depth: naming FULL alone is refused until that
    cell is finished; GD++ and DIAG start from the random start and need nothing."""
    paper = ex.get_budget("paper")
    with pytest.raises(ValueError, match="--cell full-L6-uniform1 starts from diag-L6-uniform1"):
        ex.parse_cells(paper, ["full-L6-uniform1"])
    assert ex.parse_cells(paper, ["full-L6-uniform1"], lambda c: c.name == "diag-L6-uniform1") == ("full-L6-uniform1",)
    assert ex.parse_cells(paper, ["gdpp-L7-uniform0", "diag-L7-uniform0", "gdpp-L7-uniform0"]) == (
        "gdpp-L7-uniform0", "diag-L7-uniform0")


def test_the_lean_budget_is_the_paper_budget_with_shorter_stages():
    """The lean budget trains the paper budget's cells, starts them and judges them as it does: only the stages
    differ (a sixth of the paper's work in its first two stages: half the steps, half the batch, one seed), the
    cap on steps is the same, every lean stage trains at the peak rate, and a stage that blows up after one that
    did not does not end a lean cell."""
    paper, lean = ex.get_budget("paper"), ex.get_budget("lean")
    assert replace(lean, name="paper", stages=paper.stages) == paper
    assert lean.stages.cap == paper.stages.cap == 96_000
    assert lean.stages.retry_blown and not paper.stages.retry_blown
    assert (lean.stages.decay, paper.stages.decay) == (1.0, 0.5)
    work = [st.steps * st.batch * (st.seeds + 1) for st in (paper.stages, lean.stages)]
    assert work[0] == 6 * work[1]


def test_the_brisk_budget_is_the_lean_budget_at_half_its_batch():
    """The brisk budget trains, starts and judges the lean budget's cells as it does, at batch 512 instead of 1024,
    and holds DIAG cells of depth 5 and more to four stages at least (every other cell to one)."""
    lean, brisk = ex.get_budget("lean"), ex.get_budget("brisk")
    assert replace(brisk, name="lean", stages=lean.stages) == lean
    assert replace(brisk.stages, batch=1024, diag_least=1) == lean.stages and brisk.stages.batch == 512
    cells = ex.cells_for(brisk, ex.PARTS)
    held = {c.name for c in cells if brisk.stages.least_for(c.model, c.layers) == 4}
    assert held == {c.name for c in cells if c.model == "diag" and c.layers >= 5} and len(held) == 40
    assert {brisk.stages.least_for(c.model, c.layers) for c in cells if c.name not in held} == {1}


def test_every_budgets_convergence_cells_are_cells_of_its_grid():
    """``lintf reproduce --convergence`` retrains cells the budget's sweep makes, and every budget names some."""
    from numerics.reproduce import convergence

    assert set(convergence.CELLS) == set(ex.BUDGETS)
    for name, cells in convergence.CELLS.items():
        grid = {c.name for c in ex.cells_for(ex.get_budget(name), ex.PARTS)}
        assert cells and {c.name for c in cells} <= grid, name


def test_no_train_writes_what_the_finished_cells_allow(swept, tmp_path):
    """``train=False`` trains nothing: the table shows the missing cell as "–", the report counts it, and a figure
    that needs it is not drawn."""
    import shutil

    root, stub, _ = swept
    shutil.copytree(root / "out", tmp_path / "out")
    victim = ex.Cell("diag", 2, "uniform:1")
    (tmp_path / "out" / "models" / victim.name / "metrics.json").unlink()
    (tmp_path / "out" / "fig1.png").unlink(missing_ok=True)
    n = len(stub.calls)
    events = []
    sw = ex.sweep(TEST, ("table1", "fig1", "fig5"), tmp_path / "out", root / "runs", trainer=stub, train=False,
                  progress=lambda e, info: events.append((e, info)))
    assert sw.missing == [victim.name] and sw.trained == [] and len(stub.calls) == n
    start = events[0][1]
    assert start["done"] == start["total"] - 1 and start["todo"] == []  # the missing cell is not counted as done
    res = write_outputs(sw, TEST, ("table1", "fig1", "fig5"), tmp_path / "out")
    assert "fig1.png" not in res["files"] and "fig5.png" in res["files"]
    assert not (tmp_path / "out" / "fig1.png").exists()
    row = next(r for r in (tmp_path / "out" / "table1.md").read_text().splitlines() if r.startswith("| DIAG-2 |"))
    assert row.endswith("| – |")  # columns categorical:1,3, uniform:1
    rep = (tmp_path / "out" / "report.md").read_text()
    grid = len(ex.cells_for(TEST, ("table1", "fig1", "fig5")))
    assert f"**1 of {grid} cells are not trained yet**" in rep and len(sw.cells) == grid - 1
    from numerics.reproduce.timing import layers_to_train

    done = layers_to_train(sw.cells, TEST)  # the Fig. 5 cell counts its replicas
    assert done == sum(c.layers * (TEST.seeds if c.keep_seeds else 1)
                       for c in ex.cells_for(TEST, ("table1", "fig1", "fig5")) if c.name != victim.name)
    # The estimate takes the rate of the deepest cells: give the 1-layer cells a minute each and the 2-layer ones
    # (diag-L2-categorical1_3 and the Fig. 5 cell diag-L2-uniform5, 2 + 2 x 2 layers) two hours side by side.
    timed, t = {}, 0.0
    for name, m in sorted(sw.cells.items(), key=lambda kv: kv[1]["layers"]):
        span = [t, t + 60.0] if m["layers"] == 1 else [t, t + 7200.0]
        t += 60.0 if m["layers"] == 1 else 0.0
        timed[name] = m | {"wall": span}
    assert sorted(m["layers"] for m in timed.values()) == [1, 1, 2, 2]
    write_outputs(replace(sw, cells=timed), TEST, ("table1", "fig1", "fig5"), tmp_path / "out")
    rep = (tmp_path / "out" / "report.md").read_text()
    # 7200 s over 6 layers: 20 min per layer; the missing cell has two layers (all cells: 7320 s / 8 layers, 0.5 h)
    assert ("At the 20.0 min of machine time per layer of its 2 depth-2 cells, the deepest trained so far, they need "
            "about 0.7 h more.") in rep


def test_machine_shares_split_each_moment_among_the_runs_then_and_add_up_to_the_machine_time():
    from numerics.reproduce.timing import machine_seconds, machine_shares

    cells = [{"wall": [0, 10], "seconds": 10}, {"wall": [5, 12], "seconds": 7}, {"wall": [20, 21], "seconds": 1},
             {"wall": [6, 8], "seconds": 2, "attempts": [{"wall": [30, 34], "seconds": 4}]}, {"seconds": 30}]
    # [0,5] alone; [5,6] two; [6,8] three; [8,10] two; [10,12] alone; [20,21] alone; the failed attempt [30,34]
    assert machine_shares(cells) == pytest.approx([5 + 0.5 + 2 / 3 + 1, 0.5 + 2 / 3 + 1 + 2, 1, 2 / 3 + 4, 30])
    assert sum(machine_shares(cells)) == pytest.approx(machine_seconds(cells))
    assert machine_shares([]) == []


def test_a_sweep_stopped_in_a_seed_replica_finishes_the_cell_on_the_next_run(swept, tmp_path):
    """The cell's model is on disk before its replicas train, but the cell is not finished until its metrics are;
    the next run trains it again and stores what an uninterrupted run stored."""
    root, _, sw = swept
    cell = next(c for c in ex.cells_for(TEST, ("fig5",)) if c.keep_seeds)

    class Stopped(StubTrainer):
        def __call__(self, cfg, run: Path) -> ex.Trained:
            if run.parent.name == "replica1":
                raise KeyboardInterrupt
            return super().__call__(cfg, run)

    with pytest.raises(KeyboardInterrupt):
        ex.sweep(TEST, ("fig5",), tmp_path / "out", tmp_path / "runs", trainer=Stopped())
    d = tmp_path / "out" / "models" / cell.name
    assert (d / "model.npz").exists() and not (d / "metrics.json").exists()
    assert ex.load_cell(tmp_path / "out", cell, TEST) is None
    again = ex.sweep(TEST, ("fig5",), tmp_path / "out", tmp_path / "runs", trainer=StubTrainer())
    assert cell.name in again.trained
    assert again.cells[cell.name]["seeds"]["loss"] == sw.cells[cell.name]["seeds"]["loss"]
    with np.load(d / "seeds.npz") as z, np.load(root / "out" / "models" / cell.name / "seeds.npz") as ref:
        assert np.array_equal(z["Q"], ref["Q"])


def test_a_seed_replica_is_judged_by_the_checks_of_its_cell(tmp_path, monkeypatch):
    cell = next(c for c in ex.cells_for(TEST, ("fig5",)) if c.keep_seeds)
    blown = {"tail_check": {"passed": False, "above": 1, "sequences": 1000, "limit": 1e4, "max": 1e9}}
    ran = []
    monkeypatch.setattr(ex, "checks", lambda P, Q, c, b: ran.append(c.name) or blown)

    class Calm(StubTrainer):  # gradient descent with a small step: passes the evaluation on 4000 sequences
        def __call__(self, cfg, run: Path) -> ex.Trained:
            P, Q = (np.asarray(x, np.float64) for x in models.universal(gd(0.02, cfg.layers), cfg.d))
            save_model(run / "model.npz", P, Q)
            return ex.Trained({"best_seed": 0, "steps": cfg.steps}, run / "model.npz")

    budget = replace(TEST, eval_sequences=4000, seed_sequences=4000)
    sw = ex.sweep(budget, ("fig5",), tmp_path / "out", tmp_path / "runs", trainer=Calm())
    seeds = sw.cells[cell.name]["seeds"]
    assert ran == [cell.name] * (TEST.seeds - 1)  # every replica but the cell itself, whose checks it already has
    assert seeds["failed"][0] is None
    assert seeds["failed"][1] == "tail check: 1 of 1000 sequences above 10000 (largest 1000000000.0)"


def test_a_process_stopped_part_way_through_a_cell_counts_in_the_machine_time(tmp_path):
    """A cell resumed after its process was stopped counts that process from its start to its last checkpoint (the
    time the checkpoint records, not its file's: here the run directory is copied between the two processes), once;
    a cell trained in one go counts nothing more."""
    import shutil
    import time

    from numerics.io import atomic_savez
    from numerics.reproduce import timing

    cell, marks = ex.Cell("diag", 2, "uniform:1"), []

    class Stopped(StubTrainer):  # writes a checkpoint as training does, then is stopped in its second stage
        def __call__(self, cfg, run: Path) -> ex.Trained:
            marks.append(json.loads((run.parent / timing.SEGMENT).read_text()))
            atomic_savez(run / "checkpoint.npz", meta=np.asarray(json.dumps({"time": time.time()})))
            if run.name == "stage2":
                raise KeyboardInterrupt
            return super().__call__(cfg, run)

    with pytest.raises(KeyboardInterrupt):
        ex.run_cell(cell, TEST, tmp_path / "out", tmp_path / "runs", Stopped())
    run = tmp_path / "runs" / TEST.name / cell.name
    with np.load(run / "stage2" / "checkpoint.npz") as z:
        last = json.loads(str(z["meta"]))["time"]
    time.sleep(0.05)
    shutil.copytree(tmp_path / "runs", tmp_path / "copy")  # new file times, the same recorded ones
    m = ex.run_cell(cell, TEST, tmp_path / "out", tmp_path / "copy", StubTrainer())
    start = marks[0]["start"]
    assert m["interrupted"] == [[start, last, jax.devices()[0].device_kind]]
    assert m["wall"][0] > last and not (tmp_path / "copy" / TEST.name / cell.name / timing.SEGMENT).exists()
    assert timing.machine_seconds([m]) == pytest.approx(m["wall"][1] - m["wall"][0] + last - start)
    assert "interrupted" not in ex.run_cell(ex.Cell("diag", 1, "uniform:1"), TEST, tmp_path / "out",
                                            tmp_path / "copy", StubTrainer())
