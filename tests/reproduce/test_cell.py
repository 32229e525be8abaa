"""One cell: its stages under the stopping rule (scripted held-out losses), its config from its own start, and a
whole tiny cell trained for real, pure with respect to where its files go."""

from __future__ import annotations

import inspect
import io
import json
from pathlib import Path

import numpy as np
import pytest

from numerics.errors import Diverged
from numerics.model_file import save_model
from numerics.reproduce import cell as cell_mod
from numerics.reproduce.cell import Trained, cell_config, train_cell, train_stages
from numerics.reproduce.grid import Cell, Schedule
from numerics.reproduce.record import parse_record
from tests.fakes import TINY, fake_record

SCHEDULE = Schedule(steps=10, batch=8, seeds=2, most=5, held_out=1000, scale_pool=16)


class Scripted:
    """A stage trainer that writes a fixed model and a held-out evaluation that returns the next scripted mean."""

    def __init__(self, means: list[float], blown: tuple[int, ...] = ()) -> None:
        self.means, self.configs, self.blown, self.calls = list(means), [], blown, 0
        rng = np.random.default_rng(0)
        self.noise = rng.normal(size=100_000) * 0.01

    def train(self, cfg, run: Path) -> Trained:  # noqa: ANN001
        self.configs.append(cfg)
        run.mkdir(parents=True, exist_ok=True)
        save_model(run / "model.npz", np.zeros((1, 1, 11, 11)), np.zeros((1, 1, 11, 11)))
        return Trained({"steps": cfg.steps, "dropped_final": 0}, run / "model.npz")

    def held(self, *args, **kw) -> np.ndarray:  # noqa: ANN002, ANN003
        self.calls += 1
        out = self.means.pop(0) + self.noise
        if self.calls in self.blown:  # one sequence above the evaluation's FAIL_MAX
            out = out.copy()
            out[0] = 2e3
        return out


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    def make(means: list[float], blown: tuple[int, ...] = ()) -> Scripted:
        s = Scripted(means, blown)
        monkeypatch.setattr(cell_mod.evaluation, "adjusted_per_sequence", s.held)
        monkeypatch.setattr(cell_mod, "_scaled", lambda model, cfg, pool: (model, {"scale": 1.0}))
        return s

    return make


def test_the_stopping_rule_ends_the_cell_when_doubling_moves_the_loss_by_less_than_3_percent(
    scripted, tmp_path
):
    s = scripted([1.0, 0.5, 0.49, 0.1, 0.1])
    cfg = cell_config(Cell("diag", 2, "uniform:1"), TINY)
    best, summary = train_stages(cfg, SCHEDULE, tmp_path, s.train)
    assert [st["stage"] for st in summary["stages"]] == [1, 2, 3] and summary["converged"] is True
    assert best.k == 3 and summary["chosen_stage"] == 3 and summary["steps"] == 10 + 10 + 20
    assert [c.steps for c in s.configs] == [10, 10, 20] and [c.seeds for c in s.configs] == [
        2,
        1,
        1,
    ]
    assert [c.peak_lr for c in s.configs] == [cfg.peak_lr, cfg.peak_lr / 2, cfg.peak_lr / 4]
    assert s.configs[2].warm_start == str(
        tmp_path / "stage2" / "model.npz"
    )  # from the best stage so far


def test_a_cell_still_moving_stops_at_the_cap_unconverged_and_keeps_its_best_stage(
    scripted, tmp_path
):
    s = scripted([1.0, 0.8, 0.6, 0.4, 0.3])
    best, summary = train_stages(
        cell_config(Cell("diag", 2, "uniform:1"), TINY), SCHEDULE, tmp_path, s.train
    )
    assert len(summary["stages"]) == SCHEDULE.most and summary["converged"] is False and best.k == 5
    assert s.configs[4].warm_start == str(tmp_path / "stage4" / "model.npz")
    assert [c.steps for c in s.configs] == [10, 10, 20, 40, 80]


