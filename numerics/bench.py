r"""Measurements of training: its throughput, achieved GFLOP/s, the machine's matmul GFLOP/s and
time-to-quality (``lintf bench`` prints them; the scripts under ``benchmarks/`` time their variants
with :func:`timer`).

Throughput is measured on the real training program (a scanned chunk of Adam steps, data drawn on
device) after one warm-up chunk, for the fast Gram pass and for the plain token pass, taking turns
call by call (best of ``reps``).  On a host split into several devices
(:mod:`numerics.train.devices`) the plain pass is timed twice: on the same devices as the fast pass
(the pass alone), and on one device, which is a plain jitted implementation (a jitted program on an
unsplit CPU is one XLA device).  FLOPs per step come from XLA's ``cost_analysis`` of one compiled
step (forward + backward + data + Adam).  Time-to-quality trains a model with the default recipe
and evaluates the adjusted loss on 16 384 held-out sequences after every chunk until it reaches the
target; evaluation time is excluded from the training time and reported separately.  Nothing here
is a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from numerics.baselines import table
from numerics.models import kind_of
from numerics.train.config import TrainConfig
from numerics.train.loop import adjusted_losses, init_state, train, training_devices
from numerics.train.objective import effective_params, noise_values
from numerics.train.step import chunk_fn, place

#: Held-out sequences of time-to-quality's check after every chunk.
TTQ_SEQUENCES = 16384


def matmul_gflops(size: int = 1024, reps: int = 20) -> float:
    """Dense float32 ``size×size`` matmul rate of this machine, GFLOP/s (best of ``reps``)."""
    a = jax.random.normal(jax.random.PRNGKey(0), (size, size), jnp.float32)
    f = jax.jit(lambda x: x @ x)
    f(a).block_until_ready()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        f(a).block_until_ready()
        best = min(best, time.perf_counter() - t)
    return 2 * size**3 / best / 1e9


def step_flops(cfg: TrainConfig, devices: tuple | None = None) -> float | None:
    """XLA's flop count of one training step (one-step chunk, all seeds) on ``devices`` (default:
    training's); ``None`` where the backend has no cost analysis."""
    devices = devices or training_devices(cfg.batch)
    fn = chunk_fn(cfg, 1, devices)
    try:
        ca = (
            fn.lower(place(init_state(cfg), devices), jnp.asarray(0, jnp.int32), noise_values(cfg))
            .compile()
            .cost_analysis()
        )
    except Exception:  # noqa: BLE001 - cost analysis is optional in XLA backends
        return None
    ca = ca[0] if isinstance(ca, (list, tuple)) else ca
    # a sharded program's cost analysis counts one device's part of the batch
    return float(ca.get("flops", float("nan"))) * len(devices) if ca else None


def timer(cfg: TrainConfig, steps: int, devices: tuple | None = None) -> Callable[[], Any]:
    """A callable running one compiled training chunk of ``steps`` steps on ``devices`` (default:
    the ones training uses), compiled and warmed up here."""
    devices = devices or training_devices(cfg.batch)
    fn = chunk_fn(cfg, steps, devices)
    args = (place(init_state(cfg), devices), jnp.asarray(0, jnp.int32), noise_values(cfg))
    jax.block_until_ready(fn(*args))
    return lambda: jax.block_until_ready(fn(*args))


def throughput(
    cfgs: list[TrainConfig], steps: int, reps: int = 3, devices: list | None = None
) -> list[float]:
    """Steps/s of each config's compiled training chunk: the best of ``reps`` timed calls, the
    configs taking turns call by call, so that the shared machine's changing load hits them alike.
    ``devices[i]`` (a tuple, or None for training's default) is where config ``i`` runs."""
    devices = devices or [None] * len(cfgs)
    runs, best = [timer(c, steps, dv) for c, dv in zip(cfgs, devices)], [float("inf")] * len(cfgs)
    for _ in range(reps):  # best of reps: the minimum is the least disturbed
        for i, run in enumerate(runs):
            t = time.perf_counter()
            run()
            best[i] = min(best[i], time.perf_counter() - t)
    return [steps / b for b in best]


def throughput_rows(
    kind: str, layers: int, batch: int, steps: int, reps: int, plain: bool = True
) -> list[dict[str, Any]]:
    """One kind's training throughput, a row per pass: the fast pass on training's devices and,
    with ``plain``, the plain pass there and (when those are several host devices) on one device.
    FULL trains from its own start (no DIAG phase); the plain pass is the plain implementation,
    without step rejection (``trust = 0``), whose check is an extra of the shipped step."""
    all_devices = training_devices(batch)
    runs = [("fast", all_devices)]
    if plain:
        runs += [("plain", all_devices)] + (
            [("plain", all_devices[:1])] if len(all_devices) > 1 else []
        )
    cfgs = [
        TrainConfig(
            model=kind,
            layers=layers,
            batch=batch,
            steps=10**6,
            forward=forward,
            diag_steps=0 if kind_of(kind).diag_phase else None,
            trust=TrainConfig.trust if forward == "fast" else 0.0,
        )
        for forward, _ in runs
    ]
    rates, rows = throughput(cfgs, steps, reps, [dv for _, dv in runs]), []
    for (forward, dv), cfg, rate in zip(runs, cfgs, rates):
        flops = step_flops(cfg, dv)
        rows.append(
            {
                "model": kind,
                "layers": layers,
                "forward": forward,
                "devices": len(dv),
                "batch": batch,
                "steps_per_s": rate,
                "sequences_per_s": rate * batch,
                "flop_per_step": flops,
                "gflops": rate * flops / 1e9 if flops else None,
            }
        )
    return rows


def tunedrr_target(noise: str, sequences: int) -> tuple[float, str]:
    """Time-to-quality's default target, TunedRR's adjusted loss at ``noise`` (``n = 20, d = 10``,
    on ``sequences`` sequences), and the words that say where it comes from."""
    tr = table(noise, n=20, d=10, sequences=sequences, methods=("TunedRR",))["TunedRR"]
    return tr["loss"], f"TunedRR {tr['loss']:.5f} ± {tr['se']:.5f} on {sequences} sequences"


def time_to_quality(cfg: TrainConfig, target: float) -> dict[str, Any]:
    """Train ``cfg`` until the best seed's adjusted loss on :data:`TTQ_SEQUENCES` held-out
    sequences, checked after every chunk, is at most ``target``: ``reached`` (training seconds, or
    ``None``), ``step``, ``loss`` (the last checked), ``eval`` (seconds checking) and ``total``."""
    spent: dict[str, Any] = {"eval": 0.0, "reached": None, "loss": None}
    t0 = time.perf_counter()

    def check(state: Any, res: Any) -> bool:
        t = time.perf_counter()
        # the model as trained so far (a FULL model in its DIAG phase is its DIAG projection)
        params = effective_params(cfg, state.params, int(state.step))
        m, o = adjusted_losses(cfg, params, stream=2, sequences=TTQ_SEQUENCES)
        adj = float((m - o[None]).mean(axis=1).min())
        spent["eval"] += time.perf_counter() - t
        spent["loss"] = adj
        if adj <= target:
            spent["reached"] = time.perf_counter() - t0 - spent["eval"]
            spent["step"] = int(state.step)
            return True
        return False

    train(cfg, on_chunk=check)
    spent["total"] = time.perf_counter() - t0
    return spent
