"""Evaluation: the adjusted loss with paired standard errors, profiles and tail checks
(:mod:`numerics.evaluate.losses`), the per-layer implicit weights of a model (:mod:`numerics.evaluate.inspector`);
the check of one's own model against the theory is the testing kit, :mod:`numerics.testing`."""

from numerics.evaluate import losses as losses
from numerics.evaluate.losses import adjusted_per_sequence as adjusted_per_sequence
from numerics.evaluate.losses import evaluate as evaluate
from numerics.evaluate.losses import oracle_predict as oracle_predict
from numerics.evaluate.losses import per_sequence_loss as per_sequence_loss
from numerics.evaluate.losses import profile as profile
from numerics.evaluate.losses import tail_check as tail_check
from numerics.evaluate.losses import tail_stats as tail_stats
from numerics.evaluate import inspector as inspector
from numerics.evaluate.inspector import inspect as inspect
from numerics.evaluate.inspector import summary as summary
