"""JAX programs of the kinds on which verification once failed with XLA's correct answers.

Each one is written from its description, not from the modules that failed: a batch-norm backward
pass whose gradients cancel to nearly zero, bf16 training with rematerialization, a NaN where a
random input leaves a function's domain, a dot inside a while loop, SVD (both LAPACK drivers),
``top_k``, and ``rng-bit-generator`` (all three algorithms). Each contains a non-commutative
elementwise op, so a break can be planted into it (:mod:`bench.planted_breaks`).

``motivating_cases()`` returns :class:`bench.programs.random_programs.Program` values; jax is
imported when a program is traced, not at import time.
"""

from __future__ import annotations

import numpy as np

from bench.programs.random_programs import Program


def _batch_norm_backward(x, g, gamma):
    import jax
    import jax.numpy as jnp

    def loss(x, gamma, beta):
        mean = x.mean(0)
        var = ((x - mean) ** 2).mean(0)
        y = (x - mean) / jnp.sqrt(var + 1e-5) * gamma + beta
        return (y * g).sum()

    # d/dbeta = sum(g) and d/dx: sums of centered values, nearly zero in exact arithmetic.
    dx, dgamma, dbeta = jax.grad(loss, argnums=(0, 1, 2))(x, gamma, jnp.zeros_like(gamma))
    return dx, dgamma, dbeta - g.sum(0)


def _bf16_training_step_with_remat(w1, w2, x, t):
    import jax
    import jax.numpy as jnp

    def layer(w, h):
        return jnp.tanh(h @ w)

    def loss(w1, w2):
        h = jax.checkpoint(layer)(w1.astype(jnp.bfloat16), x.astype(jnp.bfloat16))
        out = jax.checkpoint(layer)(w2.astype(jnp.bfloat16), h)
        return ((out.astype(jnp.float32) - t) ** 2).mean()

    g1, g2 = jax.grad(loss, argnums=(0, 1))(w1, w2)
    return w1 - 0.1 * g1, w2 - 0.1 * g2


def _nan_outside_the_domain(x, y):
    import jax.numpy as jnp

    # x is drawn in (0, 1) (it feeds a log): log(x - 0.5) and arcsin(2x - 1.5) are NaN for part of it.
    return jnp.log(x - 0.5) + y, jnp.arcsin(2 * x - 1.5) / (1 + y * y)


def _dot_in_a_while_loop(a, v):
    import jax
    import jax.numpy as jnp

    def body(i, state):
        m, u = state
        s = jnp.dot(u, u)  # a vector-vector dot: a rank-0 result inside the loop
        u = jnp.tanh(m @ u) - u / (1 + s)
        return m * 0.9, u

    return jax.lax.fori_loop(0, 5, body, (a, v))


def _svd(a):
    import jax.numpy as jnp
    from jax.lax import linalg

    u, s, vt = jnp.linalg.svd(a, full_matrices=False)  # gesdd
    u2, s2, vt2 = linalg.svd(a, full_matrices=False, algorithm=linalg.SvdAlgorithm.QR)  # gesvd
    rebuilt = (u * s) @ vt
    return rebuilt - a / (1 + s.sum()), jnp.abs(u2 @ vt2).sum(0) - s2


def _top_k(x):
    import jax
    import jax.numpy as jnp

    values, indices = jax.lax.top_k(x, 5)
    return values - values.mean(1, keepdims=True), indices, jnp.take_along_axis(x, indices, 1)


def _rng_bit_generator(x):
    import jax
    import jax.numpy as jnp

    outs = []
    for algorithm in (jax.lax.RandomAlgorithm.RNG_DEFAULT, jax.lax.RandomAlgorithm.RNG_THREE_FRY,
                      jax.lax.RandomAlgorithm.RNG_PHILOX):
        key = jnp.array([1, 2, 3, 4], jnp.uint32)
        _, bits = jax.lax.rng_bit_generator(key, x.shape, jnp.uint32, algorithm=algorithm)
        unit = (bits >> 8).astype(jnp.float32) / 2**24
        outs.append(unit - x)
    return tuple(outs)


def motivating_cases() -> list[Program]:
    rng = np.random.default_rng(2026)

    def f32(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    return [
        Program("batch_norm_backward", _batch_norm_backward, (f32(256, 32), f32(256, 32), f32(32)), ("reduce",)),
        Program("bf16_training_remat", _bf16_training_step_with_remat, (f32(16, 32), f32(32, 8), f32(64, 16), f32(64, 8)),
                ("bf16", "remat", "matmul")),
        Program("nan_outside_domain", _nan_outside_the_domain,
                (rng.uniform(0.05, 0.95, (16, 8)).astype(np.float32), f32(16, 8)), ("elementwise",)),
        Program("dot_in_while_loop", _dot_in_a_while_loop, (f32(12, 12) / 4, f32(12)), ("fori", "matmul")),
        Program("svd", _svd, (f32(9, 6),), ("linalg",)),
        Program("top_k", _top_k, (f32(8, 40),), ("top_k",)),
        Program("rng_bit_generator", _rng_bit_generator, (f32(4, 64),), ("rng",)),
    ]
