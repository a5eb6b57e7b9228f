"""The rest of XLA's layout-assignment test cases, and a guard that every case is tested.

Each test runs ``assign`` with the case's setup (the entry layouts its XLA test
fixes, written into ``entry_computation_layout``; a leaf left without a layout
is AUTO) and asserts the outcome XLA's test checks. Where our answer differs,
the test asserts what we do and that it costs no more than XLA's documented
answer, written out as a module and scored under the same model.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import gpu_pricing_column_reductions_as_transposes, shared_path
from hlo.errors import LayoutError
from hlo.parser import parse_module
from hlo.target import load_target, read_target_file
from solver.layout_assignment.assign import assign, score
from solver.layout_assignment.options import AssignOptions
from test_xla_cases import GENERIC, GPU, _copies, _instr, _mtm, _reads, _run

#: The cpu numbers two propagation cases below were written for (see the file's header).
CPU_NUMPY = load_target(read_target_file(Path(__file__).with_name("cpu_numpy.toml")))

_HEADER_ECL = re.compile(r",\s*entry_computation_layout=.*$", re.S)


def _text(folder: str, name: str) -> str:
    return Path(shared_path("xla-cases", folder, f"{name}.hlo")).read_text()


def _with_entry(text: str, name: str, entry: str) -> str:
    """``text`` with its entry layout replaced by ``entry`` (the case's setup)."""
    lines = text.strip().splitlines()
    if lines[0].strip().startswith("HloModule"):
        header = _HEADER_ECL.sub("", lines[0].strip())
        return "\n".join([f"{header}, entry_computation_layout={{{entry}}}", *lines[1:]])
    return f"HloModule {name}, entry_computation_layout={{{entry}}}\n" + "\n".join(lines)


def _run_entry(folder: str, name: str, target: str, entry: str):
    module = parse_module(_with_entry(_text(folder, name), name, entry), fill_missing_layouts=True)
    result = assign(module, target, AssignOptions(time_limit_s=5.0))
    assert result.violations == ()
    return result


def _score(text: str, target: str) -> int:
    """The cost of XLA's documented answer, written out as a whole module."""
    sc = score(parse_module(text), target)
    assert sc.broken == ()
    return sc.total


# -- the generic pass (target cpu) ---------------------------------------------------------


def test_channel_ends_share_one_layout():
    r = _run_entry(GENERIC, "ChannelLayoutMismatch", "cpu", "((f32[2,2]{0,1}))->f32[2,2]{1,0}")
    send, recv = _instr(r, "send")[1], _instr(r, "recv")[1]
    assert _mtm(send.shape) == _mtm(recv.shape) == (1, 0)
    assert _reads(r, "send", 0) == (1, 0)  # the {0,1} parameter element is copied up front
    assert [c.operands for c in _copies(r)] == [("gte",)]


def test_bitcast_convert_adding_a_dimension_keeps_the_order():
    r = _run_entry(GENERIC, "BitcastConvertAddingDimensionDoesNotChangeLayout", "cpu",
                   "(f32[2,64]{0,1})->u4[2,64,8]{1,2,0:E(4)}")
    assert _reads(r, "b", 0) == (1, 0)
    assert [c.operands for c in _copies(r)] == [("a",)]


def test_layout_constrained_custom_call_keeps_its_layouts():
    r = _run_entry(GENERIC, "CustomCallLayoutConstrained", "cpu",
                   "(f32[4,4]{1,0}, f32[2,3]{1,0})->f32[1,2,3,4]{2,1,0,3}")
    cc = _instr(r, "custom-call")[1]
    assert _mtm(cc.shape) == (3, 2, 0, 1)
    assert _reads(r, "custom-call", 0) == (0, 1) and _reads(r, "custom-call", 1) == (1, 0)
    root = r.module.entry.root_instruction
    assert root.opcode == "copy" and root.operands == ("custom-call",)
    assert sorted(c.operands for c in _copies(r)) == [("custom-call",), ("p0",)]


def test_layout_constrained_all_reduce_keeps_its_layout():
    r = _run(GENERIC, "LayoutConstrainedAllReduce", "cpu")
    crs = _instr(r, "crs")[1]
    assert [_mtm(e) for e in crs.shape.elements] == [(0, 1), (1, 0)]
    assert _reads(r, "crs", 0) == (0, 1) and _reads(r, "crs", 1) == (1, 0)
    assert _instr(r, _instr(r, "crs")[1].operands[1])[1].opcode == "copy"
    assert _instr(r, _instr(r, "crs")[1].operands[0])[1].opcode != "copy"


_PROPAGATE_XLA = """HloModule xla
add1 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  cbd = f32[64,243,243,10]{0,3,2,1} parameter(0)
  cbd.c = f32[64,243,243,10]{2,3,1,0} copy(cbd)
  reduce.13 = f32[64,243,243]{2,1,0} parameter(1)
  divide.2 = f32[64,243,243,10]{2,3,1,0} parameter(2)
  reshape.32 = f32[384,10,1,1]{0,1,3,2} parameter(3)
  reshape.32.c = f32[384,10,1,1]{3,2,1,0} copy(reshape.32)
  subtract = f32[64,243,243,384]{3,0,2,1} parameter(4)
  constant = f32[] constant(3779136)
  broadcast.71 = f32[64,243,243,384]{3,0,2,1} parameter(5)
  broadcast.46 = f32[64,243,243,10]{2,3,1,0} broadcast(reduce.13), dimensions={0,1,2}
  subtract.14 = f32[64,243,243,10]{2,3,1,0} subtract(cbd.c, broadcast.46)
  multiply.22 = f32[64,243,243,10]{2,3,1,0} multiply(subtract.14, divide.2)
  multiply.22.c = f32[64,243,243,10]{3,2,1,0} copy(multiply.22)
  convolution.9 = f32[64,243,243,384]{3,2,1,0} convolution(multiply.22.c, reshape.32.c), window={size=1x1}, dim_labels=01bf_oi01->01bf
  convolution.9.c = f32[64,243,243,384]{3,0,2,1} copy(convolution.9)
  reduce.14 = f32[384]{0} reduce(convolution.9, constant), dimensions={0,1,2}, to_apply=add1
  multiply.24 = f32[64,243,243,384]{3,0,2,1} multiply(convolution.9.c, subtract)
  reduce.15 = f32[384]{0} reduce(multiply.24, constant), dimensions={0,1,2}, to_apply=add1
  broadcast.47 = f32[64,243,243,384]{3,0,2,1} broadcast(constant), dimensions={}
  multiply.23 = f32[64,243,243,384]{3,0,2,1} multiply(convolution.9.c, broadcast.47)
  broadcast.48 = f32[64,243,243,384]{3,0,2,1} broadcast(reduce.14), dimensions={3}
  subtract.15 = f32[64,243,243,384]{3,0,2,1} subtract(multiply.23, broadcast.48)
  broadcast.50 = f32[64,243,243,384]{3,0,2,1} broadcast(reduce.15), dimensions={3}
  multiply.25 = f32[64,243,243,384]{3,0,2,1} multiply(broadcast.50, subtract)
  divide.7 = f32[64,243,243,384]{3,0,2,1} divide(multiply.25, broadcast.71)
  ROOT subtract.17 = f32[64,243,243,384]{3,0,2,1} subtract(subtract.15, divide.7)
}
"""


def test_operand_layout_propagation_reaches_the_elementwise_chain():
    """subtract.15 gets the result's {3,0,2,1} as in XLA. XLA then gives broadcast.46
    and subtract.14 divide.2's {2,3,1,0}; on cpu the convolution wants its input in
    the default order, so either the {2,3,1,0} divide.2 or the multiply feeding the
    convolution is transposed: we copy divide.2 and run the chain in {3,2,1,0}.
    XLA's layouts, completed with the same convolution copies, cost no less."""
    r = _run(GENERIC, "PropagateOperandLayout", CPU_NUMPY)
    assert _mtm(_instr(r, "subtract.15")[1].shape) == (3, 0, 2, 1)
    ours = (_mtm(_instr(r, "broadcast.46")[1].shape), _mtm(_instr(r, "subtract.14")[1].shape))
    if ours != ((2, 3, 1, 0), (2, 3, 1, 0)):
        assert r.objective <= _score(_PROPAGATE_XLA, CPU_NUMPY)


def test_gather_reshapes_take_the_requested_layouts():
    r = _run(GENERIC, "PropagateOperandLayout2", "cpu")
    assert _mtm(_instr(r, "reshape.1")[1].shape) == (1, 0)
    assert _mtm(_instr(r, "reshape.3")[1].shape) == (3, 1, 2, 0)


def test_aliased_custom_call_operand_is_copied_to_the_output_layout():
    r = _run(GENERIC, "BreakBufferAliasAcrossInstructions", "cpu")
    assert _mtm(r.module.entry.instruction("init").shape) == (0, 1)
    root = r.module.entry.root_instruction
    assert _mtm(root.shape) == (1, 0)
    assert r.module.entry.instruction(root.operands[0]).opcode == "copy"


def test_auto_entry_parameter_absorbs_the_transpose():
    r = _run_entry(GENERIC, "PartialEntryParameterLayout", "cpu",
                   "(f32[32,650], s32[16,1,18]{0,1,2})->(f32[650,32]{1,0}, s32[18,16,1]{0,1,2})")
    assert _mtm(_instr(r, "operand")[1].shape) == (0, 1)
    assert _mtm(_instr(r, "indices")[1].shape) == (0, 1, 2)
    assert not any(c.operands == ("operand",) or c.operands == ("transpose",) for c in _copies(r))


def test_aliased_auto_parameter_and_result_share_a_layout():
    r = _run_entry(GENERIC, "AliasParameterAndOutput", "cpu",
                   "(f32[65,65], f32[4225]{0})->f32[65,65]")
    assert r.entry_layouts["parameters"][0] == r.entry_layouts["result"]
    assert _mtm(_instr(r, "p0")[1].shape) == _mtm(r.module.entry.root_instruction.shape)


_SCAN_XLA = """HloModule xla, entry_computation_layout={(f32[100,200]{1,0})->(f32[100,200]{0,1}, f32[200]{0})}
add {
  x = f32[200]{0} parameter(0)
  y = f32[200]{0} parameter(1)
  a = f32[200]{0} add(x, y)
  ROOT t = (f32[200]{0}, f32[200]{0}) tuple(a, a)
}
ENTRY main {
  input = f32[100,200]{1,0} parameter(0)
  c = f32[100,200]{0,1} copy(input)
  zero = f32[] constant(0)
  init = f32[200]{0} broadcast(zero), dimensions={}
  ROOT scan = (f32[100,200]{0,1}, f32[200]{0}) scan(c, init), dimensions={0}, num_carries=1, is_associative=true, to_apply=add
}
"""


def test_scan_is_layout_preserving():
    """XLA copies the scan's input to the requested {0,1}; we scan in {1,0} and copy
    the output element instead: one f32[100,200] transpose either way, so the same
    cost under the model (asserted), and the scan still reads and writes one layout."""
    r = _run(GENERIC, "ScanLayoutAssignment2D", "cpu")
    scan = _instr(r, "scan")[1]
    assert _reads(r, "scan", 0) == _mtm(scan.shape.elements[0])
    assert _mtm(r.module.entry.root_instruction.shape) == (0, 1)
    assert len(_copies(r)) == 1
    assert r.objective <= _score(_SCAN_XLA, "cpu")


def test_async_pair_keeps_the_wrapped_layouts():
    r = _run(GENERIC, "AsyncStartDoneTupleMandatoryConstraints", "cpu")
    start, done = _instr(r, "async_start")[1], _instr(r, "async_done")[1]
    operand = start.shape.elements[0].elements[0]
    assert [_mtm(e) for e in operand.elements] == [(0, 1), (1, 0)]
    assert [_mtm(e) for e in start.shape.elements[1].elements] == [(0, 1), (1, 0)]
    assert [_mtm(e) for e in done.shape.elements] == [(0, 1), (1, 0)]
    # The wrapped computation writes what async-start hands out at index {1}.
    wrapped = next(c for c in r.module.computations if c.name == "async_comp")
    assert [_mtm(e) for e in wrapped.root_instruction.shape.elements] == [(0, 1), (1, 0)]
    assert _copies(r) == [] or [c.name for c in _copies(r)] == ["copy"]


def test_elementwise_and_transpose():
    r = _run_entry(GENERIC, "reconstructed_ElementwiseAndTranspose", "cpu",
                   "(f32[42,12]{1,0})->f32[12,42]{0,1}")
    assert _mtm(_instr(r, "log")[1].shape) == (1, 0)
    assert _mtm(_instr(r, "transpose")[1].shape) == (0, 1)
    assert _mtm(_instr(r, "tanh")[1].shape) == (0, 1)
    assert _copies(r) == [] and r.objective == 0


def test_broadcast_feeding_a_transpose():
    """XLA lays the broadcast out {0,1,2} so that the transpose is a bitcast; the
    broadcast then writes its operand's dims in reverse order. We may pick another
    broadcast layout: whichever we pick costs no more than XLA's (asserted)."""
    r = _run(GENERIC, "reconstructed_BroadcastAndTranspose", CPU_NUMPY)
    xla = _score("""HloModule xla
ENTRY main {
  param = f32[3,4]{1,0} parameter(0)
  broadcast = f32[2,3,4]{0,1,2} broadcast(param), dimensions={1,2}
  ROOT transpose = f32[4,3,2]{2,1,0} transpose(broadcast), dimensions={2,1,0}
}""", CPU_NUMPY)
    if _mtm(_instr(r, "broadcast")[1].shape) != (0, 1, 2):
        assert r.objective <= xla
    assert _copies(r) == []


def test_reshape_operand_with_multiple_users():
    """XLA: broadcast and tanh {0,1} so that the transpose is a bitcast; then the
    second broadcast writes f32[2,3,4]{2,1,0} from a {0,1} tanh. We keep {1,0} and
    transpose once instead; costs no more under the model (asserted)."""
    r = _run(GENERIC, "reconstructed_ReshapeOperandHasMultipleUsers", "cpu")
    assert _mtm(_instr(r, "transpose")[1].shape) == (1, 0)
    xla = _score("""HloModule xla
ENTRY main {
  param = f32[4]{0} parameter(0)
  broadcast = f32[3,4]{0,1} broadcast(param), dimensions={1}
  transpose = f32[4,3]{1,0} transpose(broadcast), dimensions={1,0}
  tanh = f32[3,4]{0,1} tanh(broadcast)
  broadcast2 = f32[2,3,4]{2,1,0} broadcast(tanh), dimensions={1,2}
  ROOT tuple = (f32[4,3]{1,0}, f32[2,3,4]{2,1,0}) tuple(transpose, broadcast2)
}""", "cpu")
    if _mtm(_instr(r, "broadcast")[1].shape) != (0, 1):
        assert r.objective <= xla


def test_bitcast_before_layout_assignment():
    """XLA refuses any bitcast before layout assignment. We refuse one in a module
    that is not laid out (its meaning depends on layouts no one chose yet); in the
    case's module every layout is written, so the bitcast and its operand keep
    theirs, which keeps its meaning, and nothing is copied."""
    text = _text(GENERIC, "reconstructed_InternalErrorOnBitcast")
    with pytest.raises(LayoutError, match="bitcast"):
        assign(parse_module(text.replace("{0,1}", "")), "cpu", AssignOptions(time_limit_s=5.0))
    r = _run(GENERIC, "reconstructed_InternalErrorOnBitcast", "cpu")
    bitcast = r.module.entry.root_instruction
    assert bitcast.opcode == "bitcast" and _mtm(bitcast.shape) == (0, 1)
    assert _reads(r, "bitcast", 0) == (0, 1) and _copies(r) == []


# -- the GPU pass ------------------------------------------------------------------------


def test_dot_batch_dims_in_one_physical_order():
    """rhs lists its batch dims as {1,0} against lhs's {0,1}: XLA copies rhs to
    {3,2,0,1} (batch 1, 0, then contracting, then non-contracting). Putting the
    non-contracting dim before the contracting one ({2,3,0,1}) is as valid for cuBLAS
    and moves the same bytes; either is accepted, at no more than XLA's cost."""
    r = _run(GPU, "DotOperandInconsistentDimLayouts", "gpu")
    assert _reads(r, "dot.1330.10585", 0) == (3, 2, 1, 0)
    assert _reads(r, "dot.1330.10585", 1) in ((3, 2, 0, 1), (2, 3, 0, 1))
    assert [c.operands for c in _copies(r)] == [("p1",)]
    assert r.objective <= _score("""HloModule xla
ENTRY dot {
  p0 = f32[5,6,2,3]{3,2,1,0} parameter(0)
  p1 = f32[6,5,3,4]{3,2,1,0} parameter(1)
  c = f32[6,5,3,4]{3,2,0,1} copy(p1)
  ROOT dot.1330.10585 = f32[5,6,2,4]{3,2,1,0} dot(p0, c), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={1,0}, rhs_contracting_dims={2}
}""", "gpu")


def test_reduce_operand_gets_the_row_reduction_layout():
    # XLA's GPU layout assignment makes this reduce a row reduction; the built-in gpu
    # target, measured, prices a column reduction at next to nothing, so the rule is
    # checked with the price XLA's heuristic assumes.
    r = _run(GPU, "ReduceOperandLayout", gpu_pricing_column_reductions_as_transposes())
    laid_out = r.assigned  # before the target's reduction normalization regroups it
    reduce = next(i for i in laid_out.entry.instructions if i.name == "reduce.2")
    assert _mtm(laid_out.entry.instruction(reduce.operands[0]).shape) == (3, 1, 4, 2, 0)


def test_small_reduction_keeps_the_operand_layout():
    r = _run(GPU, "ReduceOperandLayoutSmallReductionDimension", "gpu")
    laid_out = r.assigned
    reduce = next(i for i in laid_out.entry.instructions if i.name == "reduce.2")
    assert _mtm(laid_out.entry.instruction(reduce.operands[0]).shape) == (3, 2, 1, 0)
    assert _copies(r) == []


def test_auto_parameter_absorbs_the_dot_operand_layout():
    r = _run(GPU, "DotSetsNonMandatoryConstraintIfAutoLayout", "gpu")
    assert _mtm(_instr(r, "p1")[1].shape) == (1, 2, 0)
    assert _copies(r) == []


_DOT_OF_DOT_XLA = """HloModule xla
ENTRY dot {
  p0 = f32[8,50]{1,0} parameter(0)
  p1 = f32[2,8,4,4]{3,2,1,0} parameter(1)
  p2 = f32[4,38]{1,0} parameter(2)
  c1 = f32[2,8,4,4]{3,2,0,1} copy(p1)
  dot.1 = f32[50,2,4,4]{3,2,1,0} dot(p0, c1), lhs_contracting_dims={0}, rhs_contracting_dims={1}
  c2 = f32[50,2,4,4]{3,1,0,2} copy(dot.1)
  dot.2 = f32[50,2,4,38]{3,2,1,0} dot(c2, p2), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  ROOT out = f32[2,50,38,4]{2,3,0,1} transpose(dot.2), dimensions={1,0,3,2}
}
"""


def test_dot_of_dot_feeding_a_transpose():
    """XLA keeps both dots {3,2,1,0}, copies p1 to {3,2,0,1} and dot.1's result to
    {3,1,0,2} for dot.2: two copies. We lay dot.1 out so that dot.2 reads it
    directly and copy only p1: cheaper under the model (asserted strictly)."""
    r = _run(GPU, "TransposedDotOfDotLayout", "gpu")
    assert _mtm(_instr(r, "dot.2")[1].shape) == (3, 2, 1, 0)
    assert _mtm(r.module.entry.root_instruction.shape) == (2, 3, 0, 1)
    assert len(_copies(r)) <= 1
    assert r.objective < _score(_DOT_OF_DOT_XLA, "gpu")


# -- coverage guard ----------------------------------------------------------------------


def test_every_xla_case_is_tested():
    here = Path(__file__).parent
    sources = "".join((here / f).read_text()
                      for f in ("test_xla_cases.py", "test_xla_cases_more.py"))
    missing = []
    for folder in (GENERIC, GPU):
        for case in json.loads(Path(shared_path("xla-cases", folder, "cases.json")).read_text()):
            name = Path(case["file"]).stem
            if f'"{name}"' not in sources:
                missing.append(f"{folder}/{name}")
    assert missing == []
