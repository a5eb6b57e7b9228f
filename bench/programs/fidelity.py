"""Programs for the fidelity benchmark (``bench/fidelity.py``): training steps and code heavy in
transposes, reductions and einsums, sized so that one step runs in about a millisecond on
XLA:CPU unfused. Each builder returns ``(f, args)`` with concrete numpy arguments (the
execution path feeds values, not shapes). jax is imported by the builders."""

from __future__ import annotations

import numpy as np


def _normal(rng, *dims, dtype=np.float32):
    return (0.1 * rng.standard_normal(dims)).astype(dtype)


def mlp_train_step(width: int = 256, batch: int = 64, dtype=np.float32):
    import jax
    import jax.numpy as jnp

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jax.nn.gelu(h @ w + b)
        w, b = params[-1]
        return jnp.mean((h @ w + b - y) ** 2)

    def step(params, x, y):
        grads = jax.grad(loss)(params, x, y)
        return jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)

    rng = np.random.default_rng(0)
    params = [(_normal(rng, width, width, dtype=dtype), _normal(rng, width, dtype=dtype))
              for _ in range(3)]
    return step, (params, _normal(rng, batch, width, dtype=dtype),
                  _normal(rng, batch, width, dtype=dtype))


def transformer_train_step(width: int = 64, heads: int = 4, seq: int = 32, batch: int = 2):
    import jax
    import jax.numpy as jnp

    def layer(x, w):
        q = jnp.einsum("bsd,dhk->bhsk", x, w["q"])
        k = jnp.einsum("bsd,dhk->bhsk", x, w["k"])
        v = jnp.einsum("bsd,dhk->bhsk", x, w["v"])
        att = jax.nn.softmax(jnp.einsum("bhsk,bhtk->bhst", q, k) / 4.0, axis=-1)
        o = jnp.einsum("bhst,bhtk->bshk", att, v).reshape(x.shape)
        x = x + o @ w["o"]
        mu = x.mean(-1, keepdims=True)
        x = (x - mu) / jnp.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
        return x + jax.nn.relu(x @ w["up"]) @ w["down"]

    def loss(w, x):
        return jnp.mean(layer(layer(x, w), w) ** 2)

    def step(w, x):
        g = jax.grad(loss)(w, x)
        return jax.tree.map(lambda p, d: p - 0.01 * d, w, g)

    rng = np.random.default_rng(1)
    k = width // heads
    w = {"q": _normal(rng, width, heads, k), "k": _normal(rng, width, heads, k),
         "v": _normal(rng, width, heads, k), "o": _normal(rng, width, width),
         "up": _normal(rng, width, 2 * width), "down": _normal(rng, 2 * width, width)}
    return step, (w, _normal(rng, batch, seq, width))


def cnn_train_step(channels: int = 16, image: int = 16, batch: int = 4):
    import jax
    import jax.numpy as jnp

    def conv(x, k):
        return jax.lax.conv_general_dilated(x, k, (1, 1), "SAME",
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def loss(p, x, y):
        h = jax.nn.relu(conv(x, p["c1"]))
        h = jax.nn.relu(conv(h, p["c2"]))
        logits = h.mean(axis=(1, 2)) @ p["fc"]
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))

    def step(p, x, y):
        g = jax.grad(loss)(p, x, y)
        return jax.tree.map(lambda a, b: a - 0.01 * b, p, g)

    rng = np.random.default_rng(2)
    p = {"c1": _normal(rng, 3, 3, 3, channels), "c2": _normal(rng, 3, 3, channels, channels),
         "fc": _normal(rng, channels, 10)}
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    return step, (p, _normal(rng, batch, image, image, 3), y)


def transpose_heavy(n: int = 256):
    import jax.numpy as jnp

    def f(a, b):
        c = (a.T + b) * 2.0
        d = jnp.tanh(c).T @ b
        return (d.T - a).reshape(n // 4, 4, n).transpose(1, 2, 0)

    rng = np.random.default_rng(3)
    return f, (_normal(rng, n, n), _normal(rng, n, n))


def reduce_heavy(n: int = 128):
    import jax.numpy as jnp

    def f(x):
        s0 = x.sum(0)
        s1 = x.max(1)
        s2 = (x * x).mean((0, 2))
        return s0 * s1.mean(), s2, jnp.argmax(x.transpose(2, 1, 0), axis=2)

    rng = np.random.default_rng(4)
    return f, (_normal(rng, 32, n, n),)


def einsum_heavy(n: int = 32):
    import jax.numpy as jnp

    def f(a, b, c):
        x = jnp.einsum("ijk,kjl->il", a, b)
        y = jnp.einsum("il,lmn->imn", x, c)
        return jnp.einsum("imn,nmi->i", y, c.transpose(2, 1, 0)[:, :, :n])

    rng = np.random.default_rng(5)
    return f, (_normal(rng, n, 8, 16), _normal(rng, 16, 8, n), _normal(rng, n, 4, n))


PROGRAMS = {
    "gen_mlp_train": mlp_train_step,
    "gen_mlp_train_f16": lambda: mlp_train_step(dtype=np.float16),
    "gen_transformer_train": transformer_train_step,
    "gen_cnn_train": cnn_train_step,
    "gen_transpose_heavy": transpose_heavy,
    "gen_reduce_heavy": reduce_heavy,
    "gen_einsum_heavy": einsum_heavy,
}
