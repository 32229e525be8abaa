r"""Where one sweep process spends its time, phase by phase: ``lintf reproduce`` run in this process with the
functions behind each phase wrapped in a timer.  A phase called inside another of the same name counts once;
phases nest otherwise (the Fig. 5 replicas train in stages, so ``train_stages`` includes their training too).

    LINTF_HOST_DEVICES=1 python benchmarks/sweep_phases.py --budget quick --out /tmp/p/out --runs /tmp/p/runs \
        --noise uniform:5

Every argument goes to ``lintf reproduce``; the table goes to standard output after the sweep's own lines.
"""

from __future__ import annotations

import collections
import functools
import sys
import time
from typing import Any

from numerics.train import devices

devices.configure()  # as the lintf command does, before JAX is imported
devices.full_precision()

from numerics.evaluate import losses  # noqa: E402
from numerics.reproduce import experiments, judge  # noqa: E402
from numerics.train import continuation  # noqa: E402

#: (module, function, phase): what is timed.
PHASES = ((experiments, "train_stages", "training in stages"),
          (continuation, "scaled_model", "scale fit after a stage"),
          (continuation, "held_out_losses", "held-out losses after a stage"),
          (judge, "evaluate_model", "evaluation"),
          (judge, "profile_model", "per-σ profile"),
          (losses, "tail_check", "tail check"),
          (judge, "spectral_check", "spectral check"),
          (experiments, "rescue", "rescue"),
          (experiments, "seed_replicas", "Fig. 5 replicas"),
          (experiments, "baseline_results", "baselines"))


def timed(seconds: collections.Counter, calls: collections.Counter) -> None:
    """Wrap every function of :data:`PHASES` so that it adds its time to ``seconds`` and its calls to ``calls``."""
    running: list[str] = []

    def wrap(f: Any, phase: str) -> Any:
        @functools.wraps(f)
        def g(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            running.append(phase)
            try:
                return f(*a, **k)
            finally:
                running.pop()
                if phase not in running:
                    seconds[phase] += time.perf_counter() - t
                    calls[phase] += 1
        return g

    for module, name, phase in PHASES:
        setattr(module, name, wrap(getattr(module, name), phase))


def main(argv: list[str]) -> int:
    from numerics.cli import main as lintf

    seconds: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()
    timed(seconds, calls)
    t = time.perf_counter()
    rc = lintf(["reproduce", *argv])
    print(f"\n| phase | calls | seconds |\n|---|--:|--:|\n| whole run | 1 | {time.perf_counter() - t:.0f} |")
    for phase, s in seconds.most_common():
        print(f"| {phase} | {calls[phase]} | {s:.0f} |")
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
