r"""The grid a sweep trains: :class:`Cell` (what), :data:`START` (from where), :class:`Schedule`
(how long) and :class:`Budget` (which cells, how long, how precisely), with the three budgets of
:data:`BUDGETS`.

A cell's start is decided here, when the grid is planned (:func:`start_of`), never by another cell:
the random start for every kind (FULL included, as in the paper), or for GD++ at σ_max = 0 the
spectral fit of :mod:`numerics.baselines.gdpp_fit` (self-contained: it depends on nothing trained).
So cells are independent, and each can train as one task anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from numerics.data import PAPER_NOISES, Noise
from numerics.models.kinds import kind_of
from numerics.reproduce.rules import RULES

MODELS = ("gdpp", "diag", "full")
PARTS = ("table1", "fig1", "fig2", "fig3", "fig4", "fig5", "fig7", "beyond")
#: The noise of Fig. 5 / Fig. 7 and of the beyond-the-paper depth study, and Fig. 4's.
FOCUS = "uniform:5"
CATEGORICAL = "categorical:1,3"
#: The starts a plan gives a cell (:func:`start_of`).  Records converted from earlier recipes may
#: name two more: ``"diag"`` (a FULL cell trained from the finished DIAG cell of its depth) and
#: ``"shallower"`` (a cell that continued from the finished cell one layer shallower); neither is
#: any plan's cell.
STARTS = ("random", "spectral")


def slug(noise: str) -> str:
    """``uniform:5`` → ``uniform5``, ``categorical:1,3`` → ``categorical1_3`` (file names)."""
    return str(Noise.parse(noise)).replace(":", "").replace(",", "_").replace(".", "p")


@dataclass(frozen=True, order=True)
class Cell:
    """One ``(model, layers, noise)`` of the grid; ``replicas``: the Fig. 5 cells, also trained from
    other master seeds (:data:`numerics.reproduce.rules.Rules.replica_seed`)."""

    model: str
    layers: int
    noise: str
    replicas: bool = field(default=False, compare=False)

    @property
    def name(self) -> str:
        return f"{self.model}-L{self.layers}-{slug(self.noise)}"


def start_of(cell: Cell) -> str:
    """The cell's start: ``"spectral"`` for GD++ at σ_max = 0, else ``"random"``."""
    spectral = kind_of(cell.model).spectral_init and Noise.parse(cell.noise).sigma_max == 0
    return "spectral" if spectral else "random"


@dataclass(frozen=True)
class Schedule:
    r"""Stages of one cell: stage 1 trains ``steps`` steps of ``batch`` sequences on ``seeds`` seeds
    from the cell's start; stage ``k ≥ 2`` trains one seed from the best stage so far for ``steps ·
    2^{k−2}`` steps (doubling the steps spent) at half the previous stage's peak rate; at most
    ``most`` stages.  After every stage the model's scale is fitted on ``scale_pool`` sequences
    (:func:`numerics.train.scale_fit.fit_scale`) and it is evaluated on ``held_out`` fresh
    sequences.  The stopping rule (:meth:`stop`) ends the cell; the cell keeps its best stage."""

    steps: int
    batch: int
    seeds: int
    most: int
    held_out: int = 100_000
    scale_pool: int = 2**19

    def __post_init__(self) -> None:
        lows = {"steps": 1, "batch": 1, "seeds": 1, "most": 2, "held_out": 2, "scale_pool": 2}
        for k, lo in lows.items():
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ValueError(f"schedule: {k} must be an integer >= {lo}, got {v!r}")

    def stage(self, k: int) -> tuple[int, int, float]:
        """Stage ``k``'s steps, seeds and the factor of the peak learning rate."""
        return self.steps * 2 ** max(0, k - 2), self.seeds if k == 1 else 1, 0.5 ** (k - 1)

    @property
    def cap(self) -> int:
        """The most steps a cell trains: ``steps · 2^{most−1}``."""
        return self.steps * 2 ** (self.most - 1)

    @staticmethod
    def stop(gain: float, old: float, gain_se: float, blown: bool) -> bool:
        """The one stopping rule: doubling the steps lowered the held-out mean ``old`` by ``gain ±
        gain_se`` (paired) by less than ``RULES.stop_rel`` of it or ``RULES.stop_se`` SEs, or not at
        all; by less than ``stop_rel`` alone when a stage compared is ``blown`` (one exploding
        sequence makes any SE huge)."""
        rel = RULES.stop_rel * abs(old)
        return gain <= (rel if blown else max(rel, RULES.stop_se * gain_se))