def test_a_spectral_start_is_the_first_stage_only(scripted, tmp_path):
    """GD++ at σ_max = 0 starts from the spectral fit; every later stage starts from the best stage
    so far (``init`` random, overridden by the warm start)."""
    s = scripted([1.0, 0.5, 0.49])
    cfg = cell_config(Cell("gdpp", 2, "uniform:0"), TINY)
    train_stages(cfg, SCHEDULE, tmp_path, s.train)
    assert [c.init for c in s.configs] == ["spectral", "random", "random"]
    assert [c.warm_start for c in s.configs][:2] == [None, str(tmp_path / "stage1" / "model.npz")]


def test_a_stage_that_ends_higher_stops_the_cell_which_keeps_the_lower(scripted, tmp_path):
    s = scripted([1.0, 0.5, 0.7])
    best, summary = train_stages(
        cell_config(Cell("diag", 2, "uniform:1"), TINY), SCHEDULE, tmp_path, s.train
    )
    assert summary["converged"] and len(summary["stages"]) == 3 and best.k == 2


def test_a_blown_stage_is_never_the_start_of_the_next(scripted, tmp_path):
    """Stage 2 is lower on average but blown (one sequence above the failure limit): stage 3 starts from stage
    1, the best stage that is not blown, and the cell keeps the best stage that is not blown."""
    s = scripted([1.0, 0.5, 0.45, 0.44, 0.44], blown=(2,))
    best, summary = train_stages(
        cell_config(Cell("diag", 2, "uniform:1"), TINY), SCHEDULE, tmp_path, s.train
    )
    assert [st["blown"] for st in summary["stages"]] == [False, True, False, False]
    assert s.configs[2].warm_start == str(tmp_path / "stage1" / "model.npz")
    assert s.configs[3].warm_start == str(tmp_path / "stage3" / "model.npz") and best.k == 4


def test_a_stage_whose_training_diverges_stops_the_cell_which_keeps_the_best_before(
    scripted, tmp_path
):
    """A later stage that raises :class:`numerics.errors.Diverged` is recorded (its steps, no
    held-out loss, blown, the message) and ends the cell, converged, on the best stage before it; a
    first stage that diverges has nothing to keep, and the error goes on."""
    s = scripted([1.0, 0.5])

    def train(cfg, run: Path) -> Trained:  # noqa: ANN001
        if len(s.configs) == 2:
            s.configs.append(cfg)
            raise Diverged("diverged at step 7", 7)
        return s.train(cfg, run)

    best, summary = train_stages(
        cell_config(Cell("diag", 2, "uniform:1"), TINY), SCHEDULE, tmp_path, train
    )
    last = summary["stages"][-1]
    assert len(summary["stages"]) == 3 and summary["converged"] is True and best.k == 2
    assert summary["chosen_stage"] == 2 and summary["steps"] == 10 + 10 + 7
    assert {k: last[k] for k in ("stage", "steps", "held_out", "blown", "diverged")} == {
        "stage": 3,
        "steps": 7,
        "held_out": None,
        "blown": True,
        "diverged": "diverged at step 7",
    }
    assert set(last) == {"stage", "steps", "held_out", "blown", "diverged", "seconds"}

    def first(cfg, run: Path) -> Trained:  # noqa: ANN001
        raise Diverged("diverged at step 2", 2)

    with pytest.raises(Diverged, match="step 2"):
        train_stages(cell_config(Cell("diag", 2, "uniform:1"), TINY), SCHEDULE, tmp_path, first)


@pytest.mark.parametrize(
    "gain, old, se, blown, stops",
    [
        (0.029, 1.0, 0.0, False, True),
        (0.031, 1.0, 0.0, False, False),
        (0.05, 1.0, 0.03, False, True),
        (0.05, 1.0, 0.03, True, False),
        (-0.1, 1.0, 0.0, False, True),
        (0.0, 0.0, 0.0, False, True),
    ],
)
def test_the_one_stopping_rule(
    gain: float, old: float, se: float, blown: bool, stops: bool
) -> None:
    assert Schedule.stop(gain, old, se, blown) is stops


