"""One runnable check per claim of the paper; ``python -m proofs`` (or ``lintf verify``) runs them all.

The public entry points are :func:`run` (the ``lintf verify`` command on parsed options), :func:`run_all`
(every claim, as results) and :func:`discover` (the claims).
"""

from proofs._check import Claim as Claim
from proofs._check import Report as Report
from proofs._check import Result as Result
from proofs._check import claim as claim
from proofs._runner import discover as discover
from proofs._runner import main as main
from proofs._runner import run as run
from proofs._runner import run_all as run_all
