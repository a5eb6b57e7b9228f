"""``rng-bit-generator`` bit-exact with XLA, and the legacy ``rng`` refused.

XLA expands ``rng-bit-generator`` into ordinary HLO built from its PRNG library
(``RngBitGeneratorExpander`` over ``xla/hlo/builder/lib/prng.cc``); this module
computes the same bits with vectorized numpy. ``algorithm=rng_default`` is
Philox on CPU (checked against XLA:CPU's execution in the tests).

State ``u64[n]``: ``state[0]`` is the key, split into two u32 words (low word
first). What follows is the counter:

* **three-fry** (Threefry-2x32, 20 rounds): the counter is ``state[1]``. Element
  ``i`` (row-major index) of a 64-bit output is ``ThreeFry(c + i)`` with the
  two 32-bit outputs joined low word first; the counter advances by the number
  of elements. A 32-bit output is split along its first even dimension ``d``
  (else the largest one) into pairs: the half shape has ``ceil(d/2)`` there,
  pair ``(h, j)`` takes word ``j`` of ``ThreeFry(c + h)``, and the counter
  advances by the half shape's size. Narrower outputs are 32-bit outputs
  truncated.
* **philox** (Philox-4x32, 10 rounds): the counter is the 128-bit value
  ``(state[1], state[2])`` (low, high) when ``n >= 3``; for ``n == 2`` it is
  ``(state[1], state[0])`` and only its low word is written back. Block ``b``
  is ``Philox(counter + b)`` giving four u32 words; 32-bit outputs take the
  words of block 0, then block 1, ...; 64-bit outputs join words (0, 1) and
  (2, 3) low word first. The counter advances by the number of blocks.

The legacy ``rng`` op draws from a generator whose seed XLA keeps outside the
module, so no module-level definition reproduces it: it is refused by name.
"""

from __future__ import annotations

import numpy as np

from hlo.interpreter.machine import Machine, error_at, register
from hlo.interpreter.values import Value, dtype_of, from_bits
from hlo.ir import Instruction
from hlo.shape import ArrayShape, TupleShape

_U32 = np.uint32
_MASK32 = np.uint64(0xFFFFFFFF)
_ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)


