r"""In-context linear-regression data with a per-sequence noise level (docs/model.md).

For each sequence ``τ``: ``w_τ ~ N(0, I_d)``, ``σ_τ`` from the noise distribution,
``x_i ~ N(0, I_d)``, ``y_i = ⟨w_τ, x_i⟩ + ξ_i`` with ``ξ_i ~ N(0, σ_τ²)``, and a query
``x_t ~ N(0, I_d)`` with the **noiseless** target ``y_t = ⟨w_τ, x_t⟩``.

Noise specs (command line): ``fixed:1.5``, ``uniform:5`` (``σ ~ U(0, 5)``), ``categorical:1,3,5``
(``σ`` uniform on the set).  Input distributions (:class:`XDist`): ``normal`` (the paper's
``N(0, I_d)``, the default) or ``uniform:a,b`` (every coordinate of ``x_i`` and ``x_t`` ``~ U(a, b)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

NoiseKind = Literal["fixed", "uniform", "categorical"]

#: The ten noise settings of the paper's Table 1: ``uniform:0..7`` and two categorical sets.
PAPER_NOISES: tuple[str, ...] = tuple(f"uniform:{k}" for k in range(8)) + (
    "categorical:1,3",
    "categorical:1,3,5",
)


def level(v: float) -> str:
    """The shortest spelling of ``v`` that reads back as ``v`` (``repr``), without a trailing ``.0``: ``5``, ``2.5``,
    ``2.71828182``, ``1e-07``; a setting's label names its levels exactly."""
    text = repr(float(v))
    return text[:-2] if text.endswith(".0") else text


@dataclass(frozen=True)
class Noise:
    """A distribution of the per-sequence noise level ``σ_τ``; validated where it is built."""

    kind: NoiseKind
    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if self.kind not in ("fixed", "uniform", "categorical"):
            raise ValueError(f"noise kind must be fixed, uniform or categorical, got {self.kind!r}")
        if not self.values:
            raise ValueError(f"noise {self.kind} needs at least one value")
        if self.kind != "categorical" and len(self.values) != 1:
            raise ValueError(f"noise {self.kind} takes one value, got {len(self.values)}")
        for v in self.values:
            if not np.isfinite(v) or v < 0:
                raise ValueError(f"noise level sigma must be finite and >= 0, got {v}")
        # -0.0 passes the check above; + 0.0 makes it 0.0, so that fixed:-0 is fixed:0, in labels and file names too
        object.__setattr__(self, "values", tuple(float(v) + 0.0 for v in self.values))

    @classmethod
    def parse(cls, spec: str | Noise) -> Noise:
        """Parse ``fixed:S``, ``uniform:SMAX`` or ``categorical:S1,S2,...``."""
        if isinstance(spec, Noise):
            return spec
        kind, sep, rest = str(spec).strip().partition(":")
        usage = "noise spec must be fixed:SIGMA, uniform:SIGMA_MAX or categorical:S1,S2,..."
        if not sep or kind not in ("fixed", "uniform", "categorical"):
            raise ValueError(f"{usage}; got {spec!r}")
        try:
            values = tuple(float(v) for v in rest.split(","))
        except ValueError:
            raise ValueError(f"{usage}; got {spec!r}") from None
        return cls(kind, values)  # type: ignore[arg-type]

    def __str__(self) -> str:
        return f"{self.kind}:" + ",".join(level(v) for v in self.values)

    @property
    def sigma_max(self) -> float:
        """Largest noise level the distribution can produce."""
        return max(self.values)

    @property
    def mean_sigma2(self) -> float:
        r"""``E σ²``: ``σ²`` (fixed), ``σ_max²/3`` (uniform), mean of ``σ_k²`` (categorical)."""
        return float(self.mean_sigma2_of(np.asarray(self.values)))

    def mean_sigma2_of(self, values: Any) -> Any:
        """:attr:`mean_sigma2` for levels ``values`` of this kind (a numpy or a traced JAX array, as in
        :meth:`sample_sigma`'s override)."""
        if self.kind == "uniform":
            return values[0] ** 2 / 3
        return (values**2).mean()

    def sample_sigma(
        self, key: jax.Array, batch: int, dtype=jnp.float32, values: jax.Array | None = None
    ) -> jax.Array:
        """Draw ``σ_τ`` for ``batch`` sequences.  ``values`` (traced, same length) replaces ``self.values``,
        so one compiled program serves every setting of a kind (the same numbers as the constants)."""
        v = jnp.asarray(self.values if values is None else values, dtype=dtype)
        if self.kind == "fixed":
            return jnp.full((batch,), v[0], dtype=dtype)
        if self.kind == "uniform":
            return jax.random.uniform(key, (batch,), dtype=dtype, maxval=v[0])
        return v[jax.random.randint(key, (batch,), 0, v.shape[0])]


#: Largest ``|a|, |b|`` of ``uniform:a,b`` inputs: the tokens' products and the ``n``-term sums of them stay far from
#: float32's overflow.
X_MAX = 1e6
#: Least ``max(|a|, |b|)`` of ``uniform:a,b`` inputs.  The Gram matrix ``Σ x xᵀ`` of inputs below about 1e-154 underflows
#: float64 (its entries fall under 2.2e-308) and OLS, ridge and the model lose the data; at 1e-100 they are about 1e-200.
X_MIN = 1e-100


