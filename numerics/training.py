r"""Training FULL / DIAG / GD++ linear transformers: scanned, vmapped over seeds, sharded, resumable.

Objective (PAPER.md §2): ``ℒ(θ) = ½ E (y_t − ŷ_θ)²`` estimated on a fresh batch each step,
drawn on device by :func:`numerics.data.sample_with_sigma` from the key
``fold_in(fold_in(PRNGKey(seed), 1), step)``, so the data depend on ``(seed, step)`` only: a
resumed run sees exactly the batches an uninterrupted run sees.

Update (per seed ``s``, step ``t``; Adam with global-norm clipping, warm-up + cosine schedule):

.. math::

    g = \mathrm{clip}_c(\nabla ℒ), \quad θ \leftarrow θ - η_t\,ρ_s\,\mathrm{Adam}(g),\quad
    η_t = η\,\min(1, t/t_w)\,\tfrac12\,(1+\cos(π\,\tfrac{t}{N}))

=========  ==========================================================================
symbol     meaning / config field
=========  ==========================================================================
``η``      peak learning rate ``lr`` (default per model: :data:`DEFAULT_LR`)
``t_w``    warm-up steps ``warmup`` (default 5 % of ``steps``, at least ``WARMUP_MIN``, at most half)
``N``      ``steps``; ``c`` = ``clip`` (global gradient norm)
``ρ_s``    per-seed rollback factor, halved each time seed ``s`` diverges
=========  ==========================================================================

Choices, each a departure from the paper's recipe (Adam, constant ``1e-4``, 200 000 steps):

* **Schedule.** A 25–100× larger peak rate with linear warm-up and cosine decay to 0: the
  warm-up keeps the first Adam steps (whose second-moment estimate is poor) from kicking a deep
  model into its explosive region; the decay averages out the batch noise at the end, which a
  constant rate cannot.
* **Initialisation.** Entries ``N(0, init_scale²)`` with a small ``init_scale``: every layer starts
  close to the identity map ``I + G ≈ I`` whatever the depth, so no product of ``L`` layers
  explodes at step 0.  (Zero is a saddle point of ``p·q``; Adam's scale-free steps leave a
  small start quickly.)
* **Clipping** of the global gradient norm at ``clip`` bounds a single bad batch's damage.
* **Huber loss.** Training minimises ``mean huber_δ(y_t − ŷ)``: ``½ r²`` up to ``|r| = δ = huber·√d``
  (``√d`` is the standard deviation of the target ``y_t = ⟨w, x_t⟩``; default ``huber = 30``), linear
  beyond.  A deep model's rare sequence can have a residual of ``1e9`` while its pass stays below the
  overflow guard; its square (and the gradient's norm) then overflowed float32 and the whole step was
  skipped.  DIAG-12 at ``uniform:7`` and ``lr`` 3.4e-3 skipped 26 of its first 150 steps that way, and
  none with the Huber loss (``python benchmarks/huber_skips.py``).  The gradient of a sequence within
  ``δ`` is unchanged, and one beyond it still pulls with the bounded force ``δ``.  ``huber = 0`` is the
  plain squared loss.  The guard's statistic stays the median of ``½ r²``, and evaluation is the
  squared loss.
* **``y_step="scaled"``, FULL's default** (:func:`y_step`; DIAG's default is ``"plain"``, :data:`DEFAULT_Y_STEP`):
  DIAG's ``q_y`` (FULL's ``Q_yy``) steps ``E y² = d + E σ²`` times less.  Adam moves every parameter by about the rate, whatever
  its scale; ``q_y`` sets ``ω_xy`` and ``ω_yy``, which multiply the ``y`` entries of ``E``
  (``E_yy ≈ n (d + σ²)``: 200 to 1180 at ``uniform:7`` with ``n = 20``, ``d = 10``, where a diagonal ``x``
  entry is about ``n = 20``).  The scaled step is Adam in coordinates where ``y`` has ``x``'s scale, by
  the symmetry ``y ↦ y/s``, ``q_y ↦ s² q_y`` of the layer rule (tested).  FULL-12 rolled back once in 13
  runs with it and 11 times without (3 seeds; adjusted losses neither better nor worse); DIAG-12 still rolled
  back with it, and trained its low-noise settings worse, so DIAG keeps Adam's own step (measurements in
  :func:`y_step` and the README).
* **Divergence guard** (:func:`train`): a step whose loss or gradient is non-finite, or whose
  batch-median per-sequence loss exceeds ``explode × d/2`` (``d/2`` is the mean loss of ``ŷ = 0``;
  the median, so that one heavy-tailed sequence of a healthy deep model does not count, while
  exploding parameters move every sequence), is skipped.  A deep model is a degree-``3^L``
  polynomial of the data, so one sequence of 2048 can overflow float32: the guarded pass
  (:func:`numerics.fastforward.predict_fast` with ``guard=True``) drops such a sequence from the
  loss with an exactly zero gradient and counts it as ``+∞`` in the median, so it neither NaNs the
  step nor counts as divergence.  ``MAX_SKIPS`` consecutive exploding medians, more than half the
  chunk's steps skipped, or non-finite / exploding parameters at the chunk's end (checked on its
  last batch), mark the seed as diverged: the host rolls every seed back to the chunk's start,
  halves ``ρ_s`` of each diverged seed and re-runs the chunk; deterministic, since the retry sees
  the same data.  A chunk that fails again from the same start goes back one more chunk (up to
  :data:`HISTORY` chunks, kept in the checkpoint): the start itself can sit at the edge of the
  explosive region, so that every batch of the next chunk explodes whatever the rate.  Seen with GD++-12
  at ``uniform:0`` and ``lr`` 1e-3: the chunk from step 100 failed at every ``ρ`` down to ``2⁻³¹``, and the
  run stopped after 30 rollbacks at the same step.
  Nothing non-finite is checkpointed or saved.
* **Step rejection** (``trust``, default 2; ``0`` turns it off).  After computing a step, the chunk evaluates
  the median of ``½ r²`` on every :data:`TRUST_STRIDE`-th sequence of the step's own batch at the old and at the
  new parameters.  If the new median is more than ``trust`` times the old one and above :data:`TRUST_FLOOR`
  ``× d/2`` (or not finite), the step is rejected: parameters and Adam's moments stay as they were, and the seed's rejection factor ``damp`` (on the
  learning rate, beside ``ρ_s``) halves.  Every accepted step regrows ``damp`` by :data:`TRUST_REGROW`, up to 1.
  The comparison is on the same sequences, so batch-to-batch noise does not enter it (a median-ratio brake
  across successive batches, tried earlier, fired on that noise).  It acts before the guard below: a deep model
  reaches its explosive region by steps that each multiply the loss of every sequence, and the divergence
  guard only sees the region once the batch median is ``explode × d/2``.  The first 600 steps of DIAG-12 at
  ``uniform:7``, 3 seeds, chunks of 50 run without rollback: without it every seed failed a chunk (from step
  100, 150 and 200), with ``trust`` 2 or 1.5 none did, after 9, 6 and 2 (``trust`` 2) rejected steps
  (``python benchmarks/early_chunks.py --model diag --layers 12 --noise uniform:7 --steps 600 --seeds 3
  --variant 'default={"trust": 0}' --variant 'trust2={"trust": 2.0}' --variant 'trust1.5={"trust": 1.5}'``).
  The floor came after the first runs: without it DIAG-12 at ``uniform:0`` rejected 278 of its 3000 steps (medians
  near 1e-4, where Adam's ordinary jitter doubles them) and ended at 5.4e-4 against 3.1e-4 without rejection, and
  the quick budget's DIAG-7 at ``uniform:0`` at 0.064 against 0.038.
  Cost: two forward passes on an eighth of the batch per step.  Rejected steps are counted per seed
  (``rejected_steps`` in ``metrics.json``); they are not skipped steps.
* **Seeds** share the data stream and differ in initialisation; the best is chosen by the
  adjusted loss on a held-out selection set (a key stream disjoint from training and final eval).
* **Forward pass**: :func:`numerics.fastforward.predict_fast` (Gram form; batched matmuls, the Gram
  map ``T E Tᵀ`` with a hand-written reverse rule).
* **Random numbers**: the default Threefry keys, drawn flat (:func:`numerics.data.normal`, same
  numbers, ~3x faster than a 3-D draw on XLA CPU).  ``impl="rbg"`` / ``"unsafe_rbg"`` were measured
  and rejected: their raw bits are faster, but every consumer of them (uniform, normal) ran 2-3x
  slower on XLA CPU than Threefry's fused draw (measured on the training-perf branch,
  load ~5), and they would change every data stream.
* **FULL starts as DIAG.** A FULL run first trains only the DIAG sub-family of its ``(P, Q)``
  (:func:`diag_part`, the orthogonal projection onto ``diag(p_x I, p_y)``) for ``S₁ = diag_steps``
  steps (default :data:`DIAG_FRACTION` of ``steps``) at DIAG's rate and schedule, then all entries
  for the rest, with its own warm-up + cosine at ``DEFAULT_LR["full"]``.  The entries outside the
  DIAG family keep their small random start through the DIAG phase and break its symmetry after it.
  Why: trained from the near-identity start, FULL-7 at ``uniform:5`` spiked to mean batch losses of
  1e8-1e11 and still had adjusted loss 0.143 after 1500 steps at ``lr`` 1e-3 (2e-3 rolled back twice),
  while DIAG-7 reached 0.052 in 2000 steps and 1000 further FULL steps at 1e-4 stayed near it
  (0.054, no skip, no rollback; 3e-4 and 5e-4 lost more: ``benchmarks/full_phase_lr.py``).  ``diag_steps=0``
  trains FULL from the random start at ``DEFAULT_LR["full"]``.  This warm start biases a FULL model
  towards DIAG solutions, which matters for the paper's "DIAG matches FULL" claim: the report says so.
* Not done: warm-starting a deeper model from a shallower one (the near-identity start already
  trains every depth 1–12 with the defaults; see the smoke sweep in the README).
* **``init="spectral"``** (GD++ only; default ``"random"`` is the start above).  Every seed starts
  from :func:`numerics.gdpp_fit.fit_gdpp` (the exact expected loss minimised on importance-sampled
  spectra, float64, deterministic by ``seed``).  Seed 0 is the fit itself, *frozen*: its rollback
  factor ``ρ_0`` is 0, so Adam never moves it; seeds ``1..K−1`` refine it with Adam as configured.
  The best-seed selection (on held-out sequences) therefore keeps the better of the fit and its
  Adam refinements.  Near the fit the gradients (``~1e-13``) are far below Adam's ``ε = 1e-8``, so
  Adam's step is ``≈ η g/ε``: a small gradient step that does not wreck the fit, but cannot improve
  it much either.  Measured at ``L = 7``, ``fixed:0``, float64, 100 000 eval sequences:
  ``lintf train ... --init spectral --dtype float64 --seeds 2 --steps 200`` gave ``6.87e-15`` for the
  frozen fit and ``7.05e-15`` after 200 Adam steps at the default ``lr`` (the selection kept the fit);
  an earlier fit (proposal without the ``c = 2`` component), 300 steps at ``lr`` = ``1e-2`` / ``1e-5`` /
  ``1e-7``: ``3.31e-14`` → ``3.14e-14`` / ``3.30e-14`` / ``3.31e-14``.  Prefer ``dtype="float64"``:
  in float32 rounding, not the fit, sets the loss (the earlier fit, 1 step, float32: loss
  ``1.37e-12``, oracle ``1.15e-12``, adjusted ``2.2e-13``).  On resume the fit is not recomputed (the checkpoint holds the state).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .data import Noise, check_sizes, sample_with_sigma
from .fastforward import predict_fast, predict_plain
from .hostdevices import usable
from .models import Diag, Full, check_kind, init

#: Peak learning rates (chosen by short sweeps at ``uniform:5``, ``L = 7``; FULL's is that of its phase after
#: the DIAG start, ``benchmarks/full_phase_lr.py``, and the paper's rate).
DEFAULT_LR = {"full": 1e-4, "diag": 1e-2, "gdpp": 1e-2}
#: Fewest warm-up steps of a phase (``default_warmup``): DIAG-7 at 1e-2 skipped 3 steps in its first 100 with a
#: 150-step warm-up, and a FULL-7 DIAG phase with a 100-step warm-up diverged at step 100 (31 rollbacks).
WARMUP_MIN = 150
#: FULL only: the share of ``steps`` that trains the DIAG sub-family first (``diag_steps`` overrides it).
DIAG_FRACTION = 2 / 3
_DTYPES = {"float32": jnp.float32, "float64": jnp.float64}
#: A seed is declared diverged when this many consecutive steps have an exploding batch median.
MAX_SKIPS = 3
#: Good chunk starts kept for rolling back further than one chunk (:func:`train`).
HISTORY = 3
#: Initialisations: ``random`` (small Gaussian entries, the default) and ``spectral`` (GD++ only).
INITS = ("random", "spectral")
#: GD++'s ``ω_xx`` during training: kept ``≤ 0`` (projected after every step, the default) or ``free``.
GDPP_XX = ("nonpositive", "free")
#: DIAG's ``q_y`` (FULL's ``Q_yy``) step: Adam's own (``plain``) or divided by ``E y² = d + E σ²``
#: (``scaled``, :func:`y_step`; measured in the README).
Y_STEPS = ("plain", "scaled")
#: ``y_step`` when the config leaves it ``None``, per model (GD++ has no ``q_y``).
DEFAULT_Y_STEP = {"full": "scaled", "diag": "plain", "gdpp": "plain"}
#: Step rejection (``trust > 0``): the check runs on every ``TRUST_STRIDE``-th sequence of the step's batch, and an
#: accepted step regrows the rejection factor ``damp`` by this much (up to 1).
TRUST_STRIDE = 8
TRUST_REGROW = 1.1
#: ... and a step is rejected only where the new median is also above this fraction of ``d/2`` (the loss of ``ŷ = 0``):
#: near a low-noise optimum a step that doubles a median of 1e-4 is Adam's ordinary jitter, not a way into the cliff.
TRUST_FLOOR = 0.1


@dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a run; two runs with equal configs give equal numbers."""

    model: str
    layers: int
    noise: str = "uniform:5"
    heads: int = 1
    seeds: int = 1
    steps: int = 3000
    batch: int = 2048
    lr: float | None = None
    warmup: int | None = None
    clip: float = 1.0
    init_scale: float = 1e-3
    explode: float = 100.0
    seed: int = 0
    n: int = 20
    d: int = 10
    chunk: int = 100
    select_sequences: int = 8192
    eval_sequences: int = 100_000
    dtype: str = "float32"
    max_rollbacks: int = 30
    forward: str = "fast"
    diag_steps: int | None = None
    init: str = "random"
    huber: float = 30.0
    gdpp_xx: str = "nonpositive"
    y_step: str | None = None  # None: DEFAULT_Y_STEP[model], filled in by __post_init__
    trust: float = 2.0  # 0: no step rejection (:data:`TRUST_STRIDE`, :func:`_make_chunk`)
    final_fraction: float = 0.1  # the last steps minimise the plain mean squared error (:func:`loss_fn`)
    warm_start: str | None = None  # a model file whose layers start the first layers of every seed

    def __post_init__(self) -> None:
        check_kind(self.model)
        for name, lo in (("layers", 1), ("heads", 1), ("seeds", 1), ("steps", 1), ("batch", 1),
                         ("chunk", 1), ("select_sequences", 1), ("eval_sequences", 1)):
            if int(getattr(self, name)) < lo:
                raise ValueError(f"{name} must be >= {lo}, got {getattr(self, name)}")
        if self.model == "gdpp" and self.heads != 1:
            raise ValueError(f"GD++ has one head per layer; heads must be 1, got {self.heads}")
        Noise.parse(self.noise)
        check_sizes(self.n, self.d, self.batch)
        if self.lr is not None and not (math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a finite number > 0, got {self.lr}")
        if self.diag_steps is not None and self.model != "full" and self.diag_steps != 0:
            raise ValueError(f"diag_steps is a FULL-only warm start; it must be 0 for {self.model}, got {self.diag_steps}")
        if self.diag_steps is not None and not 0 <= self.diag_steps < self.steps:
            raise ValueError(f"diag_steps must be in [0, steps={self.steps}), got {self.diag_steps}")
        if self.warmup is not None and not 0 <= self.warmup <= self.steps - self.phase1_steps:
            raise ValueError(f"warmup must be in [0, {self.steps - self.phase1_steps}] (the steps after the "
                             f"DIAG phase), got {self.warmup}")
        if not (math.isfinite(self.huber) and self.huber >= 0):
            raise ValueError(f"huber must be a finite number >= 0 (0: plain squared loss), got {self.huber}")
        if not (math.isfinite(self.final_fraction) and 0 < self.final_fraction <= 1):
            raise ValueError(f"final_fraction must be in (0, 1], got {self.final_fraction}")
        if not (self.trust == 0 or (math.isfinite(self.trust) and self.trust > 1)):
            raise ValueError(f"trust must be 0 (no step rejection) or a finite number > 1, got {self.trust}")
        if not (self.clip > 0 and self.init_scale > 0 and self.explode > 1):
            raise ValueError("clip and init_scale must be > 0 and explode > 1")
        if self.forward not in ("fast", "plain"):
            raise ValueError(f"forward must be fast or plain, got {self.forward!r}")
        if self.gdpp_xx not in GDPP_XX:
            raise ValueError(f"gdpp_xx must be one of {', '.join(GDPP_XX)}, got {self.gdpp_xx!r}")
        if self.y_step is None:
            object.__setattr__(self, "y_step", DEFAULT_Y_STEP[self.model])
        if self.y_step not in Y_STEPS:
            raise ValueError(f"y_step must be one of {', '.join(Y_STEPS)}, got {self.y_step!r}")
        if self.init not in INITS:
            raise ValueError(f"init must be one of {', '.join(INITS)}, got {self.init!r}")
        if self.warm_start is not None and self.init != "random":
            raise ValueError(f"warm_start replaces the random start; init must be 'random', got {self.init!r}")
        if self.init == "spectral" and self.model != "gdpp":
            raise ValueError(f"init 'spectral' needs model gdpp (a GD++ model is a polynomial in Σ), got {self.model!r}")
        if self.init == "spectral" and self.n <= self.d:
            raise ValueError(f"init 'spectral' needs context length n > d, got n={self.n}, d={self.d}")
        if self.dtype not in _DTYPES:
            raise ValueError(f"dtype must be float32 or float64, got {self.dtype!r}")
        if self.dtype == "float64" and not jax.config.jax_enable_x64:
            raise ValueError("dtype float64 needs jax_enable_x64 (the CLI sets it for --dtype float64)")

    @property
    def peak_lr(self) -> float:
        return float(self.lr if self.lr is not None else DEFAULT_LR[self.model])

    @property
    def phase1_steps(self) -> int:
        """``S₁``: steps that train only the DIAG sub-family of a FULL model (0 for DIAG and GD++)."""
        if self.model != "full":
            return 0
        return int(self.diag_steps if self.diag_steps is not None else min(round(DIAG_FRACTION * self.steps), self.steps - 1))

    @property
    def warmup_steps(self) -> int:
        """Warm-up of the (last) phase: ``warmup``, else :func:`default_warmup` of its length."""
        return int(self.warmup if self.warmup is not None else default_warmup(self.steps - self.phase1_steps))

    @property
    def final_start(self) -> int:
        """The first step of the final phase: plain squared loss, and every sequence left out counted."""
        return self.steps - max(1, math.ceil(self.final_fraction * self.steps))

    @property
    def huber_delta(self) -> float:
        """``δ = huber · √d``: ``√d`` is the standard deviation of the target ``y_t = ⟨w, x_t⟩``."""
        return float(self.huber * math.sqrt(self.d))

    @property
    def jdtype(self) -> Any:
        return _DTYPES[self.dtype]


class TrainState(NamedTuple):
    """Per-seed state, every leaf with a leading seed axis ``K``."""

    params: Any
    opt_state: Any
    rho: jax.Array  # (K,) rollback factor on the learning rate
    step: jax.Array  # () global step (shared by all seeds)
    damp: jax.Array  # (K,) step-rejection factor on the learning rate (halved per rejected step, regrown after)
    rejected: jax.Array  # (K,) int32, steps rejected so far (:data:`TrainConfig.trust`)
    dropped: jax.Array  # (K,) int32, sequences left out of the squared loss in the final phase (:class:`Aux`)


def optimizer(cfg: TrainConfig) -> optax.GradientTransformation:
    """Clip, then Adam's direction; the learning rate is applied in :func:`_make_chunk`."""
    return optax.chain(optax.clip_by_global_norm(cfg.clip), optax.scale_by_adam())


def default_warmup(steps: int) -> int:
    """5 % of a phase's ``steps`` but at least :data:`WARMUP_MIN` (at most half the phase): deep models
    need ~150 gentle Adam steps whatever the run's length."""
    return max(1, min(max(WARMUP_MIN, steps // 20), steps // 2))


def _warm_cosine(t: jax.Array, peak: float, warmup: int, steps: int) -> jax.Array:
    warm = jnp.minimum(1.0, (t + 1.0) / warmup)
    cos = 0.5 * (1.0 + jnp.cos(jnp.pi * jnp.minimum(t, steps) / steps))
    return peak * warm * cos


def lr_at(cfg: TrainConfig, step: jax.Array) -> jax.Array:
    """``η_t``: linear warm-up to ``peak_lr``, then cosine decay to 0 at ``steps``.  A FULL model with a
    DIAG phase runs that schedule twice: DIAG's peak over the first ``S₁`` steps, then its own over the rest."""
    t = step.astype(jnp.float32)
    s1 = cfg.phase1_steps
    last = _warm_cosine(t - s1, cfg.peak_lr, cfg.warmup_steps, cfg.steps - s1)
    if not s1:
        return last
    first = _warm_cosine(t, DEFAULT_LR["diag"], default_warmup(s1), s1)
    return jnp.where(t < s1, first, last)


def init_state(cfg: TrainConfig, template: bool = False) -> TrainState:
    """The state at step 0; ``template=True`` skips the spectral fit (only the structure is needed on resume)."""
    keys = jax.random.split(jax.random.fold_in(jax.random.PRNGKey(cfg.seed), 0), cfg.seeds)
    params = jax.vmap(lambda k: init(cfg.model, k, cfg.layers, cfg.d, cfg.heads, cfg.init_scale, cfg.jdtype))(keys)
    rho = jnp.ones((cfg.seeds,), cfg.jdtype)
    if cfg.init == "spectral" and not template:
        from .gdpp_fit import fit_gdpp

        fit = fit_gdpp(cfg.layers, cfg.noise, cfg.n, cfg.d, cfg.seed).params
        params = type(params)(*(jnp.broadcast_to(jnp.asarray(p, cfg.jdtype), (cfg.seeds, cfg.layers)) for p in fit))
        rho = rho.at[0].set(0.0)  # seed 0 is the fit itself, frozen
    if cfg.warm_start is not None and not template:
        params = warm_params(cfg, params)
    params = project(cfg, params)
    opt_state = jax.vmap(optimizer(cfg).init)(params)
    return TrainState(params, opt_state, rho, jnp.zeros((), jnp.int32), jnp.ones((cfg.seeds,), cfg.jdtype),
                      jnp.zeros((cfg.seeds,), jnp.int32), jnp.zeros((cfg.seeds,), jnp.int32))


def warm_params(cfg: TrainConfig, params: Any) -> Any:
    """``params`` (leading seed axis) with their first ``L'`` layers replaced, in every seed, by the ``L'`` layers of
    the model file ``cfg.warm_start`` (read as ``cfg.model`` from its universal ``P, Q``: a DIAG file starts a FULL
    model as its DIAG embedding).  Layers ``L'+1 … L`` keep their small random start, close to the identity map,
    so the warm model computes what the file's model computes, up to that start."""
    from .io import load_model
    from .models import from_universal

    P, Q, _ = load_model(cfg.warm_start)
    if P.shape[0] > cfg.layers or P.shape[1] != cfg.heads or P.shape[-1] != cfg.d + 1:
        raise ValueError(f"warm_start {cfg.warm_start!r} holds {P.shape[0]} layers of {P.shape[1]} heads with "
                         f"d = {P.shape[-1] - 1}; it can start at most {cfg.layers} layers of {cfg.heads} heads, "
                         f"d = {cfg.d}")
    old = from_universal(cfg.model, P, Q, atol=1e-12)
    return jax.tree_util.tree_map(lambda a, o: a.at[:, : o.shape[0]].set(jnp.asarray(o, a.dtype)), params, old)


def project(cfg: TrainConfig, params: Any) -> Any:
    r"""GD++ with ``gdpp_xx = "nonpositive"``: ``ω_xx ← min(ω_xx, 0)`` (projected Adam); anything else unchanged.

    A GD++ layer maps every ``x`` by ``I + ω_xx Σ̂`` (``Σ̂`` the context's ``X^T X``); ``ω_xx > 0`` widens the
    spectrum by ``1 + ω_xx λ`` at every layer and the widening compounds with depth.  From the small random
    start, Adam's first, sign-like steps move every ``ω_xx`` up by about the learning rate
    (``python benchmarks/gdpp_first_steps.py``), and GD++-12 at ``uniform:0`` then rolled back 8 times.  The
    GD++ models fitted or trained well here have ``ω_xx ≤ 0`` at every layer whose ``ω_xx`` reaches the output
    (Theorem 5.1's preconditioner ``I − γ Σ̂`` with ``γ ≥ 0``), so the constraint leaves them in reach."""
    if cfg.model != "gdpp" or cfg.gdpp_xx == "free":
        return params
    return params._replace(omega_xx=jnp.minimum(params.omega_xx, 0))


def y_moment(cfg: TrainConfig, values: jax.Array) -> jax.Array:
    """``E y² = d + E σ²`` of the data (``w ~ N(0, I_d)``, ``x ~ N(0, I_d)``), from the traced noise levels
    ``values`` (:meth:`numerics.data.Noise.mean_sigma2_of`)."""
    return cfg.d + Noise.parse(cfg.noise).mean_sigma2_of(values)


def y_step(cfg: TrainConfig, updates: Any, values: jax.Array) -> Any:
    r"""Adam's step of DIAG's ``q_y`` (FULL's ``Q_yy``) divided by ``c = E y² = d + E σ²`` (``y_step="scaled"``).

    Scaling the targets by ``s`` is a symmetry of the layer rule: with ``S = diag(1_d, 1/s)`` the model on
    tokens ``(x, y/s)`` is the model on ``(x, y)`` conjugated by ``S``, and it needs ``P ↦ S P S^{-1}``,
    ``Q ↦ S^{-1} Q S^{-1}``.  For DIAG that leaves ``p`` and ``q_x`` as they are and multiplies ``q_y`` by ``s²``
    (``ω_xy`` and ``ω_yy``, the two ``ω`` that read ``y``).  Adam's step is the same size for every
    parameter whatever its scale, so without this it moves ``q_y`` ``c`` times too far in the coordinates
    where ``y`` has the scale of ``x`` (``s² = c``): the ``yy`` entry of ``E`` is ``n c``, and
    ``1 + ω_yy E_yy`` compounds over the layers.  This is the step of Adam run on ``q̃_y = c q_y``, except
    that the gradient clipping sees ``q_y``'s own gradient.  GD++ has no ``q_y`` (its ``y`` column of ``Q`` is
    0): unchanged.

    FULL's default (:data:`DEFAULT_Y_STEP`), not DIAG's.  FULL-12, 3000 steps: over all 10 noise settings with
    seed 0, 1 rollback in 1 setting against 9 in 7 with the plain step; seed 1 at ``uniform:6`` and
    ``categorical:1,3,5`` and seed 2 at ``uniform:5``, 0 rollbacks against 2.  Adjusted losses (4096 sequences)
    were lower with the scaled step in 7 of the 13 runs: no clear difference in quality (commands and table in
    the README).  For DIAG it is not a clear gain.  The first 600 steps of
    DIAG-12 at ``uniform:7`` (``c = 26.3``), 3 seeds, chunks of 50 without rollback: every seed failed a chunk
    with the plain step (from step 100, 150 and 200), and 2 of 3 with this one (from 150 and 200)
    (``python benchmarks/early_chunks.py --model diag --layers 12 --noise uniform:7 --steps 600 --seeds 3
    --variant 'plain={}' --variant 'scaled={"y_step": "scaled"}'``).  Over the default 3000 steps at depth 12
    and all 10 noise settings, one run each (``benchmarks/smoke_sweep.py``, commands and table in the README):
    DIAG rolled back 5 times in 4 settings (plain: 8 in 6), with lower losses at high noise and higher ones at
    low noise."""
    if cfg.y_step == "plain" or cfg.model == "gdpp":
        return updates
    c = y_moment(cfg, values).astype(jax.tree_util.tree_leaves(updates)[0].dtype)
    if isinstance(updates, Diag):
        return updates._replace(qy=updates.qy / c)
    return updates._replace(Q=updates.Q.at[..., cfg.d, cfg.d].divide(c))


def data_key(seed: jax.Array | int, stream: int, index: jax.Array | int) -> jax.Array:
    """Key of batch ``index`` in stream ``stream`` (1 training, 2 selection, 3 final eval) of master ``seed``."""
    return jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(seed), stream), index)


def _static(cfg: TrainConfig) -> TrainConfig:
    """The config with the seed and the noise levels zeroed: compiled programs are cached on it and take
    the seed and :func:`noise_values` as arguments (one compile serves ``uniform:0`` … ``uniform:7``)."""
    nz = Noise.parse(cfg.noise)
    return replace(cfg, seed=0, noise=str(Noise(nz.kind, tuple(0.0 for _ in nz.values))))


def noise_values(cfg: TrainConfig) -> jax.Array:
    """The noise levels of ``cfg.noise``, the traced argument of the compiled programs."""
    return jnp.asarray(Noise.parse(cfg.noise).values, cfg.jdtype)


def draw(cfg: TrainConfig, key: jax.Array, batch: int, sharding: Any = None, values: jax.Array | None = None) -> Any:
    """A batch from the config's noise distribution (float ``cfg.dtype``), sharded over the batch axis;
    ``values`` overrides the levels of ``cfg.noise`` (same kind and count)."""
    ks, kd = jax.random.split(key)
    sigma = Noise.parse(cfg.noise).sample_sigma(ks, batch, cfg.jdtype, values)
    b = sample_with_sigma(kd, sigma, cfg.n, cfg.d, cfg.jdtype)
    if sharding is not None:
        b = jax.tree_util.tree_map(lambda a: jax.lax.with_sharding_constraint(a, sharding(a.ndim)), b)
    return b


def batch_sharding(devices: list | None = None) -> Callable[[int], NamedSharding]:
    """``ndim ↦`` sharding that splits axis 0 (the batch) over all devices of a 1-D mesh."""
    mesh = Mesh(np.asarray(devices if devices is not None else jax.devices()), ("batch",))
    return lambda ndim: NamedSharding(mesh, PartitionSpec("batch", *([None] * (ndim - 1))))


def diag_part(params: Full) -> Diag:
    r"""The DIAG model a FULL ``(P, Q)`` is projected to during the DIAG phase: ``p_x`` = mean of the
    ``x``-block's diagonal, ``p_y = P_{yy}`` (likewise ``q``); the orthogonal projection onto
    ``diag(p_x I, p_y)``, so every diagonal ``x`` entry receives the same gradient and Adam moves them together."""
    d = params.P.shape[-1] - 1

    def split(M: jax.Array) -> tuple[jax.Array, jax.Array]:
        dg = jnp.diagonal(M, axis1=-2, axis2=-1)
        return jnp.mean(dg[..., :d], axis=-1), dg[..., d]

    (px, py), (qx, qy) = split(params.P), split(params.Q)
    return Diag(px, py, qx, qy)


def effective_params(cfg: TrainConfig, params: Any, step: int) -> Any:
    """The model that ``params`` (leading seed axis) define after ``step`` steps: in a FULL run's DIAG
    phase, the FULL embedding of their DIAG projection (:func:`diag_part`); otherwise ``params``."""
    if cfg.phase1_steps and step <= cfg.phase1_steps:
        from .models import universal

        return jax.vmap(lambda p: Full(*universal(diag_part(p), cfg.d)))(params)
    return params


def huber(r: jax.Array, delta: float) -> jax.Array:
    """``½ r²`` for ``|r| ≤ δ``, ``δ (|r| − ½ δ)`` beyond (``δ = 0``: ``½ r²`` everywhere)."""
    sq = 0.5 * r**2
    if not delta:
        return sq
    a = jnp.abs(r)
    return jnp.where(a <= delta, sq, delta * (a - 0.5 * delta))


class Aux(NamedTuple):
    """:func:`loss_fn`'s auxiliary output."""

    median: jax.Array  # batch median of ½ r², a dead sequence counted as +∞ (the divergence guard's statistic)
    dropped: jax.Array  # sequences left out of the squared loss: dead, or beyond δ while the Huber loss applies


def loss_fn(params: Any, b: Any, forward: str = "fast", diag_phase: Any = False,
            delta: float = 0.0, final: Any = False) -> tuple[jax.Array, Aux]:
    """``mean huber_δ(y_t − ŷ)`` (``½ (y_t − ŷ)²`` where ``|y_t − ŷ| ≤ δ``) over the batch's *alive* sequences
    (``predict_fast(guard=True)``: a sequence whose pass leaves the float range is dropped, with gradient
    exactly 0) and, as auxiliary output (:class:`Aux`), the batch *median* of ``½ (y_t − ŷ)²`` with dead sequences
    counted as ``+∞`` (the divergence guard's statistic) and the number of sequences the objective did not take as
    ``½ r²``.  ``final`` (a traced bool) drops the Huber loss: the last
    :data:`FINAL_FRACTION` of training minimises the plain mean squared error.  ``forward="plain"``: the literal
    token pass.  ``diag_phase`` (FULL only, a traced bool): evaluate the DIAG projection :func:`diag_part` instead."""
    if forward == "fast":
        f = lambda p, X, y, xq: predict_fast(p, X, y, xq, guard=True)  # noqa: E731
    else:
        f = lambda p, X, y, xq: (predict_plain(p, X, y, xq), jnp.ones(X.shape[0], bool))  # noqa: E731

    def stats(out: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, Aux]:
        yhat, alive = out
        r = yhat - b.y_query
        sq = 0.5 * r**2
        per = jnp.where(final, sq, huber(r, delta)) if delta else sq
        mean = jnp.sum(jnp.where(alive, per, 0)) / jnp.sum(alive)  # NaN if every sequence is dead
        clipped = (jnp.abs(r) > delta) & ~final if delta else jnp.zeros_like(alive)
        dropped = jnp.sum(~alive | (alive & clipped)).astype(jnp.int32)
        return mean, Aux(jnp.nanmedian(jnp.where(alive, sq, jnp.inf)), dropped)  # a dead sequence counts as exploding

    if isinstance(params, Full) and diag_phase is not False:
        return jax.lax.cond(diag_phase, lambda p: stats(f(diag_part(p), b.X, b.y, b.x_query)),
                            lambda p: stats(f(p, b.X, b.y, b.x_query)), params)
    return stats(f(params, b.X, b.y, b.x_query))


def _make_chunk(cfg: TrainConfig, length: int, sharding: Any) -> Callable:
    """A jitted function running ``length`` steps with ``lax.scan``; returns (state, ok (K,), losses (length, K))."""
    opt = optimizer(cfg)
    limit = cfg.explode * cfg.d / 2.0

    s1 = cfg.phase1_steps
    phase = (lambda step: step < s1) if s1 else (lambda step: False)  # noqa: E731

    def seed_step(params, opt_state, rho, damp, lr, b, diag_phase, values, final):
        (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, b, cfg.forward, diag_phase,
                                                                         cfg.huber_delta, final)
        med = aux.median
        updates, new_opt = opt.update(grads, opt_state, params)
        updates = y_step(cfg, updates, values)
        new_params = project(cfg, jax.tree_util.tree_map(lambda p, u: p - (lr * rho * damp).astype(p.dtype) * u,
                                                         params, updates))
        finite = jnp.isfinite(loss) & jnp.isfinite(optax.tree.norm(grads))
        finite &= jnp.all(jnp.asarray([jnp.all(jnp.isfinite(p)) for p in jax.tree_util.tree_leaves(new_params)]))
        sane = jnp.isfinite(med) & (med < limit)  # the batch's typical sequence is fine at these parameters
        good = finite & sane
        accept = trusted(params, new_params, b, diag_phase) if cfg.trust else True
        take = good & accept
        keep = lambda new, old: jax.tree_util.tree_map(lambda a, c: jnp.where(take, a, c), new, old)  # noqa: E731
        damp = jnp.where(good & ~accept, 0.5 * damp, jnp.where(take, jnp.minimum(1.0, damp * TRUST_REGROW), damp))
        return (keep(new_params, params), keep(new_opt, opt_state), damp.astype(rho.dtype), good & ~accept, good, ~sane,
                jnp.where(good, loss, jnp.nan), aux.dropped)

    def trusted(params, new_params, b, diag_phase):
        """The step keeps the median loss of every ``TRUST_STRIDE``-th sequence of its own batch within ``trust``×,
        or below ``TRUST_FLOOR × d/2``."""
        sub = jax.tree_util.tree_map(lambda a: a[::TRUST_STRIDE], b)
        before = loss_fn(params, sub, cfg.forward, diag_phase)[1].median
        after = loss_fn(new_params, sub, cfg.forward, diag_phase)[1].median
        return jnp.isfinite(after) & ((after <= cfg.trust * before) | (after <= TRUST_FLOOR * cfg.d / 2))

    def body(carry, xs):
        seed, values = xs
        state, run_bad, worst, skips = carry
        b = draw(cfg, data_key(seed, 1, state.step), cfg.batch, sharding, values)
        lr = lr_at(cfg, state.step)
        final = state.step >= cfg.final_start
        params, opt_state, damp, rejected, good, boom, loss, dropped = jax.vmap(
            seed_step, in_axes=(0, 0, 0, 0, None, None, None, None, None))(
            state.params, state.opt_state, state.rho, state.damp, lr, b, phase(state.step), values,
            final)
        run_bad = jnp.where(boom, run_bad + 1, 0)
        carry = (TrainState(params, opt_state, state.rho, state.step + 1, damp, state.rejected + rejected.astype(jnp.int32),
                            state.dropped + jnp.where(final, dropped, 0).astype(jnp.int32)),
                 run_bad, jnp.maximum(worst, run_bad), skips + (~good).astype(jnp.int32))
        return carry, loss

    @jax.jit
    def run(state: TrainState, seed: jax.Array, values: jax.Array):
        zero = jnp.zeros(state.rho.shape, jnp.int32)
        xs = (jnp.broadcast_to(seed, (length,)), jnp.broadcast_to(values, (length, *values.shape)))
        (state, _, worst, skips), losses = jax.lax.scan(body, (state, zero, zero, zero), xs)
        # the chunk's last update is verified too (finite parameters, bounded median loss on the last batch)
        b = draw(cfg, data_key(seed, 1, state.step - 1), cfg.batch, sharding, values)
        med = jax.vmap(loss_fn, in_axes=(0, None, None, None))(state.params, b, cfg.forward, phase(state.step - 1))[1].median
        finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(p).reshape(p.shape[0], -1), axis=1)
                                    for p in jax.tree_util.tree_leaves(state.params)]), axis=0)
        ok = (worst < MAX_SKIPS) & (2 * skips <= length) & finite & (med < limit)
        return state, ok, losses

    return run