@dataclass(frozen=True)
class Budget:
    """A sweep: its grid (``models × depths × noises``, DIAG/FULL also at ``beyond_depths``), its
    :class:`Schedule`, and its evaluation sizes; ``seeds`` replicas of the Fig. 5 cells;
    ``select_sequences`` choose a stage's best seed; ``rescue_pool`` sequences refit the scale of a
    cell that fails its verdict (:func:`numerics.reproduce.verdict.rescue`)."""

    name: str
    models: tuple[str, ...]
    depths: tuple[int, ...]
    noises: tuple[str, ...]
    schedule: Schedule
    seeds: int
    eval_sequences: int = 100_000
    tune_sequences: int = 50_000
    profile_sequences: int = 10_000
    profile_points: int = 25
    select_sequences: int = 8192
    rescue_pool: int = 2**22
    beyond_depths: tuple[int, ...] = ()
    n: int = 20
    d: int = 10

    def __post_init__(self) -> None:
        for m in self.models:
            kind_of(m)
        if not self.models or not self.depths or not self.noises:
            raise ValueError("a budget needs at least one model, depth and noise setting")
        for nz in self.noises:
            Noise.parse(nz)
        if min((*self.depths, *self.beyond_depths)) < 1:
            raise ValueError(f"depths must be >= 1, got {self.depths}")
        sizes = (
            "seeds",
            "eval_sequences",
            "tune_sequences",
            "profile_sequences",
            "select_sequences",
            "rescue_pool",
        )
        for k in sizes:
            if int(getattr(self, k)) < 1:
                raise ValueError(f"{k} must be >= 1, got {getattr(self, k)}")
        if self.profile_points < 2:
            raise ValueError(f"profile_points must be >= 2, got {self.profile_points}")

    @property
    def max_depth(self) -> int:
        return max(self.depths)


#: The reference: stages of 3000 steps of batch 2048 (two seeds in the first), at most 6 (96 000
#: steps).
PAPER = Budget(
    "paper",
    MODELS,
    tuple(range(1, 8)),
    PAPER_NOISES,
    Schedule(steps=3000, batch=2048, seeds=2, most=6),
    seeds=5,
    beyond_depths=(8, 9, 10, 11, 12),
)
BUDGETS: dict[str, Budget] = {
    # The qualitative picture in minutes: 3 models × depths {1, 2, 4, 7} × σ = 0, σ ~ U(0,5), σ ∈
    # {1,3}.
    "quick": Budget(
        "quick",
        MODELS,
        (1, 2, 4, 7),
        ("uniform:0", FOCUS, CATEGORICAL),
        Schedule(steps=400, batch=512, seeds=1, most=3, held_out=20_000, scale_pool=2**17),
        seeds=2,
        tune_sequences=20_000,
        profile_sequences=1_000,
        profile_points=13,
        select_sequences=2048,
        rescue_pool=2**20,
    ),
    # The paper's grid on a 2-core CPU overnight: stages of 1500 steps of batch 512, one seed, at
    # most 7 stages.
    "overnight": replace(
        PAPER, name="overnight", schedule=Schedule(steps=1500, batch=512, seeds=1, most=7)
    ),
    "paper": PAPER,
}


def get_budget(name: str) -> Budget:
    if name not in BUDGETS:
        raise ValueError(f"--budget must be one of {', '.join(BUDGETS)}; got {name!r}")
    return BUDGETS[name]