@dataclass(frozen=True)
class XDist:
    """The distribution of the inputs ``x_i`` and of the query ``x_t``: ``normal`` or ``uniform`` on ``[low, high]``."""

    kind: Literal["normal", "uniform"] = "normal"
    low: float = 0.0
    high: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in ("normal", "uniform"):
            raise ValueError(f"input distribution must be normal or uniform:a,b, got {self.kind!r}")
        if self.kind == "uniform" and not (-X_MAX <= self.low < self.high <= X_MAX):
            raise ValueError(
                f"uniform:a,b needs a < b within [-{X_MAX:g}, {X_MAX:g}], got a={self.low}, b={self.high}"
            )
        if self.kind == "uniform" and max(abs(self.low), abs(self.high)) < X_MIN:
            raise ValueError(
                f"uniform:a,b needs max(|a|, |b|) >= {X_MIN:g} (smaller inputs' products underflow), "
                f"got a={self.low}, b={self.high}"
            )
        object.__setattr__(self, "low", float(self.low) + 0.0)  # -0 is 0, as for a noise level
        object.__setattr__(self, "high", float(self.high) + 0.0)

    @classmethod
    def parse(cls, spec: str | XDist) -> XDist:
        """Parse ``normal`` or ``uniform:a,b``."""
        if isinstance(spec, XDist):
            return spec
        text = str(spec).strip()
        if text == "normal":
            return cls()
        kind, sep, rest = text.partition(":")
        parts = rest.split(",")
        usage = "input distribution must be normal or uniform:a,b (e.g. uniform:-0.5,0.5)"
        if kind != "uniform" or not sep or len(parts) != 2:
            raise ValueError(f"{usage}; got {spec!r}")
        try:
            low, high = float(parts[0]), float(parts[1])
        except ValueError:
            raise ValueError(f"{usage}; got {spec!r}") from None
        return cls("uniform", low, high)

    def __str__(self) -> str:
        return (
            "normal" if self.kind == "normal" else f"uniform:{level(self.low)},{level(self.high)}"
        )

    def draw(self, key: jax.Array, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
        if self.kind == "normal":
            return normal(key, shape, dtype)
        return jax.random.uniform(key, shape, dtype, minval=self.low, maxval=self.high)


NORMAL_X = XDist()


class Batch(NamedTuple):
    """A batch of sequences: ``X (B,n,d)``, ``y (B,n)``, ``x_query (B,d)``, ``y_query (B,)``,
    the true ``sigma (B,)`` and weight ``w (B,d)``."""

    X: jax.Array
    y: jax.Array
    x_query: jax.Array
    y_query: jax.Array
    sigma: jax.Array
    w: jax.Array


def check_sizes(n: int, d: int, batch: int = 1) -> None:
    """One-line errors for impossible sizes."""
    if int(d) < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    if int(n) < 1:
        raise ValueError(f"n (context length) must be >= 1, got {n}")
    if int(batch) < 1:
        raise ValueError(f"batch / number of sequences must be >= 1, got {batch}")


def normal(key: jax.Array, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
    """``jax.random.normal(key, shape, dtype)``, drawn flat and reshaped: the same numbers (the default
    partitionable Threefry counts over the flattened index; ``tests/models/test_forward.py`` checks it),
    about 3x faster on XLA CPU for a 3-D shape such as ``(B, n, d)``."""
    size = int(np.prod(shape, dtype=np.int64))
    return jax.random.normal(key, (size,), dtype).reshape(shape)


@partial(jax.jit, static_argnames=("n", "d", "dtype", "x"))
def sample_with_sigma(
    key: jax.Array, sigma: jax.Array, n: int, d: int, dtype=jnp.float32, x: XDist = NORMAL_X
) -> Batch:
    """Sequences with given per-sequence noise levels ``sigma (B,)`` (used for per-variance profiles)."""
    B = sigma.shape[0]
    kw, kx, kq, ke = jax.random.split(key, 4)
    w = normal(kw, (B, d), dtype)
    X = x.draw(kx, (B, n, d), dtype)
    xq = x.draw(kq, (B, d), dtype)
    xi = normal(ke, (B, n), dtype) * sigma.astype(dtype)[:, None]
    y = jnp.einsum("bnd,bd->bn", X, w) + xi
    return Batch(X, y, xq, jnp.einsum("bd,bd->b", xq, w), sigma.astype(dtype), w)


def sample(
    key: jax.Array,
    noise: Noise | str,
    batch: int,
    n: int,
    d: int,
    dtype=jnp.float32,
    x: XDist | str = NORMAL_X,
) -> Batch:
    """Draw ``batch`` sequences of context length ``n`` in dimension ``d``, inputs from ``x``; deterministic by ``key``."""
    noise, x = Noise.parse(noise), XDist.parse(x)
    check_sizes(n, d, batch)
    ks, kd = jax.random.split(key)
    return sample_with_sigma(kd, noise.sample_sigma(ks, batch, dtype), n, d, dtype, x)
