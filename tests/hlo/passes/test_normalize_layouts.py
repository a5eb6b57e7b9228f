"""``normalize-layouts`` on hand-written modules: what each op becomes.

Every module is also run through the reference interpreter against its input
(bitcasts through the physical byte image) and through both verifiers.
"""

from __future__ import annotations

from hlo.equivalence import compare_modules
from hlo.ir import Module
from hlo.layout_verifier import verify_layouts
from hlo.parser import parse_module
from hlo.passes.normalize_layouts import normalize_layouts
from hlo.passes.physical_shapes import is_descending, physical_shape
from hlo.printer import print_module
from hlo.verifier import verify_module

ADD = """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
"""


def normalized(text: str) -> tuple[Module, Module]:
    module = parse_module(text)
    out = normalize_layouts(module)
    verify_module(out)
    assert verify_layouts(out) == [], print_module(out, short=True)
    report = compare_modules(module, out, seed=5, trials=2)
    assert report.equivalent, f"{report.difference}\n{print_module(out, short=True)}"
    assert normalize_layouts(out) == out
    return module, out


def lines(module: Module) -> list[str]:
    return [f"{i.shape} {i.opcode}" for i in module.entry.instructions]


def test_dot_dims_are_renumbered_when_the_result_order_comes_out_physical() -> None:
    _, out = normalized("""HloModule m
ENTRY e {
  a = f32[3,5]{0,1} parameter(0)
  b = f32[5,4]{1,0} parameter(1)
  ROOT d = f32[3,4]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}""")
    dot = next(i for i in out.entry.instructions if i.opcode == "dot")
    assert dot.attr("lhs_contracting_dims") == (0,)
    assert str(out.entry.instruction(dot.operands[0]).shape) == "f32[5,3]{1,0}"


def test_dot_whose_result_order_is_not_physical_stays_with_bitcasts_around() -> None:
    module, out = normalized("""HloModule m
ENTRY e {
  a = f32[3,5]{1,0} parameter(0)
  b = f32[5,4]{1,0} parameter(1)
  d = f32[3,4]{0,1} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT n = f32[3,4]{0,1} negate(d)
}""")
    dot = next(i for i in out.entry.instructions if i.opcode == "dot")
    assert dot == module.entry.instruction("d")
    assert "f32[4,3]{1,0} negate" in lines(out)


def test_batch_dot_lists_its_batch_pairs_in_result_order() -> None:
    _, out = normalized("""HloModule m
ENTRY e {
  a = f32[2,3,4,5]{3,2,0,1} parameter(0)
  b = f32[2,3,5,6]{3,2,0,1} parameter(1)
  ROOT d = f32[2,3,4,6]{3,2,0,1} dot(a, b), lhs_batch_dims={0,1}, lhs_contracting_dims={3},
    rhs_batch_dims={0,1}, rhs_contracting_dims={2}
}""")
    dot = next(i for i in out.entry.instructions if i.opcode == "dot")
    assert dot.attr("lhs_batch_dims") == (0, 1) and str(dot.shape) == "f32[3,2,4,6]{3,2,1,0}"


def test_reshape_that_is_no_bitcast_goes_through_logical_order() -> None:
    _, out = normalized("""HloModule m
ENTRY e {
  a = f32[6,4]{0,1} parameter(0)
  ROOT r = f32[24]{0} reshape(a)
}""")
    ops = [i.opcode for i in out.entry.instructions]
    assert ops.count("transpose") == 1 and ops.count("reshape") == 1


