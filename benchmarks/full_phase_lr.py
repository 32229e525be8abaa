r"""FULL-7 after a DIAG start: which peak rate for the FULL phase (an analysis, not a test).

Trains DIAG-7 at ``uniform:5`` (2000 steps, 2 seeds, the default recipe), embeds both seeds in FULL
``(P, Q)`` plus a ``N(0, 1e-3²)`` start of every entry, and trains all entries for 1000 more steps at
peak rates ``1e-4, 3e-4, 5e-4`` (warm-up + cosine).  Prints the adjusted loss of each seed on 16 384
held-out sequences (the same sequences for every line, so differences are paired).  Output of the run
that set FULL's default peak rate, ``Kind.default_lr`` = 1e-4 (2 shared cores, load ~3, ~15 min)::

    diag [0.0599 0.0524]
    full 0.0001 [0.0602 0.0542]
    full 0.0003 [0.0609 0.0558]
    full 0.0005 [0.0621 0.0567]   (this line: an earlier run without the 1e-3 start)

The FULL phase only adds batch noise in its 1694 extra directions: the lowest rate loses least.

    python benchmarks/full_phase_lr.py
"""
import argparse
import sys
import time
from pathlib import Path

# no options: the parser gives --help (the docstring) and refuses anything else, before the 15-minute run starts
argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from numerics.train import devices as hostdevices  # noqa: E402

hostdevices.configure()  # as the lintf command: one host device per core, before JAX loads
import jax  # noqa: E402

from numerics.models import Full, universal  # noqa: E402
from numerics.train import TrainConfig, adjusted_losses, init_state, optimizer, train  # noqa: E402

t0 = time.time()
c1 = TrainConfig(model="diag", layers=7, noise="uniform:5", steps=2000, seeds=2)
r1 = train(c1)
m, o = adjusted_losses(c1, r1.state.params, 3, 16384)
print("diag", (m - o).mean(1), f"{time.time() - t0:.0f} s", flush=True)
P, Q = jax.vmap(lambda p: universal(p, 10))(r1.state.params)
for lr2 in (1e-4, 3e-4, 5e-4):
    c2 = TrainConfig(model="full", layers=7, noise="uniform:5", steps=1000, seeds=2, lr=lr2, diag_steps=0)
    st = init_state(c2)
    st = st._replace(params=Full(P + st.params.P, Q + st.params.Q))
    st = st._replace(opt_state=jax.vmap(optimizer(c2).init)(st.params))
    r2 = train(c2, resume={"leaves": jax.tree_util.tree_leaves(st), "curve": [], "rollbacks": []})
    m, o = adjusted_losses(c2, r2.state.params, 3, 16384)
    print("full", lr2, (m - o).mean(1), "rollbacks", r2.rollbacks, "skipped", r2.skipped,
          f"{time.time() - t0:.0f} s", flush=True)
print("reproduce: python benchmarks/full_phase_lr.py")
