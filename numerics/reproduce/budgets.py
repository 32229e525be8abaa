"""The sweeps of the reproduction: budgets (grid and effort), cells, and what a finished cell's numbers depend on
(:func:`cell_signature`; a resumed sweep refuses a stored cell whose signature changed)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from numerics.data import PAPER_NOISES, Noise
from numerics.evaluate import losses as evaluation
from numerics.models.kinds import kind_of
from numerics.train.continuation import RESCUE_POOL, Stages, retried, scale_constants, start_for

MODELS = ("gdpp", "diag", "full")
PARTS = ("table1", "fig1", "fig2", "fig3", "fig4", "fig5", "fig7", "beyond")
#: The noise of Fig. 5 / Fig. 7 and of the beyond-the-paper depth study.
FOCUS = "uniform:5"
CATEGORICAL = "categorical:1,3"
BASELINES = ("ConstRR", "AdaRR", "TunedRR", "Bayes")
#: Master-seed step between the replicas of a Fig. 5 cell (:func:`numerics.reproduce.experiments.seed_replicas`),
#: clear of the attempts' steps of 1 (:func:`numerics.reproduce.experiments.attempt_config`).
REPLICA_SEED = 100
EVAL_SEED = 0  # baselines.table(seed=0): tuning key split(PRNGKey(0))[0], evaluation key split(PRNGKey(0))[1]


@dataclass(frozen=True)
class Budget:
    """A sweep: the grid and the per-cell effort.  ``None`` training fields take
    :class:`numerics.train.TrainConfig`'s defaults."""

    name: str
    models: tuple[str, ...]
    depths: tuple[int, ...]
    noises: tuple[str, ...]
    #: Fig. 5's spread: its cells are trained this many times, each replica from its own master seed
    #: (:func:`numerics.reproduce.experiments.seed_replicas`).  Every cell's stages train ``stages.seeds`` seeds.
    seeds: int
    eval_sequences: int
    tune_sequences: int
    profile_sequences: int
    profile_points: int
    seed_sequences: int  # each Fig. 5 replica's read-out evaluation (it is judged as a cell is)
    select_sequences: int = 8192
    chunk: int | None = None
    beyond_depths: tuple[int, ...] = (8, 9, 10, 11, 12)
    #: How each cell is trained (:mod:`numerics.train.continuation`): in stages until converged ...
    stages: Stages = Stages(steps=3000, most=3, batch=2048, seeds=2)
    #: ... starting from the random start (``False``: every cell on its own) or from the finished shallower cell
    #: (``True``: continuation over depth, cheaper but worse: ``docs/experiments/continuation-basin.md``).
    continuation: bool = False
    #: ... and, where it does not continue over depth, FULL from the finished DIAG cell of its depth and setting
    #: (its DIAG embedding; the random start without one): from the random start FULL settles in a worse basin than
    #: DIAG (``docs/experiments/full-from-diag.md``).  With ``continuation`` FULL starts there anyway.
    full_from_diag: bool = True
    #: Fresh float64 sequences of the tail check of every model of depth >= :data:`TAIL_DEPTH`.
    tail_sequences: int = evaluation.TAIL_SEQUENCES
    #: Attempts of a cell that fails its evaluation even after the rescue: each trains it again from the start
    #: with the next master seed (:func:`numerics.reproduce.experiments.run_cell`).
    attempts: int = 3
    #: Pool of the rescue of a failed cell (:func:`numerics.reproduce.judge.rescue`): at least ``tail_sequences``.
    rescue_pool: int = RESCUE_POOL
    #: Spectra of the GD++ cells at σ_max = 0 of depth >= :data:`TAIL_DEPTH` (:func:`numerics.reproduce.judge.spectral_check`).
    spectral_sequences: int = 2**21
    #: GD++ cells at σ_max = 0 start from the spectral fit (``TrainConfig.init="spectral"``): the
    #: exact expected loss of GD++ minimised on Wishart spectra, then Adam (seed 0 frozen at the fit).
    gdpp_spectral: bool = True
    n: int = 20
    d: int = 10

    def __post_init__(self) -> None:
        for m in self.models:
            kind_of(m)
        if not self.models or not self.depths or not self.noises:
            raise ValueError("a budget needs at least one model, depth and noise setting")
        for L in (*self.depths, *self.beyond_depths):
            if int(L) < 1:
                raise ValueError(f"depths must be >= 1, got {L}")
        for nz in self.noises:
            Noise.parse(nz)
        for k in ("seeds", "eval_sequences", "tune_sequences", "profile_sequences", "seed_sequences",
                  "select_sequences", "rescue_pool", "spectral_sequences", "attempts"):
            if int(getattr(self, k)) < 1:
                raise ValueError(f"{k} must be >= 1, got {getattr(self, k)}")
        if int(self.rescue_pool) < int(self.tail_sequences):
            raise ValueError(f"rescue_pool must be >= tail_sequences ({self.tail_sequences}), got {self.rescue_pool}")
        if int(self.profile_points) < 2:
            raise ValueError(f"profile_points must be >= 2, got {self.profile_points}")

    @property
    def max_depth(self) -> int:
        return max(self.depths)

    def train_kwargs(self) -> dict[str, Any]:
        kw = {"seeds": self.seeds, "select_sequences": self.select_sequences,
              "eval_sequences": self.select_sequences, "n": self.n, "d": self.d}
        return kw | ({"chunk": self.chunk} if self.chunk is not None else {})


