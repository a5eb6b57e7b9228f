"""``rng-bit-generator`` is bit-exact with XLA:CPU's execution, for every algorithm.

Each case is a module with one ``rng-bit-generator`` whose state is a parameter;
XLA:CPU (one subprocess for all cases) and the interpreter run it on the same
random states, and both the new state and the bits must be identical. The shapes
cover what ``jax.random`` emits with ``jax_default_prng_impl`` = ``rbg`` and
``unsafe_rbg`` (``u64[2]`` state; u8/u16/u32/u64 bits; odd, even, scalar and
multi-dimensional shapes, which take different paths through XLA's three-fry
split) and the ``u64[3]`` state that philox also accepts. A second check runs
modules that ``jax.random`` itself lowered (``threefry2x32`` has no
``rng-bit-generator``: it is plain HLO arithmetic, checked here too).
"""

from __future__ import annotations

import numpy as np
import pytest
from xla_cpu import execute_in_xla, leaves

from hlo.interpreter import InterpretError, evaluate
from hlo.parser import parse_module

ALGORITHMS = ("rng_default", "rng_three_fry", "rng_philox")
SHAPES = ("u32[5,3]", "u32[7]", "u32[]", "u32[3,5,7]", "u32[30,4]", "u32[1,9]",
          "u64[7]", "u64[4]", "u64[]", "u64[2,3]", "u8[7]", "u8[4,6]", "u16[5]", "s32[6]", "f32[3]")


def _module(state: str, bits: str, algorithm: str) -> str:
    return (f"HloModule rbg\n\nENTRY main {{\n  s = {state} parameter(0)\n"
            f"  ROOT r = ({state}, {bits}) rng-bit-generator(s), algorithm={algorithm}\n}}\n")


def _cases():
    gen = np.random.default_rng(7)
    for algorithm in ALGORITHMS:
        for k, bits in enumerate(SHAPES):
            state = "u64[3]" if algorithm == "rng_philox" and k % 4 == 1 else "u64[2]"
            value = gen.integers(0, 2**64, size=int(state[4]), dtype=np.uint64, endpoint=False)
            if k % 5 == 2:  # a counter about to wrap: carries into the high word
                value[1] = np.uint64(2**64 - 3)
            yield f"{algorithm}:{bits}:{state}", _module(state, bits, algorithm), [value]


def _jax_modules():
    import jax

    # 64-bit types only while these modules are lowered: the flag is process-wide and other
    # tests of the same process compare against jax's 32-bit defaults.
    with jax.enable_x64(True):
        return _jax_modules_x64()


def _jax_modules_x64():
    """Modules lowered by jax.random for each PRNG implementation, as (name, text, args)."""
    import jax
    import jax.numpy as jnp

    out = []
    for impl in ("threefry2x32", "rbg", "unsafe_rbg"):
        key = jax.random.key_data(jax.random.key(3, impl=impl))
        for what, fn in {
            "bits32": lambda k: jax.random.bits(k, (5, 3), jnp.uint32),
            "bits64": lambda k: jax.random.bits(k, (7,), jnp.uint64),
            "bits8": lambda k: jax.random.bits(k, (9,), jnp.uint8),
            "uniform": lambda k: jax.random.uniform(k, (4, 3), jnp.float32),
            "normal64": lambda k: jax.random.normal(k, (6,), jnp.float64),
            "split": lambda k: jax.random.key_data(jax.random.split(k, 3)),
        }.items():
            def wrapped(data, fn=fn, impl=impl):
                return fn(jax.random.wrap_key_data(data, impl=impl))
            text = jax.jit(wrapped).lower(key).as_text(dialect="hlo")
            out.append((f"{impl}:{what}", text, [np.asarray(key)]))
    return out


def _differ(x: np.ndarray, y: np.ndarray) -> bool:
    """Bits must be identical; floats computed from them by XLA's own log/sin/cos agree to 1e-6.

    XLA's MLIR path types the bits unsigned (``s32[6]`` comes back as ``u32[6]``):
    the raw bits are compared then.
    """
    if x.shape != y.shape or x.dtype.itemsize != y.dtype.itemsize:
        return True
    if x.dtype == y.dtype and x.dtype.kind == "f" and x.dtype.itemsize == 8:
        return not np.allclose(x, y, rtol=1e-6, atol=1e-12)
    if x.dtype != y.dtype and x.dtype != np.dtype(f"u{y.dtype.itemsize}"):
        return True
    width = f"u{x.dtype.itemsize}"
    return not np.array_equal(x.reshape(-1).view(width), y.reshape(-1).view(width))


@pytest.mark.xla
def test_rng_bit_generator_is_bit_exact_with_xla_cpu(tmp_path):
    cases = list(_cases()) + _jax_modules()
    theirs = execute_in_xla([(text, args) for _, text, args in cases], tmp_path)
    failures = []
    for (name, text, args), expected in zip(cases, theirs):
        mine = leaves(evaluate(parse_module(text), args))
        assert len(mine) == len(expected), name
        for i, (x, y) in enumerate(zip(expected, mine)):
            if _differ(x, y):
                failures.append(f"{name} output {i}: XLA {x.dtype}{x.shape} {x.ravel()[:4]} "
                                f"vs ours {y.dtype}{y.shape} {y.ravel()[:4]}")
    assert not failures, "\n".join(failures)


def test_legacy_rng_is_refused_by_name():
    text = ("HloModule r\n\nENTRY main {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            "  ROOT r = f32[4] rng(a, b), distribution=rng_uniform\n}\n")
    with pytest.raises(InterpretError, match="legacy 'rng' op is not supported"):
        evaluate(parse_module(text), [np.float32(0), np.float32(1)])
