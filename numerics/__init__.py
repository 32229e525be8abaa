"""JAX numerics: data, models, constructions, baselines, training, evaluation and figures."""
