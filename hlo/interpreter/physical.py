"""Layout-sensitive operations through the physical image of an array.

``bitcast`` and width-changing ``bitcast-convert`` reinterpret memory, so they
are executed the way hardware would: the operand is written into its physical
image (tiles, padding and ``L(n)`` tail included; padding reads as zero) with
:func:`hlo.tiling.physical_offsets`, and the result is read back through the
result's own offsets. A bitcast whose layouts do not describe the same bytes
therefore yields different numbers.

Bit order: elements are stored little-endian (as on x86/Arm hosts XLA runs
on); sub-byte elements fill a byte from its low bits upward, at the storage
width ``E(n)`` when the layout gives one.
"""

from __future__ import annotations

import numpy as np

from hlo.interpreter.machine import Machine, error_at
from hlo.interpreter.values import Value, dtype_of, from_bits, to_bits
from hlo.ir import Instruction
from hlo.shape import ArrayShape
from hlo.tiling import element_storage_bits, physical_element_count, physical_offsets


def physical_image(x: np.ndarray, shape: ArrayShape) -> np.ndarray:
    """The element codes of ``x`` at their physical positions (padding = 0)."""
    codes = to_bits(x)
    image = np.zeros(physical_element_count(shape), codes.dtype)
    if x.size:
        image[physical_offsets(shape).ravel()] = codes.ravel()
    return image


def read_image(image: np.ndarray, shape: ArrayShape) -> np.ndarray:
    """Read an array of ``shape`` out of a physical image of its own element codes."""
    dtype = dtype_of(shape.element_type)
    offsets = physical_offsets(shape)
    return from_bits(image[offsets], dtype)


def _to_bitstream(image: np.ndarray, bits: int) -> np.ndarray:
    """Codes of ``bits`` bits each -> a little-endian stream of 0/1 bytes."""
    codes = image.astype(np.uint64)
    shifts = np.arange(bits, dtype=np.uint64)
    return ((codes[:, None] >> shifts) & np.uint64(1)).astype(np.uint8).ravel()


def _from_bitstream(stream: np.ndarray, bits: int, count: int) -> np.ndarray:
    chunks = stream[: count * bits].reshape(count, bits).astype(np.uint64)
    weights = np.uint64(1) << np.arange(bits, dtype=np.uint64)
    return (chunks * weights).sum(axis=1, dtype=np.uint64)


def convert_image(image: np.ndarray, src_bits: int, dst_bits: int, dst_count: int) -> np.ndarray:
    """Reinterpret a physical image of ``src_bits``-wide codes as ``dst_bits``-wide codes."""
    total_src = image.size * src_bits
    if dst_count * dst_bits > total_src:
        raise ValueError(
            f"result needs {dst_count * dst_bits} bits but the operand holds {total_src}"
        )
    if src_bits % 8 == 0 and dst_bits % 8 == 0 and src_bits in (8, 16, 32, 64) and dst_bits in (8, 16, 32, 64):
        raw = np.ascontiguousarray(image).view(np.uint8)[: dst_count * dst_bits // 8]
        return raw.view(np.dtype(f"<u{dst_bits // 8}"))
    stream = _to_bitstream(image, src_bits)
    return _from_bitstream(stream, dst_bits, dst_count)


def reinterpret_physical(m: Machine, instr: Instruction, x: np.ndarray) -> Value:
    """Execute ``bitcast``/``bitcast-convert`` through the physical images."""
    src = m.operand_shape(instr, 0)
    dst = instr.shape
    if not isinstance(src, ArrayShape) or not isinstance(dst, ArrayShape):
        raise error_at(instr, "bitcast of a non-array shape")
    src_bits, dst_bits = element_storage_bits(src), element_storage_bits(dst)
    dst_count = physical_element_count(dst)
    if physical_element_count(src) * src_bits != dst_count * dst_bits:
        raise error_at(
            instr,
            f"{src} and {dst} do not occupy the same number of bits "
            f"({physical_element_count(src) * src_bits} vs {dst_count * dst_bits})",
        )
    image = physical_image(x, src)
    if src_bits != dst_bits or src.element_type != dst.element_type:
        image = convert_image(image, src_bits, dst_bits, dst_count)
    return read_image(image, dst)
