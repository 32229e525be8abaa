"""The training configuration :class:`TrainConfig` and its JSON form :func:`config_dict`.

JAX-free at import (the command line builds its ``lintf train`` options from :class:`TrainConfig`'s
fields: each field's ``metadata["help"]`` is its help, a field without one is not an option, and
``metadata.get("flag")`` overrides the option's name).  What each choice does:
:mod:`numerics.train` and docs/training.md.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, asdict, dataclass, field
from functools import cached_property
from typing import Any

#: Peak learning rates and default ``y_step`` are per model kind (:class:`numerics.models.Kind`).
#: Fewest warm-up steps of a phase (``default_warmup``): DIAG-7 at 1e-2 skipped 3 steps in its first
#: 100 with a 150-step warm-up, and a FULL-7 DIAG phase with a 100-step warm-up diverged at step 100
#: (31 rollbacks).
WARMUP_MIN = 150
DTYPES = ("float32", "float64")
#: Initialisations: ``random`` (small Gaussian entries, the default) and ``spectral`` (GD++ only).
INITS = ("random", "spectral")
#: GD++'s ``ω_xx`` during training: kept ``≤ 0`` (projected after every step, the default) or
#: ``free``.
GDPP_XX = ("nonpositive", "free")
#: DIAG's ``q_y`` (FULL's ``Q_yy``) step: Adam's own (``plain``) or divided by ``E y² = d + E σ²``
#: (``scaled``, :func:`y_step`; measured in docs/training.md).
Y_STEPS = ("plain", "scaled")
#: Largest ``lr``, ``clip``, ``huber`` and ``trust`` accepted.  Each multiplies a float32 quantity
#: of order one (Adam's unit step, a gradient norm, a residual in units of ``√d``, a ratio of
#: losses); at ``1e6`` clipping, the Huber loss and step rejection are as good as off, and a larger
#: factor only brings float32's overflow (3.4e38) nearer.
FACTOR_MAX = 1e6
#: Least nonzero ``lr``, ``clip`` and ``huber``: far above float32's smallest normal number
#: (1.2e-38), which a smaller factor is flushed below, so that a run "trained" at ``lr = 1e-320``
#: does not silently stand still.
FACTOR_MIN = 1e-30
#: The least value of each count (an SE needs two evaluation sequences).
LEAST = dict(
    layers=1, heads=1, seeds=1, steps=1, batch=1, chunk=1, select_sequences=1, eval_sequences=2
)


def option(default: Any, text: str, flag: str | None = None) -> Any:
    """A :class:`TrainConfig` field that is an option of ``lintf train``: its default (``MISSING``:
    required), its help ``text`` and, where it is not ``--`` and the field's name in kebab case, its
    ``flag``."""
    return field(default=default, metadata={"help": text} | ({"flag": flag} if flag else {}))


@dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a run; two runs with equal configs give equal numbers."""

    model: str = option(
        MISSING,
        "full, diag or gdpp, or a linear-attention family member: causal, retnet, "
        "mamba2, gla, deltanet or gated-deltanet (docs/family.md)",
    )
    layers: int = option(MISSING, "number of layers L >= 1")
    noise: str = option("uniform:5", "fixed:S, uniform:SMAX or categorical:S1,S2,...")
    heads: int = option(1, "heads per layer (GD++ needs 1)")
    seeds: int = option(1, "seeds trained together (vmap); the best is kept")
    steps: int = option(3000, "training steps")
    batch: int = option(2048, "sequences per step")
    micro_batch: int = option(
        0,
        "sequences per forward and backward pass; the step adds "
        "the parts' sums (0: the whole batch at once; must divide "
        "--batch)",
    )
    lr: float | None = option(None, "peak learning rate (default: per model kind)")
    warmup: int | None = option(
        None, "warm-up steps of the (last) phase (default 5%% of it, at least 150, at most half)"
    )
    clip: float = option(1.0, "global gradient-norm clip")
    init_scale: float = 1e-3
    explode: float = 100.0
    seed: int = option(0, "master seed (init and data keys derive from it)")
    n: int = option(20, "context length n")
    d: int = option(10, "input dimension d")
    chunk: int = option(100, "steps per compiled chunk / checkpoint", flag="--chunk-steps")
    select_sequences: int = 8192
    eval_sequences: int = option(100_000, "fresh sequences for the final evaluation")
    dtype: str = option("float32", "float32 or float64")
    max_rollbacks: int = 30
    forward: str = "fast"
    diag_steps: int | None = option(
        None,
        "FULL only: steps that train the DIAG sub-family first, a warm start (default "
        "0: FULL trains from its own random start, as in the paper)",
    )
    init: str = option(
        "random",
        "random or spectral: GD++ only, start from the exact spectral fit "
        "(numerics.baselines.gdpp_fit); seed 0 stays the fit, seeds 1.. refine it with "
        "Adam",
    )
    huber: float = option(
        30.0,
        "training loss is Huber beyond this many √d (the target's "
        "standard deviation); 0: plain squared loss",
    )
    gdpp_xx: str = option(
        "nonpositive",
        "nonpositive or free: GD++ only, keep every ω_xx <= 0 while training "
        "(projected Adam) or leave it free",
    )
    # None: the kind's default_y_step, filled in by __post_init__
    y_step: str | None = option(
        None,
        "plain or scaled (default: scaled for FULL, plain for DIAG): divide Adam's "
        "step of q_y (FULL: Q_yy) by E y² = d + E σ² (numerics.train.step.y_step)",
    )
    trust: float = option(
        2.0,
        "reject a step that raises the median loss of its own batch (every 8th "
        "sequence) more than this factor, to above TRUST_FLOOR·d/2, and halve the rate "
        "until steps are accepted again; 0: off (numerics.train.step.TRUST_*)",
    )
    # the last steps minimise the plain mean squared error
    # (:func:`numerics.train.objective.loss_fn`)
    final_fraction: float = 0.1
    # a model file whose layers start the first layers of every seed
    warm_start: str | None = None

    def __post_init__(self) -> None:
        from numerics.data import check_sizes  # lazy: start-up

        kind = self.kind
        for name, lo in LEAST.items():
            if int(getattr(self, name)) < lo:
                raise ValueError(f"{name} must be >= {lo}, got {getattr(self, name)}")
        kind.check_heads(self.heads)
        self.noise_dist  # noqa: B018  (parses and validates the noise spec once)
        check_sizes(self.n, self.d, self.batch)
        if not (
            self.micro_batch == 0 or (self.micro_batch >= 1 and self.batch % self.micro_batch == 0)
        ):
            raise ValueError(
                f"micro_batch must be 0 (the whole batch) or divide batch={self.batch}, "
                f"got {self.micro_batch}"
            )
        if self.lr is not None and not (
            math.isfinite(self.lr) and FACTOR_MIN <= self.lr <= FACTOR_MAX
        ):
            raise ValueError(f"lr must be >= {FACTOR_MIN:g} and <= {FACTOR_MAX:g}, got {self.lr}")
        for name in ("clip", "huber", "trust"):
            if getattr(self, name) > FACTOR_MAX:  # NaN and the lower bounds: the checks below
                raise ValueError(f"{name} must be <= {FACTOR_MAX:g}, got {getattr(self, name)}")
        if 0 < self.clip < FACTOR_MIN:  # 0 and below: the check below
            raise ValueError(
                f"clip must be >= {FACTOR_MIN:g} (a smaller one is 0 in float32), got {self.clip}"
            )
        if 0 < self.huber < FACTOR_MIN:
            raise ValueError(
                f"huber must be 0 (the squared loss) or >= {FACTOR_MIN:g}, got {self.huber}"
            )
        if self.diag_steps and not kind.diag_phase:
            raise ValueError(
                f"diag_steps is a FULL-only warm start; it must be 0 for {self.model}, got "
                f"{self.diag_steps}"
            )
        if self.diag_steps is not None and not 0 <= self.diag_steps < self.steps:
            raise ValueError(
                f"diag_steps must be in [0, steps={self.steps}), got {self.diag_steps}"
            )
        if self.warmup is not None and not 0 <= self.warmup <= self.steps - self.phase1_steps:
            raise ValueError(
                f"warmup must be in [0, {self.steps - self.phase1_steps}] (the steps after the "
                f"DIAG phase), got {self.warmup}"
            )
        if not (math.isfinite(self.huber) and self.huber >= 0):
            raise ValueError(
                f"huber must be a finite number >= 0 (0: plain squared loss), got {self.huber}"
            )
        if not (math.isfinite(self.final_fraction) and 0 < self.final_fraction <= 1):
            raise ValueError(f"final_fraction must be in (0, 1], got {self.final_fraction}")
        if not (self.trust == 0 or (math.isfinite(self.trust) and self.trust > 1)):
            raise ValueError(
                f"trust must be 0 (no step rejection) or a finite number > 1, got {self.trust}"
            )
        if not (self.clip > 0 and self.init_scale > 0 and self.explode > 1):
            raise ValueError("clip and init_scale must be > 0 and explode > 1")
        if self.y_step is None:
            object.__setattr__(self, "y_step", kind.default_y_step)
        for name, allowed in (
            ("forward", ("fast", "plain")),
            ("gdpp_xx", GDPP_XX),
            ("y_step", Y_STEPS),
            ("init", INITS),
            ("dtype", DTYPES),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}"
                )
        if self.gdpp_xx != GDPP_XX[0] and kind.name != "gdpp":
            raise ValueError(
                f"gdpp_xx constrains GD++'s ω_xx; it must be {GDPP_XX[0]} (the default) for "
                f"{self.model}, got {self.gdpp_xx!r}"
            )
        if self.y_step != kind.default_y_step and kind.name == "gdpp":
            raise ValueError(
                "y_step scales the step of q_y, which GD++ does not have (its y column of Q is 0); "
                f"it must be {kind.default_y_step} for gdpp, got {self.y_step!r}"
            )
        if self.warm_start is not None and self.init != "random":
            raise ValueError(
                f"warm_start replaces the random start; init must be 'random', got {self.init!r}"
            )
        if self.init == "spectral" and not kind.spectral_init:
            raise ValueError(
                f"init 'spectral' needs model gdpp (a GD++ model is a polynomial in Σ), got "
                f"{self.model!r}"
            )
        if self.init == "spectral" and self.seeds == 1 and (self.lr, self.warmup) != (None, None):
            raise ValueError(
                f"{'lr' if self.lr is not None else 'warmup'} has no effect: with init 'spectral' "
                "and one seed, that seed is the spectral fit, which Adam leaves as it is; train "
                "seeds >= 2 to refine it"
            )
        if self.init == "spectral" and self.n <= self.d:
            raise ValueError(
                f"init 'spectral' needs context length n > d, got n={self.n}, d={self.d}"
            )
        import jax  # lazy: start-up

        if self.dtype == "float64" and not jax.config.jax_enable_x64:
            raise ValueError(
                "dtype float64 needs jax_enable_x64 (the CLI sets it for --dtype float64)"
            )

    @property
    def peak_lr(self) -> float:
        return float(self.lr if self.lr is not None else self.kind.default_lr)

    @property
    def phase1_steps(self) -> int:
        """``S₁``: steps that train only the DIAG sub-family of a FULL model (0 for DIAG and
        GD++)."""
        return int(self.diag_steps or 0) if self.kind.diag_phase else 0

    @property
    def warmup_steps(self) -> int:
        """Warm-up of the (last) phase: ``warmup``, else :func:`default_warmup` of its length."""
        return int(
            self.warmup
            if self.warmup is not None
            else default_warmup(self.steps - self.phase1_steps)
        )

    @property
    def final_start(self) -> int:
        """The first step of the final phase: plain squared loss, and every sequence left out
        counted."""
        return self.steps - max(1, math.ceil(self.final_fraction * self.steps))

    @property
    def huber_delta(self) -> float:
        """``δ = huber · √d``: ``√d`` is the standard deviation of the target ``y_t = ⟨w, x_t⟩``."""
        return float(self.huber * math.sqrt(self.d))

    @property
    def jdtype(self) -> Any:
        import jax.numpy as jnp  # lazy: start-up

        return getattr(jnp, self.dtype)

    @property
    def kind(self) -> Any:
        """The model kind object (:mod:`numerics.models.kinds`)."""
        from numerics.models.kinds import kind_of  # lazy: start-up

        return kind_of(self.model)

    @cached_property
    def noise_dist(self) -> Any:
        """``noise`` parsed once (:class:`numerics.data.Noise`); the config itself keeps the
        string."""
        from numerics.data import Noise  # lazy: start-up

        return Noise.parse(self.noise)


