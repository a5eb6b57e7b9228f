"""The rewrite: one copy per (value, layout), constants cloned, tuples rebuilt, roots fixed."""

from hlo.layout_verifier import verify_layouts
from hlo.parser import parse_module
from hlo.passes.apply_layouts import Conversion, LayoutPlan, apply_layouts
from hlo.printer import print_module
from hlo.shape import Layout, leaf_arrays

TEXT = """HloModule m, entry_computation_layout={(f32[4,8]{1,0})->(f32[4,8]{0,1}, f32[4,8]{0,1})}
ENTRY e {
  p = f32[4,8]{1,0} parameter(0)
  c = f32[4,8]{1,0} constant({...})
  a = f32[4,8]{0,1} negate(p)
  b = f32[4,8]{0,1} exponential(p)
  d = f32[4,8]{0,1} add(a, c)
  ROOT t = (f32[4,8]{0,1}, f32[4,8]{0,1}) tuple(d, b)
}"""


def layouts_of(module):
    """Every array position's written layout (what the module already says)."""
    return {(comp.name, instr.name, path): leaf.effective_layout()
            for comp in module.computations for instr in comp.instructions
            for path, leaf in leaf_arrays(instr.shape)}


def test_one_copy_per_value_and_layout_and_constants_cloned():
    module = parse_module(TEXT)
    col = Layout((0, 1))
    plan = LayoutPlan(layouts_of(module), (
        Conversion("e", "a", 0, (), col), Conversion("e", "b", 0, (), col),
        Conversion("e", "d", 1, (), col)))
    out = apply_layouts(module, plan)
    ops = [(i.name, i.opcode) for i in out.entry.instructions]
    assert ops.count(("p.relayout", "copy")) == 1           # shared by a and b
    assert ("c.relayout", "constant") in ops                 # re-laid out, not copied
    assert [i.name for i in out.entry.instructions][:2] == ["p", "p.relayout"]  # after producer
    assert verify_layouts(out) == []
    assert print_module(apply_layouts(module, plan)) == print_module(out)   # deterministic


def test_root_conversion_rebuilds_the_tuple():
    module = parse_module(TEXT)
    plan = LayoutPlan(layouts_of(module), (Conversion("e", "", -1, (1,), Layout((1, 0))),))
    out = apply_layouts(module, plan)
    root = out.entry.root_instruction
    assert root.opcode == "tuple" and root.operands[0] == "d"
    assert out.entry.instruction(root.operands[1]).opcode == "copy"
    assert str(out.attr("entry_computation_layout").result) == "(f32[4,8]{0,1}, f32[4,8]{1,0})"


TRANSPOSED = """HloModule m, entry_computation_layout={(f32[4,8]{1,0})->(f32[8,4]{1,0}, f32[8,4]{1,0})}
ENTRY e {
  p = f32[4,8]{1,0} parameter(0)
  t = f32[8,4]{1,0} transpose(p), dimensions={1,0}
  n = f32[8,4]{1,0} negate(t)
  ROOT r = (f32[8,4]{1,0}, f32[8,4]{1,0}) tuple(t, n)
}"""


def test_a_transpose_in_xlas_form_is_a_bitcast_of_its_operand_and_a_copy_serves_its_readers():
    from hlo.bitcast import transpose_is_bitcast
    from hlo.interpreter import evaluate
    import numpy as np

    module = parse_module(TRANSPOSED)
    plan = LayoutPlan(layouts_of(module), (Conversion("e", "t", 0, (), Layout((0, 1)),
                                                      after=True),))
    out = apply_layouts(module, plan)
    by_name = {i.name: i for i in out.entry.instructions}
    assert [(i.name, i.opcode) for i in out.entry.instructions] == [
        ("p", "parameter"), ("t", "transpose"), ("t.relayout", "copy"), ("n", "negate"),
        ("r", "tuple")]
    assert by_name["t"].operands == ("p",) and str(by_name["t"].shape.layout) == "{0,1}"
    assert transpose_is_bitcast(by_name["p"].shape, by_name["t"].shape, (1, 0))
    assert str(by_name["t.relayout"].shape.layout) == "{1,0}"
    assert by_name["n"].operands == ("t.relayout",)
    assert by_name["r"].operands == ("t.relayout", "n")
    assert verify_layouts(out) == []
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    got = evaluate(out, [x])
    assert np.array_equal(got[0], x.T) and np.array_equal(got[1], -x.T)
