"""Training FULL / DIAG / GD++ linear transformers: scanned, vmapped over seeds, sharded, resumable.

:mod:`numerics.train.config` (the configuration, JAX-free), :mod:`numerics.train.objective`
(batches and the loss), :mod:`numerics.train.schedule` (the learning-rate schedule),
:mod:`numerics.train.step` (the compiled step and its guards), :mod:`numerics.train.loop`
(:func:`numerics.train.loop.train`), :mod:`numerics.train.rundir` (run directories),
:mod:`numerics.train.results` (a finished run's metrics, model and plot),
:mod:`numerics.train.devices` (host devices) and :mod:`numerics.train.scale_fit` (the scale fit of
a trained model).  What each choice does and why: docs/training.md.

Each name is imported from the module that defines it; the package itself imports nothing, so that
``numerics.train.config`` and ``numerics.train.devices`` import without JAX (the command line
builds its parser, and sets the host devices, before JAX loads).
"""
