"""The modules ``bench/reduction_forms.py`` times: both forms compute the reduction numpy
computes, and the copied form reads its operand with the reduced dim minor."""

from __future__ import annotations

import numpy as np
import pytest

from bench.reduction_forms import SHAPES, reduced_minor, reduction
from hlo.parser import parse_module
from service.xla.execution import run_modules


@pytest.mark.parametrize("shape,dim", [SHAPES[0], SHAPES[4]])
def test_the_copy_puts_the_reduced_dim_minor(shape, dim):
    copied = parse_module(reduction(shape, dim, reduced_minor(shape, dim), "add"))
    copy = next(i for i in copied.entry.instructions if i.opcode == "copy")
    assert copy.shape.layout.minor_to_major[0] == dim
    column = parse_module(reduction(shape, dim, tuple(range(len(shape) - 1, -1, -1)), "add"))
    assert not any(i.opcode == "copy" for i in column.entry.instructions)


@pytest.mark.xla
@pytest.mark.parametrize("kind", ["argmax", "max", "add"])
def test_both_forms_compute_what_numpy_computes(kind):
    shape, dim = SHAPES[0]
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    modules = [(form, parse_module(reduction(shape, dim, layout, kind)))
               for form, layout in (("column", (2, 1, 0)), ("copied", reduced_minor(shape, dim)))]
    run = run_modules(modules, inputs=[x])
    for execution in run.executions:
        assert execution.refusal is None
        if kind == "argmax":
            np.testing.assert_array_equal(execution.outputs[1], np.argmax(x, axis=dim))
            np.testing.assert_array_equal(execution.outputs[0], np.max(x, axis=dim))
        else:
            want = np.max(x, axis=dim) if kind == "max" else np.sum(x, axis=dim)
            np.testing.assert_allclose(execution.outputs[0], want, rtol=1e-5, atol=1e-5)
