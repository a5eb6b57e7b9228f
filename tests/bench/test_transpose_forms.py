"""The two forms ``bench/transpose_forms.py`` times compute the transpose numpy computes (XLA:CPU
runs them), carry the layouts named, and the model prices them as the target says."""

from __future__ import annotations

import numpy as np
import pytest

from bench.transpose_forms import modules
from hlo.target import load_target
from service.layout_operations import model_cost
from service.xla.execution import run_modules


def test_the_forms_are_xlas_and_the_standalone_transpose():
    (_, form), (_, alone) = modules(3, 40)
    assert [i.opcode for i in form.entry.instructions] == ["parameter", "transpose", "copy"]
    assert str(form.entry.instructions[1].shape.layout) == "{0,1}"
    assert [i.opcode for i in alone.entry.instructions] == ["parameter", "transpose"]
    assert str(alone.entry.root_instruction.shape) == "f32[40,3]{1,0}"


def test_the_model_prefers_the_standalone_loop_where_its_reads_stay_cached():
    cpu = load_target("cpu")
    short = [model_cost(m, cpu) for _, m in modules(3, 87381)]
    wide = [model_cost(m, cpu) for _, m in modules(64, 4096)]
    assert short[1] < short[0] and wide[1] > wide[0]


@pytest.mark.xla
def test_both_forms_compute_the_transpose():
    x = np.random.default_rng(5).standard_normal((3, 40)).astype(np.float32)
    run = run_modules(modules(3, 40), inputs=[x])
    for execution in run.executions:
        assert execution.refusal is None
        np.testing.assert_array_equal(execution.outputs[0], x.T)
