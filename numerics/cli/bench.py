r"""``lintf bench``: training throughput, achieved GFLOP/s, the machine's matmul GFLOP/s, time-to-quality.

Throughput is measured on the real training program (scanned chunk of Adam steps, data drawn
on device) after one warm-up chunk, for the fast Gram pass and for the plain token pass, taking turns
call by call (best of ``--reps``).  On a host split into several devices (:mod:`numerics.train.devices`) the
plain pass is timed twice: on the same devices as the fast pass (the pass alone), and on one device, which is
a plain jitted implementation (a jitted program on an unsplit CPU is one XLA device).  FLOPs
per step come from XLA's ``cost_analysis`` of one compiled step (forward + backward + data + Adam).
Time-to-quality trains a model with the default recipe and evaluates the adjusted loss on 16 384 held-out sequences after every chunk
until it reaches the target: TunedRR's adjusted loss from :func:`numerics.baselines.table` for the
same noise (``--eval-sequences``, default 100 000), or ``--target``.  Evaluation time is excluded from the reported
training time and shown separately.  Nothing here is a test: numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import shlex
import time

from numerics.train.devices import ENV

#: The time-to-quality options and their defaults; without ``--ttq`` none of them may be given.
TTQ = {"noise": "uniform:5", "eval_sequences": 100_000, "max_steps": 6000, "target": None}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--models", default="full,diag", help="comma-separated kinds (default full,diag)"
    )
    p.add_argument("--layers", type=int, default=7, help="depth (default 7)")
    p.add_argument("--batch", type=int, default=2048, help="batch (default 2048)")
    p.add_argument("--steps", type=int, default=20, help="timed steps per measurement (default 20)")
    p.add_argument(
        "--reps",
        type=int,
        default=3,
        help="timed calls per pass, fast and plain taking turns; the best counts (default 3)",
    )
    p.add_argument("--no-plain", action="store_true", help="skip the plain token-pass reference")
    p.add_argument(
        "--ttq", action="store_true", help="also measure time-to-quality (minutes per model)"
    )
    p.add_argument(
        "--noise", default=None, help=f"noise for time-to-quality (default {TTQ['noise']})"
    )
    p.add_argument(
        "--target",
        type=float,
        default=None,
        help="adjusted-loss target (default: TunedRR's, from numerics.baselines.table)",
    )
    p.add_argument(
        "--eval-sequences",
        type=int,
        default=None,
        help=f"evaluation sequences of the TunedRR target (default {TTQ['eval_sequences']})",
    )
    p.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help=f"step budget of a time-to-quality run (default {TTQ['max_steps']})",
    )
    p.add_argument("--json", action="store_true", help="print the measurements as one JSON object")


def matmul_gflops(size: int = 1024, reps: int = 20) -> float:
    """Dense float32 ``size×size`` matmul rate of this machine, GFLOP/s (best of ``reps``)."""
    import jax  # lazy: start-up
    import jax.numpy as jnp  # lazy: start-up

    a = jax.random.normal(jax.random.PRNGKey(0), (size, size), jnp.float32)
    f = jax.jit(lambda x: x @ x)
    f(a).block_until_ready()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        f(a).block_until_ready()
        best = min(best, time.perf_counter() - t)
    return 2 * size**3 / best / 1e9


def step_flops(cfg, devices: tuple | None = None) -> float | None:  # noqa: ANN001
    """XLA's flop count of one training step (one-step chunk, all seeds) on ``devices`` (default: training's)."""
    import jax.numpy as jnp  # lazy: start-up

    from numerics.train.loop import init_state, training_devices  # lazy: start-up
    from numerics.train.objective import noise_values  # lazy: start-up
    from numerics.train.step import chunk_fn, place  # lazy: start-up

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


def timer(cfg, steps: int, devices: tuple | None = None):  # noqa: ANN001, ANN201
    """A callable running one compiled training chunk of ``steps`` steps on ``devices`` (default: the ones
    training uses), compiled and warmed up here."""
    import jax  # lazy: start-up
    import jax.numpy as jnp  # lazy: start-up

    from numerics.train.loop import init_state, training_devices  # lazy: start-up
    from numerics.train.objective import noise_values  # lazy: start-up
    from numerics.train.step import chunk_fn, place  # lazy: start-up

    devices = devices or training_devices(cfg.batch)
    fn = chunk_fn(cfg, steps, devices)
    args = (place(init_state(cfg), devices), jnp.asarray(0, jnp.int32), noise_values(cfg))
    jax.block_until_ready(fn(*args))
    return lambda: jax.block_until_ready(fn(*args))


def throughput(cfgs: list, steps: int, reps: int = 3, devices: list | None = None) -> list[float]:  # noqa: ANN001
    """Steps/s of each config's compiled training chunk: the best of ``reps`` timed calls, the configs
    taking turns call by call, so that the shared machine's changing load hits them alike.
    ``devices[i]`` (a tuple, or None for training's default) is where config ``i`` runs."""
    devices = devices or [None] * len(cfgs)
    runs, best = [timer(c, steps, dv) for c, dv in zip(cfgs, devices)], [float("inf")] * len(cfgs)
    for _ in range(reps):  # best of reps: the minimum is the least disturbed
        for i, run in enumerate(runs):
            t = time.perf_counter()
            run()
            best[i] = min(best[i], time.perf_counter() - t)
    return [steps / b for b in best]


def time_to_quality(cfg, target: float) -> dict:  # noqa: ANN001

    from numerics.train.loop import adjusted_losses, train  # lazy: start-up
    from numerics.train.objective import effective_params  # lazy: start-up

    spent = {"eval": 0.0, "reached": None, "loss": None}
    t0 = time.perf_counter()

    def check(state, res) -> bool:  # noqa: ANN001
        t = time.perf_counter()
        # the model as trained so far (a FULL model in its DIAG phase is its DIAG projection)
        m, o = adjusted_losses(
            cfg, effective_params(cfg, state.params, int(state.step)), stream=2, sequences=16384
        )
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


def _check(args: argparse.Namespace) -> list[str]:
    """The model kinds, after one-line checks of every size argument."""
    from numerics.models import check_kind  # lazy: start-up

    for name in ("layers", "batch", "steps", "reps", "max_steps", "eval_sequences"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    kinds = [k.strip() for k in args.models.split(",") if k.strip()]
    if not kinds:
        raise ValueError(
            f"--models must name at least one of full, diag, gdpp, got {args.models!r}"
        )
    names = [check_kind(k) for k in kinds]
    twice = sorted({k for k in names if names.count(k) > 1})
    if twice:
        raise ValueError(
            f"--models names {', '.join(twice)} more than once, got {args.models!r}; name each kind once"
        )
    given = [
        f"--{k.replace('_', '-')} {getattr(args, k)}" for k in TTQ if getattr(args, k) is not None
    ]
    if given and not args.ttq:
        one = len(given) == 1
        raise ValueError(
            f"{' and '.join(given)} {'sets' if one else 'set'} the time-to-quality run; add --ttq, or "
            f"leave {'it' if one else 'them'} out"
        )
    return kinds


def ttq_option(args: argparse.Namespace, name: str):  # noqa: ANN201
    """A time-to-quality option as given, else its default (:data:`TTQ`)."""
    value = getattr(args, name)
    return TTQ[name] if value is None else value


def measure(args: argparse.Namespace, say=print) -> dict:  # noqa: ANN001
    """Every measurement of one ``lintf bench`` run as a dict; ``say`` gets each line as it is measured."""
    import jax  # lazy: start-up

    from numerics.train.loop import training_devices  # lazy: start-up

    kinds = _check(args)
    out: dict = {
        "devices": len(training_devices(args.batch)),
        "platform": jax.devices()[0].platform,
        ENV: os.environ.get(ENV),
        "matmul_gflops": matmul_gflops(),
        "throughput": [],
        "speedup": {},
        "speedup_vs_plain_one_device": {},
        "ttq": [],
    }
    say(
        f"devices: {out['devices']} x {out['platform']} ({ENV}={out[ENV] or 'unset'}); "
        f"dense matmul 1024x1024 float32 on one device: {out['matmul_gflops']:.1f} GFLOP/s"
    )
    for kind in kinds:
        measure_throughput(args, kind, out, say)
    if args.ttq:
        measure_ttq(args, kinds, out, say)
    env = f"{ENV}={shlex.quote(os.environ[ENV])} " if ENV in os.environ else ""
    out["reproduce"] = f"{env}python -m numerics.cli bench " + " ".join(
        shlex.quote(a) for a in args._argv[1:]
    )
    say(f"reproduce: {out['reproduce']}")
    return out


def measure_throughput(args: argparse.Namespace, kind: str, out: dict, say) -> None:  # noqa: ANN001
    """One kind's training throughput: the fast and plain passes on training's devices and, when
    those are several host devices, the plain pass on one device too; rows and speed-ups into
    ``out``."""
    from numerics.models import kind_of  # lazy: start-up
    from numerics.train.config import TrainConfig  # lazy: start-up
    from numerics.train.loop import training_devices  # lazy: start-up

    all_devices = training_devices(args.batch)
    # (forward, devices): the plain pass on one device is a plain jitted implementation (one XLA
    # device)
    runs = [("fast", all_devices)]
    if not args.no_plain:
        runs += [("plain", all_devices)] + (
            [("plain", all_devices[:1])] if len(all_devices) > 1 else []
        )
    # FULL's own phase (diag_steps=0): its DIAG phase runs the DIAG program (the DIAG line).  The plain pass is
    # the plain implementation: without step rejection (trust=0), whose check is an extra of the shipped step
    cfgs = [
        TrainConfig(
            model=kind,
            layers=args.layers,
            batch=args.batch,
            steps=10**6,
            forward=forward,
            diag_steps=0 if kind_of(kind).diag_phase else None,
            trust=TrainConfig.trust if forward == "fast" else 0.0,
        )
        for forward, _ in runs
    ]
    rates = throughput(cfgs, args.steps, args.reps, [dv for _, dv in runs])
    rows = []
    for (forward, dv), cfg, rate in zip(runs, cfgs, rates):
        flops = step_flops(cfg, dv)
        row = {
            "model": kind,
            "layers": args.layers,
            "forward": forward,
            "devices": len(dv),
            "batch": args.batch,
            "steps_per_s": rate,
            "sequences_per_s": rate * args.batch,
            "flop_per_step": flops,
            "gflops": rate * flops / 1e9 if flops else None,
        }
        rows.append(row)
        gf = f"{row['gflops']:.1f} GFLOP/s ({flops / 1e6:.0f} MFLOP/step)" if flops else "flops n/a"
        say(
            f"{kind_of(kind)!r}-{args.layers} {forward:5s} on {len(dv)} device{'s' * (len(dv) > 1)}, batch "
            f"{args.batch}: {rate:.2f} steps/s, {row['sequences_per_s']:.0f} sequences/s, {gf}"
        )
    out["throughput"] += rows
    if len(rows) > 1:
        out["speedup"][kind] = rows[0]["steps_per_s"] / rows[1]["steps_per_s"]
        say(
            f"{kind_of(kind)!r}-{args.layers} fast / plain, same {len(all_devices)} device(s), timed in turn: "
            f"{out['speedup'][kind]:.2f}x"
        )
    if len(rows) > 2:
        out["speedup_vs_plain_one_device"][kind] = rows[0]["steps_per_s"] / rows[2]["steps_per_s"]
        say(
            f"{kind_of(kind)!r}-{args.layers} training as shipped ({len(all_devices)} devices, fast pass) / plain "
            f"pass on one device, timed in turn: {out['speedup_vs_plain_one_device'][kind]:.2f}x"
        )


def measure_ttq(args: argparse.Namespace, kinds: list[str], out: dict, say) -> None:  # noqa: ANN001
    """Each kind's time to quality: the target is ``--target`` or TunedRR's adjusted loss on the
    same noise; rows into ``out``."""
    from numerics.models import kind_of  # lazy: start-up
    from numerics.train.config import TrainConfig  # lazy: start-up

    noise, sequences, max_steps = (
        ttq_option(args, k) for k in ("noise", "eval_sequences", "max_steps")
    )
    target, source = args.target, "--target"
    if target is None:
        from numerics.baselines import table  # lazy: start-up

        tr = table(noise, n=20, d=10, sequences=sequences, methods=("TunedRR",))["TunedRR"]
        target = tr["loss"]
        source = f"TunedRR {tr['loss']:.5f} ± {tr['se']:.5f} on {sequences} sequences"
    for kind in kinds:
        cfg = TrainConfig(
            model=kind,
            layers=args.layers,
            noise=noise,
            steps=max_steps,
            batch=args.batch,
            chunk=min(100, max_steps),
        )
        r = time_to_quality(cfg, target)
        row = {
            "model": kind,
            "layers": args.layers,
            "noise": noise,
            "target": target,
            "source": source,
            "reached": r["reached"] is not None,
            "step": r.get("step"),
            "train_s": r["reached"],
            "eval_s": r["eval"],
            "total_s": r["total"],
            "loss": r["loss"],
            "diag_phase_steps": cfg.phase1_steps,
        }
        out["ttq"].append(row)
        phase = f" (DIAG phase: first {cfg.phase1_steps} steps)" if cfg.phase1_steps else ""
        if r["reached"] is None:
            say(
                f"time-to-quality {kind_of(kind)!r}-{args.layers} {noise}: target {target:.5f} ({source}) "
                f"NOT reached in {max_steps} steps (last {r['loss']:.5f}, {r['total']:.0f} s)"
            )
        else:
            say(
                f"time-to-quality {kind_of(kind)!r}-{args.layers} {noise}: adjusted {r['loss']:.5f} <= "
                f"{target:.5f} ({source}) after {r['step']} steps, {r['reached']:.0f} s training "
                f"(+{r['eval']:.0f} s evaluation){phase}"
            )


def run(args: argparse.Namespace) -> int:
    from numerics.io import strict_json  # lazy: start-up

    if args.json:
        print(strict_json(measure(args, say=lambda line: None), indent=2))
    else:
        measure(args, say=lambda line: print(line, flush=True))
    return 0
