"""``rng`` and ``rng-bit-generator``: deterministic stand-ins, not XLA's bit streams.

XLA's ``rng`` is nondeterministic by definition, and its ``rng-bit-generator``
bit stream (Philox/ThreeFry as the backend implements them) is not reproduced
here. The interpreter instead derives the bits from the operand values with
NumPy's Philox generator: the same inputs give the same outputs, so an
original module and its rewrite are compared exactly, but the numbers differ
from XLA's. (JAX's own PRNG is ordinary HLO arithmetic — shifts and xors — and
is executed exactly.)
"""

from __future__ import annotations

import hashlib

import numpy as np

from hlo.interpreter.elementwise import convert_array
from hlo.interpreter.machine import Machine, error_at, register
from hlo.interpreter.values import Value, bits_dtype, dtype_of, from_bits, to_bits
from hlo.ir import Instruction
from hlo.shape import ArrayShape, TupleShape


def _generator(*arrays: np.ndarray) -> np.random.Generator:
    digest = hashlib.sha256()
    for a in arrays:
        digest.update(np.ascontiguousarray(to_bits(a)).tobytes())
    return np.random.Generator(np.random.Philox(int.from_bytes(digest.digest()[:16], "little")))


@register("rng-bit-generator")
def _rng_bit_generator(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    state = ops[0]
    shape = instr.shape
    if not isinstance(shape, TupleShape) or len(shape.elements) != 2:
        raise error_at(instr, "rng-bit-generator must return (state, bits)")
    out = shape.elements[1]
    assert isinstance(out, ArrayShape)
    dtype = dtype_of(out.element_type)
    gen = _generator(state)
    width = dtype.itemsize * 8
    raw = gen.integers(0, 1 << 63, size=out.dims, dtype=np.uint64, endpoint=False)
    raw = raw ^ (gen.integers(0, 2, size=out.dims, dtype=np.uint64) << np.uint64(63))
    bits = (raw & np.uint64((1 << width) - 1 if width < 64 else 0xFFFFFFFFFFFFFFFF)).astype(bits_dtype(width))
    new_state = (state.astype(np.uint64) + np.uint64(1)).astype(state.dtype)
    return new_state, from_bits(bits, dtype)


@register("rng")
def _rng(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    a, b = ops
    shape = instr.array_shape
    gen = _generator(a, b)
    distribution = str(instr.attr("distribution", "rng_uniform"))
    dtype = dtype_of(shape.element_type)
    if distribution == "rng_normal":
        values = gen.normal(float(a), float(b), size=shape.dims)
        return convert_array(values, dtype)
    if dtype.kind in "iu":
        lo, hi = int(a), int(b)
        return gen.integers(lo, max(hi, lo + 1), size=shape.dims).astype(dtype)
    values = gen.uniform(float(a), float(b), size=shape.dims)
    return convert_array(values, dtype)
