"""The pinned path: modules compiled through XLA's whole pipeline with their entry layouts
fixed (how an accelerator, whose emitter takes only fused modules, runs the calibration).

The oracles are numpy (what the modules compute) and the executable XLA builds (the entry
layouts it reports). No test asserts a time.
"""

from __future__ import annotations

import numpy as np
import pytest

from hlo.parser import parse_module
from service.xla.execution import carrier, entry_pins, pinned_form, run_modules
from service.xla.refusals import pinned_reason

pytestmark = pytest.mark.xla


def _copy(src: str, dst: str) -> str:
    return (f"HloModule moved, entry_computation_layout={{(f32[6,4]{{{src}}})->f32[6,4]{{{dst}}}}}\n"
            f"ENTRY %e {{\n  %p = f32[6,4]{{{src}}} parameter(0)\n"
            f"  ROOT %c = f32[6,4]{{{dst}}} copy(%p)\n}}\n")


def test_pinned_modules_keep_their_entry_layouts_and_compute_the_right_values():
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    modules = [(f"{s}->{d}", parse_module(_copy(s, d), "moved"))
               for s, d in (("1,0", "1,0"), ("1,0", "0,1"), ("0,1", "1,0"))]
    # the reference's parameter layout differs from a candidate's: inputs in each one's own
    run = run_modules(modules, inputs=[x], reps=2, pinned=[label for label, _ in modules])
    for execution in run.executions:
        assert execution.refusal is None, execution.refusal
        np.testing.assert_array_equal(execution.outputs[0], x)  # logical values, any layout
        assert len(execution.times_ms) == 2
    assert run.jax_version and run.device


def test_a_transpose_and_an_add_of_mixed_layouts_give_numpy_s_answer():
    text = """HloModule mixed, entry_computation_layout={(f32[3,5]{1,0}, f32[5,3]{0,1})->f32[5,3]{1,0}}
ENTRY %e {
  %a = f32[3,5]{1,0} parameter(0)
  %b = f32[5,3]{0,1} parameter(1)
  %t = f32[5,3]{1,0} transpose(%a), dimensions={1,0}
  ROOT %s = f32[5,3]{1,0} add(%t, %b)
}
"""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 5), np.float32), rng.standard_normal((5, 3), np.float32)
    run = run_modules([("m", parse_module(text, "mixed"))], inputs=[a, b], pinned=["m"])
    np.testing.assert_allclose(run.executions[0].outputs[0], a.T + b, rtol=1e-6)


def test_the_platform_reaches_xla():
    """A backend jax cannot reach is XLA's refusal naming it (it used to run on cpu)."""
    run = run_modules([("m", parse_module(_copy("1,0", "0,1"), "moved"))],
                      pinned=["m"], platform="no_such_backend")
    assert "no_such_backend" in run.executions[0].refusal


def test_what_the_pinned_path_cannot_ask_for_is_refused_with_its_reason():
    bitcast = parse_module("""HloModule b, entry_computation_layout={(f32[4,2]{1,0})->f32[8]{0}}
ENTRY %e {
  %p = f32[4,2]{1,0} parameter(0)
  ROOT %b = f32[8]{0} bitcast(%p)
}
""", "b")
    assert "bitcast" in pinned_reason(bitcast)
    tiled = parse_module(_copy("1,0", "1,0:T(2,2)"), "moved")
    assert "tiled" in pinned_reason(tiled)
    run = run_modules([("b", bitcast)], pinned=["b"])
    assert "bitcast" in run.executions[0].refusal
    assert pinned_reason(parse_module(_copy("1,0", "0,1"), "moved")) is None


def test_entry_pins_and_the_rewritten_forms():
    module = parse_module(_copy("0,1", "1,0"), "moved")
    assert entry_pins(module) == {"params": ["{0,1}"], "results": ["{1,0}"]}
    assert [i.opcode for i in pinned_form(module).entry.instructions] == ["parameter", "reshape"]
    assert [i.opcode for i in carrier(module).entry.instructions] == ["parameter", "reshape"]
    assert [i.opcode for i in module.entry.instructions] == ["parameter", "copy"]


def test_xla_s_layout_assignment_runs_for_the_platform_asked():
    from service.xla.errors import XlaError
    from service.xla.layout_pass import xla_layout_assignment

    text = _copy("1,0", "0,1")
    assert "copy" in xla_layout_assignment(text)  # cpu: XLA:CPU's answer
    with pytest.raises(XlaError, match="no_such_backend"):
        xla_layout_assignment(text, platform="no_such_backend")