def parse_parts(spec: str | None) -> tuple[str, ...]:
    """``"table1,fig1"`` → parts; ``None`` (no ``--only``) → all of :data:`PARTS`; an empty list is
    an error."""
    if spec is None:
        return PARTS
    parts = tuple(p.strip() for p in spec.split(",") if p.strip())
    bad = [p for p in parts if p not in PARTS]
    if bad or not parts:
        raise ValueError(
            f"--only takes a comma list out of {','.join(PARTS)}; got {', '.join(bad) or 'nothing'}"
        )
    return parts


def cells_for(budget: Budget, parts: Iterable[str]) -> list[Cell]:
    """The cells the parts need, by depth, then noise, then model (a stopped sweep has every model
    of the depths it reached); the Fig. 5 cells (deepest, :data:`FOCUS`) have ``replicas``."""
    parts, L = set(parts), budget.max_depth
    grid = {(m, d, nz) for m in budget.models for d in budget.depths for nz in budget.noises}
    want: set[tuple[str, int, str]] = set()
    if parts & {"table1", "fig1"}:
        want |= grid
    if "fig2" in parts:
        want |= {c for c in grid if (c[1] == L and c[2].startswith("uniform")) or c[2] == FOCUS}
    if "fig3" in parts:
        want |= {c for c in grid if c[2].startswith("categorical")}
    if "fig4" in parts:
        want.add(("full", 4, CATEGORICAL))
    if parts & {"fig5", "fig7"}:
        want |= {(m, L, FOCUS) for m in budget.models}
    if "beyond" in parts:
        deep = (*budget.depths, *budget.beyond_depths)
        want |= {
            (m, d, nz) for m in ("diag", "full") for d in deep for nz in (FOCUS, CATEGORICAL)
        } | {("diag", L, FOCUS)}
    return sorted(
        (Cell(m, d, nz, replicas=(nz == FOCUS and d == L)) for m, d, nz in want),
        key=lambda c: (c.layers, c.noise, MODELS.index(c.model), c.model),
    )


def parse_noises(budget: Budget, specs: Iterable[str]) -> tuple[str, ...]:
    """Settings of ``budget`` named by ``specs`` as the budget spells them (``uniform:5.0`` is
    ``uniform:5``)."""
    own, out = {str(Noise.parse(nz)): nz for nz in budget.noises}, []
    for spec in specs:
        try:
            key = str(Noise.parse(spec))
        except ValueError:
            key = None
        if key not in own:
            raise ValueError(
                f"--noise must be one of budget {budget.name}'s settings "
                f"({' | '.join(budget.noises)}); "
                f"got {spec!r}"
            )
        out.append(own[key])
    return tuple(dict.fromkeys(out))


def parse_cells(budget: Budget, specs: Iterable[str]) -> tuple[str, ...]:
    """Cell names of ``budget`` (as under ``OUT/models/``); any other name is a one-line error."""
    grid = {c.name for c in cells_for(budget, PARTS)}
    names = tuple(dict.fromkeys(specs))
    for name in names:
        if name not in grid:
            raise ValueError(
                f"--cell must name a cell of budget {budget.name} "
                "as under OUT/models/ "
                f"(MODEL-L<depth>-<noise>, such as {min(grid)}); got {name!r}"
            )
    return names


def plan_of(cell: Cell, budget: Budget) -> dict[str, Any]:
    """What a finished cell's numbers were made under, stored in its record: a stored record is the
    plan's cell when its plan equals this one."""
    return {
        "budget": budget.name,
        "start": start_of(cell),
        "eval_sequences": budget.eval_sequences,
        "profile_sequences": budget.profile_sequences,
        "profile_points": budget.profile_points,
        "schedule": asdict(budget.schedule),
        "replicas": budget.seeds if cell.replicas else 0,
        "n": budget.n,
        "d": budget.d,
    }
