"""The layout-aware reference interpreter: executes an HLO module with numpy.

``evaluate(module, args)`` runs the entry computation on logical numpy arrays
(tuples for tuple-shaped parameters) and returns its value. Semantics follow
XLA's operation semantics; only ``bitcast`` and width-changing
``bitcast-convert`` look at layouts, through the physical byte image (see
:mod:`hlo.interpreter.physical`), so a wrong bitcast gives wrong numbers.

Choices where HLO leaves freedom (documented in the op modules): float dots,
convolutions and add/multiply reductions accumulate in f64 and round once;
16-bit floats are rounded after every instruction; ``sort`` is stable;
``rng``/``rng-bit-generator`` are deterministic stand-ins.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hlo.interpreter import (  # noqa: F401  (registers the handlers)
    control,
    custom_calls,
    dot_conv,
    elementwise,
    gather_scatter,
    random,
    reduce_ops,
    shape_ops,
    sort,
)
from hlo.interpreter.machine import HANDLERS, Machine
from hlo.interpreter.values import TOKEN, InterpretError, Value, dtype_of
from hlo.ir import Module

__all__ = ["InterpretError", "Machine", "TOKEN", "Value", "dtype_of", "evaluate", "supported_opcodes"]


def evaluate(module: Module, args: Sequence[Value]) -> Value:
    """Run ``module``'s entry computation on ``args`` (logical arrays, tuples)."""
    machine = Machine(module)
    with np.errstate(all="ignore"):
        return machine.run(module.entry, list(args))


def supported_opcodes() -> frozenset[str]:
    return frozenset(HANDLERS) | {"parameter"}
