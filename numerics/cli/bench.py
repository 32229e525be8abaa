r"""``lintf bench``: training throughput, achieved GFLOP/s, the machine's matmul GFLOP/s and
time-to-quality, printed line by line or as one JSON object.

The measurements and how they are taken are :mod:`numerics.bench`; this module holds the options,
their checks, and the lines it prints.  The time-to-quality target is ``--target``, or TunedRR's
adjusted loss from :func:`numerics.baselines.table` at the same noise (``--eval-sequences``, default
100 000).
"""

from __future__ import annotations

import argparse
import os
import shlex

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
    """Every measurement of one ``lintf bench`` run as a dict; ``say`` gets each line as it is
    measured."""
    kinds = _check(args)  # every argument, before any measurement
    from numerics import bench  # lazy: start-up

    out: dict = {
        "devices": len(bench.training_devices(args.batch)),
        "platform": bench.jax.devices()[0].platform,
        ENV: os.environ.get(ENV),
        "matmul_gflops": bench.matmul_gflops(),
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
        rows = bench.throughput_rows(
            kind, args.layers, args.batch, args.steps, args.reps, plain=not args.no_plain
        )
        out["throughput"] += rows
        _say_throughput(f"{bench.kind_of(kind)!r}-{args.layers}", rows, out, say)
    if args.ttq:
        measure_ttq(args, kinds, out, say)
    env = f"{ENV}={shlex.quote(os.environ[ENV])} " if ENV in os.environ else ""
    out["reproduce"] = f"{env}python -m numerics.cli bench " + " ".join(
        shlex.quote(a) for a in args._argv[1:]
    )
    say(f"reproduce: {out['reproduce']}")
    return out


def _say_throughput(name: str, rows: list[dict], out: dict, say) -> None:  # noqa: ANN001
    """The lines of one kind's throughput rows (:func:`numerics.bench.throughput_rows`), ``name``
    such as ``DIAG-7``, and its speed-ups into ``out``: the fast pass over the plain one on the
    same devices, and over the plain pass on one device."""
    for row in rows:
        flops, n = row["flop_per_step"], row["devices"]
        gf = f"{row['gflops']:.1f} GFLOP/s ({flops / 1e6:.0f} MFLOP/step)" if flops else "flops n/a"
        say(
            f"{name} {row['forward']:5s} on {n} device{'s' * (n > 1)}, batch {row['batch']}: "
            f"{row['steps_per_s']:.2f} steps/s, {row['sequences_per_s']:.0f} sequences/s, {gf}"
        )
    kind, rate = rows[0]["model"], rows[0]["steps_per_s"]
    if len(rows) > 1:
        out["speedup"][kind] = rate / rows[1]["steps_per_s"]
        say(
            f"{name} fast / plain, same {rows[0]['devices']} device(s), timed in turn: "
            f"{out['speedup'][kind]:.2f}x"
        )
    if len(rows) > 2:
        out["speedup_vs_plain_one_device"][kind] = rate / rows[2]["steps_per_s"]
        say(
            f"{name} training as shipped ({rows[0]['devices']} devices, fast pass) / plain pass on "
            f"one device, timed in turn: {out['speedup_vs_plain_one_device'][kind]:.2f}x"
        )


def measure_ttq(args: argparse.Namespace, kinds: list[str], out: dict, say) -> None:  # noqa: ANN001
    """Each kind's time to quality (:func:`numerics.bench.time_to_quality`): the target is
    ``--target`` or TunedRR's adjusted loss on the same noise; rows into ``out``."""
    from numerics import bench  # lazy: start-up

    noise, sequences, max_steps = (
        ttq_option(args, k) for k in ("noise", "eval_sequences", "max_steps")
    )
    target, source = args.target, "--target"
    if target is None:
        target, source = bench.tunedrr_target(noise, sequences)
    for kind in kinds:
        cfg = bench.TrainConfig(
            model=kind,
            layers=args.layers,
            noise=noise,
            steps=max_steps,
            batch=args.batch,
            chunk=min(100, max_steps),
        )
        r = bench.time_to_quality(cfg, target)
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
        name = f"{bench.kind_of(kind)!r}-{args.layers}"
        phase = f" (DIAG phase: first {cfg.phase1_steps} steps)" if cfg.phase1_steps else ""
        if r["reached"] is None:
            say(
                f"time-to-quality {name} {noise}: target {target:.5f} ({source}) NOT reached in "
                f"{max_steps} steps (last {r['loss']:.5f}, {r['total']:.0f} s)"
            )
        else:
            say(
                f"time-to-quality {name} {noise}: adjusted {r['loss']:.5f} <= {target:.5f} "
                f"({source}) after {r['step']} steps, {r['reached']:.0f} s training "
                f"(+{r['eval']:.0f} s evaluation){phase}"
            )


def run(args: argparse.Namespace) -> int:
    from numerics.io import strict_json  # lazy: start-up

    if args.json:
        print(strict_json(measure(args, say=lambda line: None), indent=2))
    else:
        measure(args, say=lambda line: print(line, flush=True))
    return 0
