"""One runnable check per claim of the paper; ``python -m proofs`` (or ``lintf verify``) runs them all.

The public entry points are :func:`run` (the ``lintf verify`` command on parsed options), :func:`run_all`
(every claim, as results) and :func:`discover` (the claims); :data:`REGISTRY` holds the registered claims;
:func:`ref_parts` is what ``--only`` matches of a claim's paper ref.
The exact-arithmetic helpers the scripts share are public too, for tests that check the scripts' routes:
:func:`state_matrix` (a token state ``[[M, u], [-wᵀ, a]]``), :func:`rational_array` (random rationals from a
:class:`random.Random`) and :class:`Context` (one exact context of the DIAG checks).
"""

from proofs._check import REGISTRY as REGISTRY
from proofs._check import Claim as Claim
from proofs._check import Report as Report
from proofs._check import Result as Result
from proofs._check import claim as claim
from proofs._diag_data import Context as Context
from proofs._exact import rational_array as rational_array
from proofs._exact import state_matrix as state_matrix
from proofs._runner import discover as discover
from proofs._runner import main as main
from proofs._runner import ref_parts as ref_parts
from proofs._runner import run as run
from proofs._runner import run_all as run_all