BUDGETS: dict[str, Budget] = {
    # The full Table 1 (every model x depths 1-7 x the 10 noise settings) plus DIAG/FULL at depths 8-12 on
    # uniform:5 and categorical:1,3; every cell from the random start, in stages of the default recipe's length
    # (3000 steps of batch 2048, two seeds) until converged, at most 6 stages (96 000 steps, about half the
    # paper's 200 000): continuation over depth settles in a worse basin.  FULL starts from the DIAG cell of its depth.
    # A cell never ends above a model it holds (floor): the cell one layer shallower, and FULL's DIAG start.
    "paper": Budget("paper", MODELS, tuple(range(1, 8)), PAPER_NOISES, seeds=5, eval_sequences=100_000,
                    tune_sequences=50_000, profile_sequences=10_000, profile_points=25, seed_sequences=100_000,
                    stages=Stages(steps=3000, most=6, batch=2048, seeds=2, floor=True), continuation=False),
    # The qualitative picture: 3 models x depths {1,2,4,7} x 3 noise settings (σ = 0, σ ~ U(0,5), σ ∈ {1,3}), every
    # cell from the random start as in the paper budget (FULL from DIAG), shorter stages, the paper's evaluation and
    # tail rules.  Depth 2 gives GD++ at σ = 0 two rates of decrease above the floor (depth 7 is at float32's).
    # Beyond the paper it has no depth > 7.  Rescue pool 2^20: the smallest power of two above the tail check's 10^6.
    "quick": Budget("quick", MODELS, (1, 2, 4, 7), ("uniform:0", FOCUS, CATEGORICAL), seeds=2,
                    eval_sequences=100_000, tune_sequences=20_000, profile_sequences=1_000, profile_points=13,
                    seed_sequences=100_000, select_sequences=2048, beyond_depths=(), rescue_pool=2**20,
                    stages=Stages(steps=400, most=3, batch=512, seeds=1, held_out=20_000, scale_pool=2**17),
                    continuation=False),
    # For the tests: seconds, not meaning.
    "test": Budget("test", ("diag",), (1, 2), ("uniform:1", CATEGORICAL), seeds=2, eval_sequences=500,
                   tune_sequences=500, profile_sequences=100, profile_points=3, seed_sequences=200,
                   select_sequences=256, chunk=20, beyond_depths=(3,), tail_sequences=1000, rescue_pool=4096,
                   spectral_sequences=4096, attempts=2,
                   stages=Stages(steps=20, most=2, batch=64, seeds=1, held_out=256, scale_pool=2048),
                   continuation=True),
}


# The paper budget's grid and evaluation with stages of a sixth of its work: 1500 steps of batch 1024, one seed, at
# most 7 stages (96 000 steps at most), each at the full peak rate (decay 1: halving it stops short stages short of
# the paper cell's loss); a stage that blows up after one that did not does not end a cell (retry_blown); a cell
# never ends above a model it holds (floor, as in the paper budget).  Its cells are compared with the paper budget's,
# sequence by sequence (docs/experiments/lean-stages.md).
LEAN_STAGES = Stages(steps=1500, most=7, batch=1024, seeds=1, retry_blown=True, decay=1.0, floor=True)
BUDGETS["lean"] = replace(BUDGETS["paper"], name="lean", stages=LEAN_STAGES)
# The lean budget at batch 512 (a step 0.58 as long on a 2-core CPU), DIAG cells of depth >= 5 held to 4 stages at
# least: their short stages at batch 512 stop on a plateau (docs/experiments/lean-batch.md).
BUDGETS["brisk"] = replace(BUDGETS["lean"], name="brisk", stages=replace(LEAN_STAGES, batch=512, diag_least=4))


