"""One runnable check per claim of the paper; ``python -m proofs`` runs them all."""