def test_edges_keep_their_layouts_and_everything_inside_is_descending() -> None:
    module, out = normalized(
        """HloModule m
"""
        + ADD
        + """
ENTRY e {
  p = f32[4,6,8]{0,2,1} parameter(0)
  q = f32[8,6]{0,1} parameter(1)
  c = f32[] constant(0)
  b = f32[4,6,8]{1,0,2} broadcast(q), dimensions={2,1}
  s = f32[4,6,8]{0,2,1} add(p, b)
  t = f32[6,4,8]{2,0,1} transpose(s), dimensions={1,0,2}
  sl = f32[6,2,8]{2,0,1} slice(t), slice={[0:6], [1:3], [0:8]}
  pd = f32[6,4,8]{2,0,1} pad(sl, c), padding=0_0x1_1x0_0
  rv = f32[6,4,8]{2,0,1} reverse(pd), dimensions={0,2}
  cc = f32[6,8,8]{2,0,1} concatenate(rv, rv), dimensions={1}
  rw = f32[6,8,8]{2,0,1} reduce-window(cc, c), window={size=1x3x1 pad=0_0x1_1x0_0}, to_apply=add
  io = f32[6,8,8]{0,1,2} iota(), iota_dimension=1
  m = f32[6,8,8]{2,0,1} multiply(rw, io)
  ROOT r = f32[6,8]{0,1} reduce(m, c), dimensions={2}, to_apply=add
}"""
    )
    entry = out.entry
    params = {p.name: p.shape for p in entry.parameter_instructions()}
    assert params == {p.name: p.shape for p in module.entry.parameter_instructions()}
    assert entry.root_instruction.shape == module.entry.root_instruction.shape
    for instr in entry.instructions:
        if instr.opcode not in ("parameter", "bitcast") and instr.name != entry.root:
            assert is_descending(instr.shape), f"{instr.name}: {instr.shape}"


def test_variadic_sort_and_tuples_pass_through() -> None:
    normalized("""HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY e {
  x = f32[4,6]{0,1} parameter(0)
  i = s32[4,6]{0,1} iota(), iota_dimension=1
  s = (f32[4,6]{0,1}, s32[4,6]{0,1}) sort(x, i), dimensions={1}, to_apply=cmp
  v = f32[4,6]{0,1} get-tuple-element(s), index=0
  w = s32[4,6]{0,1} get-tuple-element(s), index=1
  ROOT t = (s32[4,6]{0,1}, f32[4,6]{0,1}) tuple(w, v)
}""")


def test_physical_shape_keeps_tiles_and_lists_dims_major_to_minor() -> None:
    module = parse_module(
        "HloModule m\nENTRY e {\n  ROOT p = f32[8,100,100,3]{3,0,2,1:T(8,128)} parameter(0)\n}"
    )
    assert (
        str(physical_shape(module.entry.root_instruction.array_shape))
        == "f32[100,100,8,3]{3,2,1,0:T(8,128)}"
    )


def test_control_edges_follow_an_instruction_that_disappears() -> None:
    _, out = normalized("""HloModule m
ENTRY e {
  a = f32[5,4]{1,0} parameter(0)
  t = f32[4,5]{0,1} transpose(a), dimensions={1,0}
  n = f32[4,5]{0,1} negate(t), control-predecessors={t}
  ROOT out = f32[4,5]{0,1} abs(n)
}""")
    names = {i.name for i in out.entry.instructions}
    assert "t" not in names  # the transpose moved no bytes: it is gone
    negate = out.entry.instruction("n")
    assert negate.attr("control-predecessors") == ("a",)


def test_nested_tuples_and_variadic_reduce_inside_a_tuple() -> None:
    _, out = normalized("""HloModule m
add2 {
  a0 = f32[] parameter(0)
  a1 = f32[] parameter(1)
  b0 = f32[] parameter(2)
  b1 = f32[] parameter(3)
  s0 = f32[] add(a0, b0)
  s1 = f32[] add(a1, b1)
  ROOT t = (f32[], f32[]) tuple(s0, s1)
}
ENTRY e {
  p = ((f32[2,3]{0,1}, f32[3]{0}), f32[4,2]{0,1}) parameter(0)
  g0 = (f32[2,3]{0,1}, f32[3]{0}) get-tuple-element(p), index=0
  g00 = f32[2,3]{0,1} get-tuple-element(g0), index=0
  g1 = f32[4,2]{0,1} get-tuple-element(p), index=1
  z = f32[] constant(0)
  r = (f32[2]{0}, f32[2]{0}) reduce(g00, g00, z, z), dimensions={1}, to_apply=add2
  n = f32[4,2]{0,1} negate(g1)
  ROOT t = ((f32[2]{0}, f32[2]{0}), (f32[2,3]{0,1}, f32[3]{0}), f32[4,2]{0,1}) tuple(r, g0, n)
}""")
    assert out.entry.root_instruction.opcode == "tuple"
