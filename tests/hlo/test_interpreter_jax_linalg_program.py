"""A JAX program built on the custom-calls and random bits: XLA's stages verify, and agree with XLA.

The program uses SVD, symmetric eigen, QR, ``top_k`` and ``jax.random`` with the
``rbg`` implementation (``rng-bit-generator``). Its ``pre``, ``before_layout`` and
``after_layout`` modules (XLA:CPU's own answer, where ``top_k`` has become the
``TopK`` custom-call with a (value, index) comparator) must verify against each
other, and the interpreter's outputs of the ``after_layout`` module must agree with
XLA:CPU's execution of it: integers (``top_k`` indices) exactly, floats normwise
(``1e-4`` of the largest magnitude per output; reconstructions and eigenvalues are
unique, the raw factors are not returned).
"""

from __future__ import annotations

import numpy as np
import pytest
from xla_cpu import execute_in_xla, leaves

from hlo.equivalence import compare_modules, random_arguments
from hlo.interpreter import evaluate
from hlo.parser import parse_module


def _stages():
    import jax
    import jax.numpy as jnp

    from service.xla.stages import dump_stages

    def program(a, b, key):
        u, s, vt = jnp.linalg.svd(a @ b)
        values, index = jax.lax.top_k(s[None, :8] * a[:, :8], 3)
        w, v = jnp.linalg.eigh(a @ a.T)
        noise = jax.random.normal(jax.random.wrap_key_data(key, impl="rbg"), (16, 3))
        q, r = jnp.linalg.qr(b.T)
        return u @ jnp.diag(s) @ vt, values + noise, index, w, v @ jnp.diag(w) @ v.T, q @ r

    key = jax.random.key_data(jax.random.key(0, impl="rbg"))
    return dump_stages(program, jnp.ones((16, 8), jnp.float32), jnp.ones((8, 16), jnp.float32),
                       key, name="linalg_program")


@pytest.mark.xla
def test_jax_linalg_program_stages_verify_and_match_xla(tmp_path):
    stages = _stages()
    pre, before, after = (parse_module(t) for t in (stages.pre, stages.before_layout,
                                                    stages.after_layout))
    assert 'custom_call_target="TopK"' in stages.after_layout
    # XLA expands rng-bit-generator into arithmetic before layout assignment: comparing
    # pre with after_layout checks our bits against XLA's own expansion.
    assert "rng-bit-generator" in stages.pre and "rng-bit-generator" not in stages.after_layout
    for original in (pre, before):
        report = compare_modules(original, after, seed=3)
        assert report.ok, report.to_json()

    args = random_arguments(after, np.random.default_rng(3))
    (theirs,) = execute_in_xla([(stages.after_layout, args)], tmp_path)
    mine = leaves(evaluate(after, args))
    assert len(mine) == len(theirs)
    for i, (x, y) in enumerate(zip(theirs, mine)):
        assert x.dtype == y.dtype and x.shape == y.shape, i
        if x.dtype.kind in "iu":
            assert np.array_equal(x, y), i
        else:
            scale = max(1.0, float(np.abs(x).max()))
            assert float(np.abs(x.astype(np.float64) - y).max()) <= 1e-4 * scale, i