def default_warmup(steps: int) -> int:
    """5 % of a phase's ``steps`` but at least :data:`WARMUP_MIN` (at most half the phase): deep
    models need ~150 gentle Adam steps whatever the run's length."""
    return max(1, min(max(WARMUP_MIN, steps // 20), steps // 2))


#: The keys :func:`config_dict` writes beside the :class:`TrainConfig` fields (a ``config.json``
#: with any other key is not a run's: :func:`numerics.train.rundir._a_config`).
CONFIG_EXTRAS = frozenset({"peak_lr", "warmup_steps", "warm_start_sha256"})


def config_dict(cfg: TrainConfig) -> dict[str, Any]:
    d = asdict(cfg)
    d.update(peak_lr=cfg.peak_lr, warmup_steps=cfg.warmup_steps)
    # the default is left out, so run directories written before the option stay valid
    if cfg.init == "random":
        del d["init"]
    if cfg.micro_batch == 0:  # likewise
        del d["micro_batch"]
    if cfg.warm_start is not None:  # the file's content, not only its name, defines the run
        from numerics.io import file_sha256  # lazy: start-up

        d["warm_start_sha256"] = file_sha256(cfg.warm_start)
    # GD++ only; GD++ run directories from before the option (trained free) are refused
    if cfg.kind.name != "gdpp":
        del d["gdpp_xx"]
    # DIAG's default is left out, so earlier DIAG run directories stay valid; FULL's is always
    # written (FULL runs from before its default became "scaled" were plain, and are refused on
    # resume)
    if cfg.kind.name == "gdpp" or (cfg.kind.name == "diag" and cfg.y_step == "plain"):
        del d["y_step"]
    return d