@pytest.mark.parametrize(
    "model, noise, init",
    [
        ("full", "uniform:5", "random"),
        ("gdpp", "uniform:0", "spectral"),
        ("gdpp", "uniform:5", "random"),
        ("diag", "uniform:0", "random"),
    ],
)
def test_every_cell_trains_from_its_own_start(model: str, noise: str, init: str) -> None:
    cfg = cell_config(Cell(model, 3, noise), TINY)
    assert (
        cfg.init == init and cfg.warm_start is None and cfg.phase1_steps == 0
    )  # FULL has no DIAG phase


@pytest.mark.slow
def test_a_tiny_cell_trains_resumes_and_returns_the_same_files(tmp_path: Path) -> None:
    c = Cell("diag", 1, "uniform:1")
    files = train_cell(c, TINY, tmp_path / "run")
    assert set(files) == {"model.npz", "metrics.json"}
    rec = parse_record(json.loads(files["metrics.json"]), c.name)
    assert rec.failed is None and rec.start == "random" and 0 < rec.eval["loss"] < 5
    again = train_cell(c, TINY, tmp_path / "run")  # every stage resumes from its finished run
    assert again["model.npz"] == files["model.npz"]

    def strip(raw: bytes) -> dict:  # the record without its timings
        rec = json.loads(raw)
        for st in rec["training"]["stages"]:
            st.pop("seconds")
        return {k: v for k, v in rec.items() if k != "provenance"}

    assert strip(again["metrics.json"]) == strip(files["metrics.json"])


def test_a_tiny_cell_trains_without_reading_or_writing_outside_its_rundir(
    tmp_path: Path, monkeypatch
) -> None:
    """The fast sibling of the test above: TINY's stages of 20 steps on sequences of ``n = 5``,
    ``d = 2``, its evaluations at two sizes only, so that each evaluation program compiles once: the
    held-out sequences' 256 (the stages' scale fit on as many) and the evaluation's 500 (the
    profile on as many)."""
    monkeypatch.chdir(tmp_path)
    from dataclasses import replace

    s = TINY.schedule
    budget = replace(
        TINY,
        profile_sequences=TINY.eval_sequences,
        schedule=replace(s, scale_pool=s.held_out),
        n=5,
        d=2,
    )
    files = train_cell(Cell("diag", 1, "uniform:1"), budget, tmp_path / "run")
    assert {p.parts[len(tmp_path.parts)] for p in tmp_path.rglob("*")} == {"run"}
    rec = parse_record(json.loads(files["metrics.json"]), "diag-L1-uniform1")
    assert rec.eval["sequences"] == 500 and len(rec.training["stages"]) in (1, 2)


class Rescuable:
    """A trainer of a fixed model whose verdict fails while ``max |Q|`` is above ``limit``: the
    rescue's scales decide whether it passes."""

    def __init__(self, limit: float) -> None:
        self.limit, self.judged = limit, []

    def train(self, cfg, run: Path) -> Trained:  # noqa: ANN001
        run.mkdir(parents=True, exist_ok=True)
        P = np.full((1, 1, 11, 11), 0.1)
        save_model(run / "model.npz", P, P.copy())
        return Trained({"steps": cfg.steps, "dropped_final": 0}, run / "model.npz")

    def judge(self, P, Q, cell, budget) -> dict:  # noqa: ANN001
        top = float(np.abs(Q).max())
        self.judged.append(top)
        ev = fake_record(cell, budget).eval | {"loss": top}
        return {"eval": ev, "profile": fake_record(cell, budget).profile} | {
            "tail_check": None,
            "spectral": None,
        }

    def failure(self, judged, dropped_final=None) -> str | None:  # noqa: ANN001
        return None if judged["eval"]["loss"] <= self.limit else f"tail above {self.limit}"