def get_budget(name: str) -> Budget:
    if name not in BUDGETS:
        raise ValueError(f"--budget must be one of {', '.join(k for k in BUDGETS)}; got {name!r}")
    return BUDGETS[name]


def parse_parts(spec: str | None) -> tuple[str, ...]:
    """``"table1,fig1"`` → parts; ``None`` (no ``--only``) → all of :data:`PARTS`; an empty list is an error."""
    if spec is None:
        return PARTS
    parts = tuple(p.strip() for p in spec.split(",") if p.strip())
    bad = [p for p in parts if p not in PARTS]
    if bad or not parts:
        raise ValueError(f"--only takes a comma list out of {','.join(PARTS)}; got {', '.join(bad) or 'nothing'}")
    return parts


def parse_noises(budget: Budget, specs: Iterable[str], parts: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """Settings of ``budget`` named by ``specs`` as the budget spells them (``uniform:5.0`` is ``uniform:5``); one
    outside it, or (given ``parts``) that none of their cells has, is a one-line error listing those it could be."""
    used = set(budget.noises) if parts is None else set(noises_for(cells_for(budget, parts)))
    allowed = [nz for nz in budget.noises if nz in used]
    whose = f"budget {budget.name}'s" if used >= set(budget.noises) else f"the --only {','.join(parts)} cells'"
    own, out = {str(Noise.parse(nz)): nz for nz in allowed}, []
    for spec in specs:
        try:
            key = str(Noise.parse(spec))
        except ValueError:
            key = None
        if key not in own:
            raise ValueError(f"--noise must be one of {whose} settings ({' | '.join(allowed)}); got {spec!r}")
        out.append(own[key])
    return tuple(dict.fromkeys(out))


def slug(noise: str) -> str:
    """``uniform:5`` → ``uniform5``, ``categorical:1,3`` → ``categorical1_3`` (file names)."""
    return str(Noise.parse(noise)).replace(":", "").replace(",", "_").replace(".", "p")


@dataclass(frozen=True, order=True)
class Cell:
    model: str
    layers: int
    noise: str
    keep_seeds: bool = field(default=False, compare=False)

    @property
    def name(self) -> str:
        return f"{self.model}-L{self.layers}-{slug(self.noise)}"


def cells_for(budget: Budget, parts: Iterable[str]) -> list[Cell]:
    """The cells the requested parts need (deduplicated; Fig. 5 cells keep every seed), in training order: by depth,
    within a depth by noise setting (the cells of one noise evaluate on the same sequences, which the evaluation
    keeps: :data:`numerics.evaluate.losses.BATCH_CACHE`), and each FULL cell after the DIAG cell of its depth (which it
    starts from where the budget continues over depth).
    A sweep that stops early has trained every model at the depths it reached."""
    parts, L = set(parts), budget.max_depth
    want: set[tuple[str, int, str]] = set()
    grid = {(m, d, nz) for m in budget.models for d in budget.depths for nz in budget.noises}
    if parts & {"table1", "fig1"}:
        want |= grid
    if "fig2" in parts:
        want |= {c for c in grid if c[1] == L and c[2].startswith("uniform")}
        want |= {c for c in grid if c[2] == FOCUS}
    if "fig3" in parts:
        want |= {c for c in grid if c[2].startswith("categorical")}
    if "fig4" in parts:
        want.add(("full", 4, CATEGORICAL))
    if parts & {"fig5", "fig7"}:
        want |= {(m, L, FOCUS) for m in budget.models}
    if "beyond" in parts:
        want |= {(m, d, nz) for m in ("diag", "full") for d in (*budget.depths, *budget.beyond_depths)
                 for nz in (FOCUS, CATEGORICAL)}
        want.add(("diag", L, FOCUS))
    return sorted((Cell(m, d, nz, keep_seeds=(nz == FOCUS and d == L)) for m, d, nz in want),
                  key=lambda c: (c.layers, c.noise, kind_of(c.model).diag_phase, c.model))


def noises_for(cells: Iterable[Cell]) -> list[str]:
    return sorted({c.noise for c in cells})


# ----------------------------------------------------------------------------------------------- evaluation


def train_config(cell: Cell, budget: Budget) -> Any:
    from numerics.train.config import TrainConfig

    kw = budget.train_kwargs()
    if budget.gdpp_spectral and kind_of(cell.model).spectral_init and Noise.parse(cell.noise).sigma_max == 0:
        kw["init"] = "spectral"
    return TrainConfig(model=cell.model, layers=cell.layers, noise=cell.noise, **kw)


def cell_signature(cell: Cell, budget: Budget) -> dict[str, Any]:
    """What a finished cell's numbers depend on; a stored cell with another signature is refused."""
    from numerics.train.config import config_dict

    return ({"train": json.loads(json.dumps(config_dict(train_config(cell, budget)))),
            "stages": stages_signature(budget.stages) | {"scale_fit": scale_constants()},
            "eval_sequences": budget.eval_sequences, "profile_sequences": budget.profile_sequences,
            "profile_points": budget.profile_points, "tail_sequences": tail_sequences(cell, budget),
            "seed_sequences": budget.seed_sequences if cell.keep_seeds else None}
            | ({"replicas": {"seeds": budget.seeds, "seed_step": REPLICA_SEED}} if cell.keep_seeds else {})
            | ({} if budget.continuation else {"continuation": False})  # cells stored before the flag continued
            | ({"full_from_diag": True} if full_start(cell, budget) else {}))


#: Fields of :class:`Stages` added after cells were stored, and the value those cells were trained with: a signature
#: leaves them out at that value.
LATER_STAGE_FIELDS = {"retry_blown": False, "decay": 0.5, "floor": False, "diag_least": 1, "diag_least_depth": 5}


def stages_signature(st: Stages) -> dict[str, Any]:
    """The stages' fields, without those of :data:`LATER_STAGE_FIELDS` at the value cells stored before them had."""
    return {k: v for k, v in asdict(st).items() if k not in LATER_STAGE_FIELDS or v != LATER_STAGE_FIELDS[k]}


def same_signature(stored: Any, cell: Cell, budget: Budget) -> bool:
    """A stored cell's signature is the cell's under ``budget``, but for the cap on its stages (``stages.most``): a
    cell that converged below both caps is the same either way, and one that stopped at a smaller cap without
    converging goes on (:func:`goes_on`)."""
    def uncapped(sig: Any, drop: tuple[str, ...]) -> Any:
        return sig | {"stages": {k: v for k, v in sig["stages"].items() if k not in drop}} if isinstance(sig, dict) \
            and isinstance(sig.get("stages"), dict) else sig

    # a cell stored before retry_blown or floor is the same as far as it went; where either would have gone on, goes_on
    drop = ("most",) + (("retry_blown",) if before_retry(stored) else ()) + (("floor",) if before_floor(stored) else ())
    return uncapped(stored, ("most",)) == uncapped(cell_signature(cell, budget), drop)


def before_retry(sig: Any) -> bool:
    """The stored signature ``sig`` is of a cell trained without ``Stages.retry_blown``."""
    return isinstance(sig, dict) and "retry_blown" not in (sig.get("stages") or {})


def before_floor(sig: Any) -> bool:
    """The stored signature ``sig`` is of a cell trained without ``Stages.floor``."""
    return isinstance(sig, dict) and "floor" not in (sig.get("stages") or {})


def stage_factor(m: dict[str, Any]) -> int:
    """How many times as long as the budget's the stored cell ``m``'s stages are: 1, or the factor of the convergence
    check's longer run it took (``"adopted"``, :func:`numerics.reproduce.convergence.adopt`)."""
    return int((m.get("adopted") or {}).get("factor", 1))


def own_budget(m: dict[str, Any], budget: Budget) -> Budget:
    """The budget the stored cell ``m`` was trained under: ``budget`` with every stage :func:`stage_factor` times
    longer."""
    factor = stage_factor(m)
    return budget if factor == 1 else replace(budget, stages=budget.stages.scaled(factor))


def goes_on(m: dict[str, Any], budget: Budget) -> bool:
    """The stored passing cell ``m`` stopped at its last stage without converging, or, trained without the budget's
    ``retry_blown``, at a blown stage after one that is not, or is stuck above its floor (``Stages.floor``: its
    record's ``"floor"``, :func:`numerics.reproduce.deeper.check_stored`), and ``budget`` allows more."""
    t = m.get("train") or {}
    st = t.get("stages", ())
    blown = budget.stages.retry_blown and before_retry(m.get("signature")) and retried([s["blown"] for s in st])
    low = budget.stages.floor and bool((t.get("floor") or {}).get("stuck"))
    return not m.get("failed") and (t.get("converged") is False or blown or low) and len(st) < budget.stages.most


def left_to_train(m: dict[str, Any] | None, budget: Budget) -> bool:
    """The sweep trains a cell of stored record ``m`` (``None``: none usable), or one that :func:`goes_on`."""
    return m is None or goes_on(m, budget)


def train_layers(cell: Cell, budget: Budget) -> int:
    """The layers a cell trains, its cost: its depth, times the budget's ``seeds`` for a Fig. 5 cell (replicas)."""
    return cell.layers * (budget.seeds if cell.keep_seeds else 1)


def parse_cells(budget: Budget, specs: Iterable[str],
                finished: Callable[[Cell], bool] = lambda c: False) -> tuple[str, ...]:
    """Cell names of ``budget`` named by ``specs``, spelt as under ``OUT/models/`` (``diag-L7-uniform5``).  A name
    outside the budget is a one-line error, and so is a cell whose start by the budget's recipe (the first cell of the
    grid that :func:`numerics.train.continuation.start_for` would take: FULL's DIAG cell of its depth, or the cell one
    layer shallower where the budget continues over depth) is neither ``finished`` nor named too: it would train from
    another start than in a sweep of the whole grid."""
    grid = {c.name: c for c in cells_for(budget, PARTS)}
    names = tuple(dict.fromkeys(specs))
    for name in names:
        if name not in grid:
            raise ValueError(f"--cell must name a cell of budget {budget.name} as under OUT/models/ "
                             f"(MODEL-L<depth>-<noise>, such as {next(iter(grid))}); got {name!r}")
        asked = [c for c in start_choices(grid[name], budget) if c.name in grid]  # quick has no depth 3 for depth 4
        if asked and asked[0].name not in names and not finished(asked[0]):
            raise ValueError(f"--cell {name} starts from {asked[0].name}, which is not finished under --out; "
                             f"name that cell too (--cell {asked[0].name})")
    return names


def recipe_start(cell: Cell, budget: Budget, finished: Callable[[Cell], Path | None]) -> Path | None:
    """The model file the cell starts from by the budget's recipe (``None``: the random start or the spectral fit),
    given ``finished(cell)``, the model file of a finished, passing cell or ``None``: where the budget continues over
    depth, or FULL starts from DIAG (:func:`full_start`), the first of
    :func:`numerics.train.continuation.start_for`'s choices that is finished."""
    if not (budget.continuation or full_start(cell, budget)):
        return None
    return start_for(cell.model, cell.layers, cell.noise, lambda m, L: finished(Cell(m, L, cell.noise)),
                     over_depth=budget.continuation)


def start_choices(cell: Cell, budget: Budget) -> list[Cell]:
    """Every cell the cell's recipe (:func:`recipe_start`) may start from, in the order it tries them: it takes the
    first that is finished and passing."""
    asked: list[Cell] = []
    recipe_start(cell, budget, lambda c: asked.append(c) or None)
    return asked


def chains(budget: Budget, cells: Iterable[Cell]) -> list[list[Cell]]:
    """``cells`` in groups closed under "starts from" and "is checked against": a cell is in the group of every cell
    its recipe may start from (:func:`start_choices`), and of its floor (:func:`shallower`), that is among ``cells``
    too (left to train, so not finished yet).  A process given a group then starts and checks every cell as a serial
    sweep does: from its DIAG cell, or the cell one layer shallower, not from the random start because that cell
    trains elsewhere.  Groups keep ``cells``' order."""
    cells = list(cells)
    root = {c.name: c.name for c in cells}

    def find(name: str) -> str:
        while root[name] != name:
            name = root[name]
        return name

    for c in cells:
        for s in (a for a in [*start_choices(c, budget), shallower(c, budget)] if a and a.name in root):
            root[find(c.name)] = find(s.name)
    groups: dict[str, list[Cell]] = {}
    for c in cells:
        groups.setdefault(find(c.name), []).append(c)
    return list(groups.values())


def shallower(cell: Cell, budget: Budget) -> Cell | None:
    """The cell's floor where the budget has ``Stages.floor``: the cell of its model and setting one layer shallower,
    if the budget's grid has it (:mod:`numerics.train.continuation`)."""
    low = Cell(cell.model, cell.layers - 1, cell.noise)
    return low if budget.stages.floor and low.name in {c.name for c in cells_for(budget, PARTS)} else None


def full_start(cell: Cell, budget: Budget) -> bool:
    """FULL starts from its depth's DIAG cell where the budget does not continue over depth (``full_from_diag``)."""
    return budget.full_from_diag and not budget.continuation and kind_of(cell.model).diag_phase


#: Depth from which a model also passes the tail check on ``Budget.tail_sequences`` sequences.
TAIL_DEPTH = 4


def tail_sequences(cell: Cell, budget: Budget) -> int | None:
    return budget.tail_sequences if cell.layers >= TAIL_DEPTH else None