def _words(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A u64 array as its (low, high) u32 words."""
    return (x & _MASK32).astype(_U32), (x >> np.uint64(32)).astype(_U32)


def _join(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    return low.astype(np.uint64) | (high.astype(np.uint64) << np.uint64(32))


def _rotl(v: np.ndarray, distance: int) -> np.ndarray:
    return (v << _U32(distance)) | (v >> _U32(32 - distance))


def threefry2x32(key: tuple[np.uint32, np.uint32], x0: np.ndarray, x1: np.ndarray):
    """Threefry-2x32 with 20 rounds on u32 arrays (the Random123 definition)."""
    ks = (_U32(key[0]), _U32(key[1]), _U32(0x1BD11BDA) ^ _U32(key[0]) ^ _U32(key[1]))
    x0, x1 = x0 + ks[0], x1 + ks[1]
    for block in range(5):
        for rotation in _ROTATIONS[4 * (block % 2):4 * (block % 2) + 4]:
            x0 = x0 + x1
            x1 = _rotl(x1, rotation) ^ x0
        x0 = x0 + ks[(block + 1) % 3]
        x1 = x1 + ks[(block + 2) % 3] + _U32(block + 1)
    return x0, x1


def philox4x32(key: tuple[np.uint32, np.uint32], x: tuple[np.ndarray, ...]):
    """Philox-4x32 with 10 rounds on four u32 arrays."""
    k0, k1 = _U32(key[0]), _U32(key[1])
    x0, x1, x2, x3 = x
    for _ in range(10):
        p0 = x0.astype(np.uint64) * np.uint64(0xD2511F53)
        p1 = x2.astype(np.uint64) * np.uint64(0xCD9E8D57)
        hi0, lo0 = (p0 >> np.uint64(32)).astype(_U32), (p0 & _MASK32).astype(_U32)
        hi1, lo1 = (p1 >> np.uint64(32)).astype(_U32), (p1 & _MASK32).astype(_U32)
        x0, x1, x2, x3 = hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0
        k0, k1 = k0 + _U32(0x9E3779B9), k1 + _U32(0xBB67AE85)
    return x0, x1, x2, x3


def _split_dim(dims: tuple[int, ...]) -> int:
    even = [i for i, d in enumerate(dims) if d % 2 == 0]
    if even:
        return even[0]
    return max(range(len(dims)), key=lambda i: (dims[i], -i))


def _threefry_bits(state: np.ndarray, dims: tuple[int, ...], width: int):
    key = _words(state[:1])
    key = (key[0][0], key[1][0])
    counter = state[1]
    if width == 64:
        n = int(np.prod(dims, dtype=np.int64))
        low, high = _words(counter + np.arange(n, dtype=np.uint64))
        out0, out1 = threefry2x32(key, low, high)
        return _join(out0, out1).reshape(dims), counter + np.uint64(n)
    if not dims:
        low, high = _words(np.array([counter], np.uint64))
        out0, _ = threefry2x32(key, low, high)
        return out0.reshape(()), counter + np.uint64(1)
    axis = _split_dim(dims)
    half = dims[:axis] + ((dims[axis] + 1) // 2,) + dims[axis + 1:]
    n = int(np.prod(half, dtype=np.int64))
    low, high = _words(counter + np.arange(n, dtype=np.uint64))
    out0, out1 = threefry2x32(key, low, high)
    pairs = np.stack([out0.reshape(half), out1.reshape(half)], axis=axis + 1)
    joined = pairs.reshape(dims[:axis] + (2 * half[axis],) + dims[axis + 1:])
    return np.take(joined, np.arange(dims[axis]), axis=axis), counter + np.uint64(n)


def _philox_bits(state: np.ndarray, dims: tuple[int, ...], width: int):
    key = _words(state[:1])
    key = (key[0][0], key[1][0])
    low, high = (state[1], state[2]) if len(state) >= 3 else (state[1], state[0])
    n = int(np.prod(dims, dtype=np.int64))
    words_needed = 2 * n if width == 64 else n
    blocks = -(-words_needed // 4)
    offsets = np.arange(blocks, dtype=np.uint64)
    lows = low + offsets
    highs = np.where(lows < low, high + np.uint64(1), high).astype(np.uint64)
    bits = philox4x32(key, _words(lows) + _words(highs))
    if width == 64:
        pairs = np.stack([_join(bits[0], bits[1]), _join(bits[2], bits[3])], axis=1)
        out = pairs.reshape(-1)[:n]
    else:
        out = np.stack(bits, axis=1).reshape(-1)[:n]
    new_low = low + np.uint64(blocks)
    new_high = high + np.uint64(1) if new_low < low else high
    counter = [new_low, new_high] if len(state) >= 3 else [new_low]
    return out.reshape(dims), np.array(counter, np.uint64)


#: Bit width of each element type rng-bit-generator may produce.
_WIDTHS = {"u8": 8, "s8": 8, "u16": 16, "s16": 16, "f16": 16, "bf16": 16, "u32": 32, "s32": 32,
           "f32": 32, "u64": 64, "s64": 64, "f64": 64}


def _algorithm(instr: Instruction) -> str:
    name = str(instr.attr("algorithm", "rng_default"))
    if name == "rng_default":
        return "rng_philox"
    return name


@register("rng-bit-generator")
def _rng_bit_generator(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    shape = instr.shape
    if not isinstance(shape, TupleShape) or len(shape.elements) != 2:
        raise error_at(instr, "rng-bit-generator must return (state, bits)")
    out = shape.elements[1]
    if not isinstance(out, ArrayShape):
        raise error_at(instr, "rng-bit-generator bits must be an array")
    state = np.asarray(ops[0])
    if state.dtype != np.uint64 or state.ndim != 1 or len(state) < 2:
        raise error_at(instr, "rng-bit-generator state must be u64[n] with n >= 2, "
                              f"got {state.dtype}{list(state.shape)}")
    algorithm = _algorithm(instr)
    width = _WIDTHS.get(out.element_type)
    if width is None:
        raise error_at(instr, f"rng-bit-generator cannot produce {out.element_type} bits")
    dims = tuple(out.dims)
    with np.errstate(over="ignore"):
        if algorithm == "rng_three_fry":
            bits, counter = _threefry_bits(state, dims, width)
            new_state = np.concatenate([state[:1], np.array([counter], np.uint64), state[2:]])
        elif algorithm == "rng_philox":
            if len(state) > 3:
                raise error_at(instr, f"philox takes a u64[2] or u64[3] state, got {len(state)}")
            bits, counter = _philox_bits(state, dims, width)
            new_state = np.concatenate([state[:1], counter])
        else:
            raise error_at(instr, f"unknown rng-bit-generator algorithm '{algorithm}'")
    raw = bits.astype({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[width])
    return new_state, from_bits(raw, dtype_of(out.element_type))


@register("rng")
def _rng(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    raise error_at(
        instr,
        "the legacy 'rng' op is not supported: XLA draws it from a generator seeded outside "
        "the module, so its values are not a function of the module and its inputs "
        "(use rng-bit-generator)",
    )