_CHUNK_CACHE: dict = {}


def _chunk_fn(cfg: TrainConfig, length: int, devices: tuple) -> Callable:
    key = (_static(cfg), length, devices)
    if key not in _CHUNK_CACHE:
        _CHUNK_CACHE[key] = _make_chunk(_static(cfg), length, batch_sharding(list(devices)))
    return _CHUNK_CACHE[key]


def adjusted_losses(cfg: TrainConfig, params: Any, stream: int, sequences: int,
                    chunk: int = 8192) -> tuple[np.ndarray, np.ndarray]:
    r"""Per-sequence losses ``½(y_t−ŷ)²`` ``(K, sequences)`` of ``params`` (leading seed axis) and of the
    oracle ridge ``w_{σ²} = (Σ + σ_τ² I)^{-1} α`` (PAPER.md §2) ``(sequences,)`` on the same sequences.
    The adjusted loss is their difference."""
    model, oracle = [], []
    one = jax.device_put(params, jax.devices()[0])  # trained parameters are replicated over the batch's devices
    for i in range(0, sequences, chunk):
        m = min(chunk, sequences - i)
        a, o = _eval_jit(_static(cfg), m)(one, data_key(cfg.seed, stream, i // chunk), noise_values(cfg))
        model.append(np.asarray(a, np.float64))
        oracle.append(np.asarray(o, np.float64))
    return np.concatenate(model, axis=1), np.concatenate(oracle)


def finite_adjusted(model: np.ndarray, oracle: np.ndarray) -> tuple[float, float | None, int]:
    """Adjusted loss over the sequences where ``model (B,)`` is finite, its standard error, and how many were
    not finite (a deep model is a high-degree polynomial of the data: a rare sequence overflows)."""
    fin = np.isfinite(model)
    diff = model[fin] - oracle[fin]
    m = len(diff)
    mean = float(diff.mean()) if m else float("nan")
    return mean, (float(diff.std(ddof=1) / math.sqrt(m)) if m > 1 else None), int((~fin).sum())


_EVAL_CACHE: dict = {}


def _eval_jit(cfg: TrainConfig, m: int) -> Callable:
    """Per-sequence losses of ``m`` sequences, on one device (:func:`adjusted_losses` moves the parameters there).
    Not sharded: on 2 host devices (jax 0.10.2, XLA CPU) the batched LAPACK solve of the oracle ridge deadlocked
    whenever the program spanned both devices (batch split, in ``jit`` and ``shard_map`` alike, or parameters
    replicated by training); ``tests/test_hostdevices.py`` evaluates a trained model on the split host."""
    if (cfg, m) not in _EVAL_CACHE:
        def f(params, key, values):
            b = draw(cfg, key, m, None, values)
            Sigma = jnp.einsum("bnd,bne->bde", b.X, b.X)
            alpha = jnp.einsum("bnd,bn->bd", b.X, b.y)
            eye = jnp.eye(cfg.d, dtype=Sigma.dtype)
            w_or = jnp.linalg.solve(Sigma + (b.sigma**2)[:, None, None] * eye, alpha[..., None])[..., 0]
            oracle = 0.5 * (b.y_query - jnp.einsum("bd,bd->b", w_or, b.x_query)) ** 2
            yhat = jax.vmap(lambda p: predict_fast(p, b.X, b.y, b.x_query))(params)
            return 0.5 * (yhat - b.y_query) ** 2, oracle
        _EVAL_CACHE[(cfg, m)] = jax.jit(f)
    return _EVAL_CACHE[(cfg, m)]


@dataclass
class Result:
    """What :func:`train` returns: final state, per chunk ``[end step, mean training loss of each seed]``, rollbacks."""

    state: TrainState
    curve: list[list[float]] = field(default_factory=list)
    rollbacks: list[dict[str, Any]] = field(default_factory=list)
    steps_per_s: float = float("nan")
    devices: int = 1  # how many devices shared the batch (part of the arithmetic: numerics.hostdevices)
    skipped: int = 0
    #: the starts of the last accepted chunks, oldest first, each with the curve's length and ``skipped`` then
    history: list[tuple[TrainState, int, int]] = field(default_factory=list)


def _to_host(state: TrainState) -> TrainState:
    return jax.tree_util.tree_map(np.asarray, state)


def training_devices(batch: int) -> tuple:
    """The devices :func:`train` shards a batch over by default: every device whose count divides ``batch``
    (:func:`numerics.hostdevices.usable`)."""
    return tuple(usable(jax.devices(), batch))


def train(cfg: TrainConfig, resume: dict[str, Any] | None = None,
          on_chunk: Callable[[TrainState, Result], Any] | None = None,
          checkpoint: Callable[[TrainState, Result], None] | None = None,
          devices: list | None = None, stop_at: int | None = None) -> Result:
    """Run (or continue from ``resume``, :func:`numerics.rundir.prepare`'s payload: ``leaves``, ``curve``,
    ``rollbacks``, ``skipped`` and the earlier chunk starts ``history`` / ``history_marks``) to ``cfg.steps``
    (or ``stop_at``).

    ``checkpoint(state, result)`` is called after every good chunk (the CLI writes it atomically);
    ``on_chunk`` may return ``True`` to stop early (time-to-quality benchmark).
    """
    devices = training_devices(cfg.batch) if devices is None else tuple(devices)
    ndev = len(devices)
    if cfg.batch % ndev:
        raise ValueError(f"batch must be a multiple of the number of devices ({ndev}), got {cfg.batch}")
    res = Result(init_state(cfg, template=resume is not None), devices=ndev)
    if resume is not None:
        template = res.state
        leaves = [jnp.asarray(x) for x in resume["leaves"]]
        res.state = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(template), leaves)
        res.curve, res.rollbacks = list(resume["curve"]), list(resume["rollbacks"])
        res.skipped = int(resume.get("skipped", 0))
        res.history = [(jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(template),
                                                     [jnp.asarray(x) for x in h]), n, k)
                       for h, (n, k) in zip(resume.get("history", []), resume.get("history_marks", []))]
    end = cfg.steps if stop_at is None else min(stop_at, cfg.steps)
    t0, s0 = time.perf_counter(), int(res.state.step)
    failed_at = None  # the start step of the last chunk, if it failed (no chunk accepted since)
    while int(res.state.step) < end:
        step = int(res.state.step)
        length = min(cfg.chunk, end - step)
        new, ok, losses = _chunk_fn(cfg, length, devices)(res.state, jnp.asarray(cfg.seed, jnp.int32),
                                                        noise_values(cfg))
        ok = np.asarray(ok)
        if not ok.all():
            bad = np.flatnonzero(~ok)
            rho = np.asarray(res.state.rho).copy()
            rho[bad] *= 0.5
            event = {"step": step, "seeds": bad.tolist(), "rho": rho[bad].tolist()}
            if failed_at == step and res.history:  # failed again from the same start: go back one more chunk
                res.state, n, res.skipped = res.history.pop()
                res.curve = res.curve[:n]
                event["to"] = int(res.state.step)
            failed_at = int(res.state.step)
            res.rollbacks.append(event)
            if len(res.rollbacks) > cfg.max_rollbacks:
                from .errors import LintfError

                raise LintfError(f"training diverged {len(res.rollbacks)} times (last at step {step}, seeds "
                                 f"{bad.tolist()}); lower --lr (now {cfg.peak_lr:g})")
            res.state = res.state._replace(rho=jnp.asarray(rho, res.state.rho.dtype))
            continue
        failed_at = None
        res.history = [*res.history, (res.state, len(res.curve), res.skipped)][-HISTORY:]
        res.state = new
        losses = np.asarray(losses, np.float64)
        res.skipped += int(np.isnan(losses).sum())
        res.curve.append([int(new.step), *nanmean(losses, axis=0).tolist()])
        if checkpoint is not None:
            checkpoint(res.state, res)
        if on_chunk is not None and on_chunk(res.state, res):
            break
    done = int(res.state.step) - s0
    res.steps_per_s = done / max(time.perf_counter() - t0, 1e-9) if done else float("nan")
    return res


