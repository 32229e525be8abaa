r"""Reproduction of the paper's Table 1 and figures, as a pipeline of six concepts.

- *Cell* (:class:`numerics.reproduce.grid.Cell`): a model kind, a depth, a noise setting and a
  master seed (0), named like ``full-L4-categorical1_3``.
- *Start* (:func:`numerics.reproduce.grid.start_of`): decided when the grid is planned: the random
  start for every kind, FULL included (as in the paper), or for GD++ at σ_max = 0 the spectral fit
  at σ = 0, which depends on nothing trained.  No cell starts from another cell, so every cell can
  train as one task anywhere.
- *Schedule* (:class:`numerics.reproduce.grid.Schedule`): stages of a given length and batch; each
  later stage starts from the best so far, doubles the steps spent and halves the rate; a cap on
  their number; one stopping rule (:meth:`~numerics.reproduce.grid.Schedule.stop`).
- *Rules* (:data:`numerics.reproduce.rules.RULES`): every threshold and every PRNG stream
  (evaluation, profile, held-out, tail, scale fit, training data) in one frozen object.
- *Verdict* (:mod:`numerics.reproduce.verdict`): the evaluation on 100 000 fresh float64 sequences
  (every read-out, the paired gap to Bayes), the tail check, the GD++ spectral check, and the one
  failure rule with its pooled SE; for a cell that fails, the rescue (the scale fit on a larger
  pool).
- *Record* (:class:`numerics.reproduce.record.Record`): the finished cell, a frozen versioned
  dataclass in ``metrics.json``, read back by one reader that checks every number a table shows.

The path from ``lintf reproduce`` to one trained cell: :mod:`numerics.cli.reproduce` →
:mod:`numerics.reproduce.sweep` (the driver: the ``--out`` marker, tasks, writing files) →
:mod:`numerics.reproduce.cell` (:func:`~numerics.reproduce.cell.train_cell`, pure with respect to
``--out``) → :mod:`numerics.train.rundir` (one stage).  Around it: Table 1
(:mod:`numerics.reproduce.table`), the claims (:mod:`numerics.reproduce.claims`), GD++ against
ridge at λ = E σ² (:mod:`numerics.reproduce.floor`), the report
(:mod:`numerics.reproduce.report`), the figures (:mod:`numerics.reproduce.plots`), the
beyond-the-paper depth study (:mod:`numerics.reproduce.beyond`), the claims on a grid under way
(:mod:`numerics.reproduce.reads`) and the convergence check, which reports and changes no cell
(:mod:`numerics.reproduce.convergence`).

The scale fit of every stage (:mod:`numerics.train.scale_fit`) answers the rare exploding context;
a cell that fails its verdict all the same is rescued where the fit on a larger pool finds a scale
that passes (:func:`numerics.reproduce.verdict.rescue`), and is otherwise recorded as failed.

Each name is imported from the module that defines it; the package itself imports nothing.
"""