@pytest.fixture
def rescuable(scripted, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """A cell of two stages whose verdict is :class:`Rescuable`'s and whose rescue fit proposes the
    scales 0.9 (slack) and 0.8."""

    def make(limit: float, fit: tuple[float, dict] = (0.8, {"slack": 0.9})) -> Rescuable:
        scripted([0.5, 0.5])
        r = Rescuable(limit)
        monkeypatch.setattr(cell_mod.verdict, "judge", r.judge)
        monkeypatch.setattr(cell_mod.verdict, "failure", r.failure)
        real = inspect.signature(cell_mod.verdict.fit_scale)

        def fake_fit(*a, **k) -> tuple[float, dict]:  # noqa: ANN002, ANN003
            real.bind(*a, **k)  # called as the real fit takes its arguments
            return fit

        monkeypatch.setattr(cell_mod.verdict, "fit_scale", fake_fit)
        return r

    return make


def _rescued(files: dict[str, bytes]) -> tuple[dict, np.ndarray | None]:
    rec = json.loads(files["metrics.json"])
    if "model.npz" not in files:
        return rec, None
    with np.load(io.BytesIO(files["model.npz"])) as z:
        return rec, np.asarray(z["Q"])


def test_a_failing_cell_is_rescued_by_the_first_scale_that_passes(rescuable, tmp_path) -> None:
    r = rescuable(limit=0.0905)  # 0.1 fails, 0.1 · 0.9 passes
    rec, Q = _rescued(train_cell(Cell("diag", 1, "uniform:1"), TINY, tmp_path, r.train))
    assert r.judged == pytest.approx([0.1, 0.09])
    assert rec["failed"] is None and Q is not None and np.allclose(Q, 0.09)
    res = rec["training"]["rescue"]
    assert res["scale"] == 0.9 and res["failed"] == "tail above 0.0905"
    assert [t["scale"] for t in res["tried"]] == [0.9] and res["pool"] == TINY.rescue_pool
    assert rec["provenance"]["notes"] == [
        "its update was scaled by a further c = 0.9 after its stages (rescue)"
    ]
    assert rec["eval"]["loss"] == pytest.approx(0.09)  # the verdict is the rescued model's


def test_the_rescue_tries_the_fits_own_scale_after_the_slack_one(rescuable, tmp_path) -> None:
    r = rescuable(limit=0.085)
    rec, Q = _rescued(train_cell(Cell("diag", 1, "uniform:1"), TINY, tmp_path, r.train))
    assert r.judged == pytest.approx([0.1, 0.09, 0.08]) and np.allclose(Q, 0.08)
    assert [t["failed"] is None for t in rec["training"]["rescue"]["tried"]] == [False, True]


def test_a_cell_no_scale_rescues_fails_with_its_own_verdict_and_no_model(
    rescuable, tmp_path
) -> None:
    r = rescuable(limit=0.05)
    rec, Q = _rescued(train_cell(Cell("diag", 1, "uniform:1"), TINY, tmp_path, r.train))
    assert Q is None and rec["failed"] == "tail above 0.05" and rec["provenance"]["notes"] == []
    assert rec["eval"]["loss"] == pytest.approx(0.1)  # the unrescued model's verdict
    assert len(rec["training"]["rescue"]["tried"]) == 2


def test_a_cells_time_is_its_stages_training_seconds_over_every_call(rescuable, tmp_path) -> None:
    """A stage's ``seconds`` is the training's own time as the run reports it (over every call that
    trained it, so a stage resumed after an interruption counts its earlier calls too) plus its
    held-out evaluation, and the record's ``provenance.seconds`` adds what follows the stages; a run
    that does not report its time counts this call's."""
    cell = Cell("diag", 1, "uniform:1")
    r = rescuable(limit=1.0)  # two stages, a passing verdict

    def reported(cfg, run: Path) -> Trained:  # noqa: ANN001
        t = r.train(cfg, run)
        return Trained(t.metrics | {"seconds": 1000.0}, t.model)

    rec = json.loads(train_cell(cell, TINY, tmp_path / "a", reported)["metrics.json"])
    stages = [s["seconds"] for s in rec["training"]["stages"]]
    assert len(stages) == 2 and all(1000 <= s < 1060 for s in stages), stages
    assert sum(stages) <= rec["provenance"]["seconds"] < sum(stages) + 60
    r = rescuable(limit=1.0)
    rec = json.loads(train_cell(cell, TINY, tmp_path / "b", r.train)["metrics.json"])
    assert all(0 <= s["seconds"] < 60 for s in rec["training"]["stages"])


def test_a_passing_cell_and_a_fit_that_keeps_c_1_are_never_rescaled(rescuable, tmp_path) -> None:
    r = rescuable(limit=1.0)
    rec, Q = _rescued(train_cell(Cell("diag", 1, "uniform:1"), TINY, tmp_path / "a", r.train))
    assert "rescue" not in rec["training"] and np.allclose(Q, 0.1) and r.judged == [0.1]
    r = rescuable(limit=0.05, fit=(1.0, {"scale": 1.0, "searched": False}))
    rec, Q = _rescued(train_cell(Cell("diag", 1, "uniform:1"), TINY, tmp_path / "b", r.train))
    assert Q is None and rec["training"]["rescue"]["tried"] == [] and r.judged == [0.1]


def test_a_fig5_cell_records_its_replicas_each_judged_as_the_cell_is(
    scripted, monkeypatch, tmp_path
) -> None:
    """A Fig. 5 cell trains ``budget.seeds − 1`` replicas as it trained, from master seeds
    ``RULES.replica_seed · r``: its record's ``replicas`` holds each model's seed, chosen stage,
    steps, per-read-out loss and SE and verdict, the cell's own model first, and ``seeds.npz``
    their stacked ``P, Q``.  Here a model's ``max |Q|`` is its loss, and a loss above 0.15 fails."""
    scripted([0.5, 0.5] * TINY.seeds)

    def train(cfg, run: Path) -> Trained:  # noqa: ANN001
        run.mkdir(parents=True, exist_ok=True)
        P = np.full((1, 1, 11, 11), 0.1 * (1 + cfg.seed / cell_mod.RULES.replica_seed))
        save_model(run / "model.npz", P, P.copy())
        return Trained({"steps": cfg.steps, "dropped_final": 0}, run / "model.npz")

    c = Cell("diag", 1, "uniform:1", replicas=True)
    base = fake_record(c, TINY).eval

    def evaluate(P, Q, *a) -> dict:  # noqa: ANN001, ANN002
        top = float(np.abs(Q).max())
        return base | {"loss": top, "layers": base["layers"] | {"loss": [top, top]}}

    def judge(P, Q, cell, budget) -> dict:  # noqa: ANN001
        profile = fake_record(cell, budget).profile
        return {"eval": evaluate(P, Q), "profile": profile, "tail_check": None, "spectral": None}

    def failure(judged, dropped_final=None) -> str | None:  # noqa: ANN001
        return None if judged["eval"]["loss"] <= 0.15 else "tail above 0.15"

    monkeypatch.setattr(cell_mod.verdict, "judge", judge)
    monkeypatch.setattr(cell_mod.verdict, "evaluate_model", evaluate)
    monkeypatch.setattr(
        cell_mod.verdict, "checks", lambda *a: {"tail_check": None, "spectral": None}
    )
    monkeypatch.setattr(cell_mod.verdict, "failure", failure)
    files = train_cell(c, TINY, tmp_path, train)
    rec = parse_record(json.loads(files["metrics.json"]), c.name)
    assert rec.failed is None and set(files) == {"metrics.json", "model.npz", "seeds.npz"}
    assert rec.replicas == {
        "sequences": TINY.eval_sequences,
        "seed": [0, 100],
        "stage": [1, 1],
        "steps": [40, 40],
        "loss": [[0.1, 0.1], [0.2, 0.2]],
        "se": [base["layers"]["se"]] * 2,
        "failed": [None, "tail above 0.15"],
    }
    with np.load(io.BytesIO(files["seeds.npz"])) as z:
        assert z["P"].shape == z["Q"].shape == (2, 1, 1, 11, 11)
        assert np.allclose(z["Q"][:, 0, 0, 0, 0], [0.1, 0.2])