def nanmean(a: np.ndarray, axis: int) -> np.ndarray:
    """Mean over the non-NaN entries (NaN where there are none), without numpy's empty-slice warning."""
    a = np.asarray(a, np.float64)
    cnt = (~np.isnan(a)).sum(axis=axis)
    return np.where(cnt > 0, np.nansum(a, axis=axis) / np.maximum(cnt, 1), np.nan)


def config_dict(cfg: TrainConfig) -> dict[str, Any]:
    d = asdict(cfg)
    d.update(peak_lr=cfg.peak_lr, warmup_steps=cfg.warmup_steps)
    if cfg.init == "random":  # the default is left out, so run directories written before the option stay valid
        del d["init"]
    if cfg.warm_start is not None:  # the file's content, not only its name, defines the run
        import hashlib
        from pathlib import Path

        d["warm_start_sha256"] = hashlib.sha256(Path(cfg.warm_start).read_bytes()).hexdigest()
    if cfg.model != "gdpp":  # GD++ only; GD++ run directories from before the option (trained free) are refused
        del d["gdpp_xx"]
    # DIAG's default is left out, so earlier DIAG run directories stay valid; FULL's is always written (FULL runs
    # from before its default became "scaled" were plain, and are refused on resume)
    if cfg.model == "gdpp" or (cfg.model == "diag" and cfg.y_step == "plain"):
        del d["y_step"]
    return d
