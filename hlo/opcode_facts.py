"""Facts about opcodes, each written once: which ops are elementwise, which tie their
operands' layouts to their result's, which are variadic, which leave layouts free.

The parser, shape inference, layout normalization, the interpreter, the layout verifier
and the layout graph all read these tables; none keeps a copy. Example: ``add`` is in
:data:`ELEMENTWISE_BINARY`, hence in :data:`ELEMENTWISE` and in :data:`TIED`, so the
verifier requires ``add(f32[2,3]{0,1} a, f32[2,3]{1,0} b)`` to be an error, and layout
normalization rewrites it like any other elementwise op.
"""

from __future__ import annotations

from typing import Final

#: One operand, one result of its shape (element type aside: ``abs``, ``real`` and
#: ``imag`` of a complex number are real, ``is-finite`` is ``pred``).
#: ``count-leading-zeros`` is XLA's spelling of clz; ``clz`` itself is kept for texts that use it.
ELEMENTWISE_UNARY: Final[frozenset[str]] = frozenset({
    "abs", "cbrt", "ceil", "clz", "copy", "cosine", "count-leading-zeros", "erf", "exponential",
    "exponential-minus-one", "floor", "imag", "is-finite", "log", "log-plus-one", "logistic",
    "negate", "not", "popcnt", "real", "round-nearest-afz", "round-nearest-even", "rsqrt",
    "sign", "sine", "sqrt", "tan", "tanh",
})

#: Two operands of one shape, one result of that shape (``compare`` gives ``pred``,
#: ``complex`` a complex type).
ELEMENTWISE_BINARY: Final[frozenset[str]] = frozenset({
    "add", "and", "atan2", "complex", "compare", "divide", "maximum", "minimum", "multiply",
    "or", "power", "remainder", "shift-left", "shift-right-arithmetic", "shift-right-logical",
    "subtract", "xor", "stochastic-convert",
})

#: Ops that apply one function element by element: operands of the result's rank are read
#: at the same index, scalar operands (``clamp`` bounds) are broadcast. ``copy`` is not one
#: of them for layouts: it is the op that changes a layout.
ELEMENTWISE: Final[frozenset[str]] = (ELEMENTWISE_UNARY - {"copy"}) | ELEMENTWISE_BINARY | {
    "bitcast-convert", "clamp", "convert", "map", "reduce-precision", "select",
}

#: Opcodes XLA's ``InstructionCanChangeLayout`` answers ``false`` for: an operand of the
#: result's rank has the result's layout.
TIED: Final[frozenset[str]] = ELEMENTWISE | {
    "add-dependency", "all-gather", "all-gather-done", "all-gather-start", "all-reduce",
    "all-reduce-done", "all-reduce-start", "all-to-all", "cholesky", "collective-broadcast",
    "collective-permute", "concatenate", "dynamic-slice", "dynamic-update-slice", "fft",
    "opt-barrier", "pad", "ragged-all-to-all", "reduce-scatter", "reduce-window", "reverse",
    "scatter", "select-and-scatter", "set-dimension-size", "slice", "sort", "topk",
    "triangular-solve", "while",
}

#: Tied ops that may be variadic: with a tuple result, operand ``i`` maps to result element
#: ``i``. ``select-and-scatter`` is not one: XLA gives it exactly three operands (operand,
#: source, init value) and an array result of the operand's shape.
VARIADIC_TIED: Final[frozenset[str]] = frozenset({
    "sort", "reduce-window", "scatter", "all-reduce", "all-to-all", "collective-permute",
    "all-gather", "reduce-scatter",
})

#: Variadic ops whose tuple results all get one layout (XLA's
#: ``RequiresSameShapeForAllOutput``).
SHARED_LAYOUT: Final[frozenset[str]] = frozenset({"reduce", "reduce-window", "sort"})

#: Ops whose operands carry no layout constraint from the op itself and whose result layout
#: is free (costs and backend preferences may still price it).
LAYOUT_FREE: Final[frozenset[str]] = frozenset({
    "gather", "iota", "rng", "rng-bit-generator", "constant", "parameter", "partition-id",
    "replica-id", "after-all", "get-dimension-size", "rng-get-and-update-state", "dot",
    "convolution", "reduce", "tuple", "get-tuple-element", "opt-barrier", "domain",
    "add-dependency", "while", "call", "fusion", "conditional", "transpose", "reshape", "copy",
    "bitcast", "broadcast", "custom-call", "bitcast-convert",
})

#: Every opcode the text format knows (async wrappers aside: ``X-start`` and friends).
OPCODES: Final[frozenset[str]] = ELEMENTWISE_UNARY | ELEMENTWISE_BINARY | frozenset({
    "add-dependency", "after-all", "all-gather", "all-gather-done", "all-gather-start",
    "all-reduce", "all-reduce-done", "all-reduce-start", "all-to-all", "async-done",
    "async-start", "async-update", "batch-norm-grad", "batch-norm-inference",
    "batch-norm-training", "bitcast", "bitcast-convert", "broadcast", "call", "cholesky",
    "clamp", "collective-broadcast", "collective-permute", "collective-permute-done",
    "collective-permute-start", "concatenate", "conditional", "constant", "convert",
    "convolution", "copy-done", "copy-start", "custom-call", "domain", "dot",
    "dynamic-reshape", "dynamic-slice", "dynamic-update-slice", "fft", "fusion", "gather",
    "get-dimension-size", "get-tuple-element", "infeed", "iota", "map", "opt-barrier",
    "outfeed", "pad", "parameter", "partition-id", "ragged-all-to-all", "ragged-dot", "recv",
    "recv-done", "reduce", "reduce-precision", "reduce-scatter", "reduce-window",
    "replica-id", "reshape", "reverse", "rng", "rng-bit-generator", "rng-get-and-update-state",
    "scan", "scatter", "select", "select-and-scatter", "send", "send-done",
    "set-dimension-size", "slice", "sort", "topk", "transpose", "triangular-solve", "tuple",
    "while",
})
