"""The modules ``bench/dot_forms.py`` (and the calibration's dot groups) time: every physical form of a dot computes the
product numpy computes (XLA:CPU runs them), and each form's layouts are the ones named."""

from __future__ import annotations

import numpy as np
import pytest

from bench.dot_forms import FORMS
from service.calibration.microbenchmarks import dot_module
from service.xla.execution import run_modules


@pytest.mark.parametrize("lhs_c,rhs_c", [(1, 0), (1, 1), (0, 0)])
def test_each_form_carries_its_layouts(lhs_c, rhs_c):
    for form in FORMS:
        module = dot_module("d", 4, 3, 2, form, lhs_c, rhs_c)
        a, b, d = module.entry.instructions
        want = [(1, 0) if x == "r" else (0, 1) for x in form]
        got = [i.shape.layout.minor_to_major for i in (a, b, d)]
        assert got == want, form
        assert d.attr("lhs_contracting_dims") == (lhs_c,)
        assert d.attr("rhs_contracting_dims") == (rhs_c,)
        assert a.shape.dims == ((4, 3) if lhs_c else (3, 4))
        assert b.shape.dims == ((2, 3) if rhs_c else (3, 2))


@pytest.mark.xla
@pytest.mark.parametrize("lhs_c,rhs_c", [(1, 0), (1, 1), (0, 0)])
def test_every_form_computes_the_product(lhs_c, rhs_c):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((8, 16) if lhs_c else (16, 8)).astype(np.float32)
    b = rng.standard_normal((4, 16) if rhs_c else (16, 4)).astype(np.float32)
    want = (a if lhs_c else a.T) @ (b.T if rhs_c else b)
    run = run_modules([(f, dot_module(f"d_{f}", 8, 16, 4, f, lhs_c, rhs_c)) for f in FORMS],
                      inputs=[a, b])
    for execution in run.executions:
        assert execution.refusal is None
        np.testing.assert_allclose(execution.outputs[0], want, rtol=1e-4, atol=1e-4)
