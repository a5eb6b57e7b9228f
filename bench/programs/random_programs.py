"""Random JAX programs for differential testing: the same seed gives the same program.

``random_program(seed)`` returns a :class:`Program`: a function of a few float arrays, its example
arguments and the list of features it uses. It is a chain of 2-5 blocks drawn from a menu that
covers what XLA's layout assignment meets in practice:

- ``elementwise``: unary functions (including ones with restricted domains: ``log``, ``sqrt``,
  ``rsqrt``, ``pow``) and binary arithmetic with broadcasting;
- ``matmul``: ``einsum`` with transposed operands, batch dims and ``dot_general``;
- ``reduce``: sums, maxima and means over random axes, ``argmax``, ``cumsum``;
- ``reshape``: transposes, reshapes, slices, ``pad``, ``concatenate``, ``reverse``;
- ``cond``, ``fori`` (a ``fori_loop`` with a dot inside), ``scan``;
- ``linalg``: Cholesky, QR, ``solve``, SVD, ``eigh`` (LAPACK custom-calls on CPU);
- ``top_k``; ``rng`` (``jax.random`` with the ``rbg`` generator: ``rng-bit-generator``);
- ``remat``: the gradient of a ``jax.checkpoint``-ed block;
- ``bf16``: a block computed in bf16 with f32 accumulation (mixed precision).

Shapes are small (sides 2-12) so that hundreds of programs run in minutes in the interpreter.
jax is imported by the builders, not at import time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

FEATURES = ("elementwise", "matmul", "reduce", "reshape", "cond", "fori", "scan", "linalg", "top_k",
            "rng", "remat", "bf16")


@dataclass(frozen=True)
class Program:
    name: str
    function: Callable[..., Any]
    args: tuple[np.ndarray, ...]
    features: tuple[str, ...]


def random_program(seed: int) -> Program:
    """The program of ``seed`` (deterministic)."""
    rng = np.random.default_rng(seed)
    rows, cols = (int(v) for v in rng.integers(2, 13, size=2))
    args = (rng.standard_normal((rows, cols)).astype(np.float32),
            rng.standard_normal((cols, rows)).astype(np.float32))
    blocks = [str(rng.choice(FEATURES)) for _ in range(int(rng.integers(2, 6)))]
    builders = [(name, _BLOCKS[name](rng)) for name in blocks]

    def program(x, y):
        import jax.numpy as jnp

        state = x
        for _, block in builders:
            state = block(state, y).astype(jnp.float32)
            if state.size >= rows * cols:
                state = jnp.reshape(state, (-1,))[: rows * cols].reshape(rows, cols)
            else:
                state = jnp.resize(state, (rows, cols))
            # Keeps values in range however many blocks follow, without saturating to exact ties.
            state = state / (1 + jnp.abs(state))
        return state, state.sum()

    return Program(f"random_{seed}", program, args, tuple(blocks))


# ---------------------------------------------------------------------------
# Blocks: each maps (state [r, c] float32, y [c, r]) to an array with at least r*c elements or any
# array that ``jnp.resize`` brings back to [r, c].
# ---------------------------------------------------------------------------


def _elementwise(rng):
    unary = ["tanh", "exp_small", "log", "sqrt", "rsqrt", "sin", "abs", "square", "logistic", "pow"]
    chosen = [str(u) for u in rng.choice(unary, size=3)]
    scale = float(rng.uniform(0.5, 2.0))

    def block(s, y):
        import jax
        import jax.numpy as jnp

        for u in chosen:
            s = {
                # Domains kept by the program itself (parameters are drawn inside them anyway).
                "tanh": jnp.tanh, "exp_small": lambda v: jnp.exp(0.1 * v), "log": lambda v: jnp.log(jnp.abs(v) + 0.5),
                "sqrt": lambda v: jnp.sqrt(jnp.abs(v)), "rsqrt": lambda v: jax.lax.rsqrt(jnp.abs(v) + 0.5), "sin": jnp.sin, "abs": jnp.abs,
                "square": jnp.square, "logistic": jax.nn.sigmoid, "pow": lambda v: jnp.power(jnp.abs(v) + 1, 1.5),
            }[u](s)
        return s * scale + y.T.mean(0)

    return block


def _matmul(rng):
    kind = int(rng.integers(0, 3))

    def block(s, y):
        import jax.numpy as jnp

        if kind == 0:
            return jnp.einsum("ij,jk->ik", s, y) @ s
        if kind == 1:
            return jnp.einsum("ij,kj->ik", s, y.T)
        b = jnp.stack([s, s * 2])
        return jnp.einsum("bij,bkj->bik", b, b).sum(0) @ s

    return block


def _reduce(rng):
    kind = int(rng.integers(0, 4))

    def block(s, y):
        import jax.numpy as jnp

        if kind == 0:
            return s - s.sum(0, keepdims=True) / s.shape[0]
        if kind == 1:
            return s / (jnp.max(jnp.abs(s), axis=1, keepdims=True) + 1)
        if kind == 2:
            return s + jnp.argmax(s, axis=0).astype(s.dtype)[None, :]
        return jnp.cumsum(s, axis=1)

    return block


def _reshape(rng):
    kind = int(rng.integers(0, 4))

    def block(s, y):
        import jax.numpy as jnp

        r, c = s.shape
        if kind == 0:
            return jnp.transpose(jnp.reshape(s, (r, c, 1)), (2, 1, 0)).reshape(c, r).T
        if kind == 1:
            return jnp.concatenate([s[:, ::-1], y.T], axis=0)
        if kind == 2:
            return jnp.pad(s, ((1, 0), (0, 2)))[1:, :c] + s[::-1]
        return jnp.flip(s.T, 0).T * 2

    return block


def _cond(rng):
    def block(s, y):
        import jax

        # Not s.sum() > 0: after a centering block that sum is zero in exact arithmetic, and the
        # branch would be decided by rounding.
        return jax.lax.cond(s.mean() > 0.05, lambda a: a @ a.T @ a, lambda a: -a, s)

    return block


def _fori(rng):
    steps = int(rng.integers(1, 4))

    def block(s, y):
        import jax
        import jax.numpy as jnp

        return jax.lax.fori_loop(0, steps, lambda i, a: jnp.tanh(a @ y @ a * 0.1) + a, s)

    return block


def _scan(rng):
    def block(s, y):
        import jax
        import jax.numpy as jnp

        def step(carry, row):
            carry = jnp.tanh(carry * 0.5 + row)
            return carry, carry * 2

        _, rows = jax.lax.scan(step, jnp.zeros(s.shape[1], s.dtype), s)
        return rows

    return block


def _linalg(rng):
    kind = int(rng.integers(0, 5))

    def block(s, y):
        import jax.numpy as jnp

        n = min(s.shape)
        a = s[:n, :n]
        spd = a @ a.T + n * jnp.eye(n, dtype=s.dtype)
        if kind == 0:
            out = jnp.linalg.cholesky(spd)
        elif kind == 1:
            q, r = jnp.linalg.qr(s)
            out = q @ r
        elif kind == 2:
            out = jnp.linalg.solve(spd, a)
        elif kind == 3:
            out = jnp.linalg.svd(a, compute_uv=False)[None, :] * a
        else:
            out = jnp.linalg.eigh(spd)[0][None, :] * a
        return jnp.resize(out, s.shape) + s

    return block


def _top_k(rng):
    def block(s, y):
        import jax
        import jax.numpy as jnp

        k = max(1, s.shape[1] // 2)
        values, indices = jax.lax.top_k(s, k)
        return jnp.concatenate([values, indices.astype(s.dtype), s], axis=1)

    return block


def _rng(rng):
    seed = int(rng.integers(0, 2**16))

    def block(s, y):
        import jax

        key = jax.random.key(seed, impl="rbg")
        return s + 0.1 * jax.random.normal(key, s.shape, s.dtype)

    return block


def _remat(rng):
    def block(s, y):
        import jax
        import jax.numpy as jnp

        inner = jax.checkpoint(lambda a: jnp.sum(jnp.tanh(a @ y) ** 2))
        return jax.grad(inner)(s)

    return block


def _bf16(rng):
    def block(s, y):
        import jax
        import jax.numpy as jnp

        a, b = s.astype(jnp.bfloat16), y.astype(jnp.bfloat16)
        h = jax.lax.dot(a, b, preferred_element_type=jnp.float32)
        return (jnp.tanh(h.astype(jnp.bfloat16)) * a[:, :1]).astype(jnp.float32) @ s

    return block


_BLOCKS: dict[str, Callable[[np.random.Generator], Callable[..., Any]]] = {
    "elementwise": _elementwise, "matmul": _matmul, "reduce": _reduce, "reshape": _reshape,
    "cond": _cond, "fori": _fori, "scan": _scan, "linalg": _linalg, "top_k": _top_k, "rng": _rng,
    "remat": _remat, "bf16": _bf16,
}
