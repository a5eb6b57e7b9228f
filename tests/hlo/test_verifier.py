"""Structural verifier: every real module is accepted, each rule rejects what it must.

Negative cases edit parsed real modules with ``dataclasses.replace`` (or use small
texts) and pin the instruction named and the line reported.
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import json
import time

import pytest
from conftest import shared_path

from hlo.errors import VerifyError
from hlo.ir import Computation, ComputationRef, Instruction, Module, ProgramShape
from hlo.parser import parse_module, parse_modules, read_text
from hlo.shape import ArrayShape
from hlo.verifier import collect_errors, verify_module

CORPUS_FILES = sorted(glob.glob(str(shared_path("corpus") / "*.hlo*")))
XLA_FILES = sorted(glob.glob(str(shared_path("xla-cases", "files") / "*.hlo")))
INVALID_CONCAT = str(shared_path("xla-cases", "files", "tools__tests__data__invalid_concat.hlo"))


@functools.lru_cache(maxsize=None)
def parsed(path: str) -> tuple[Module, ...]:
    """Every module of ``path`` (``// -----`` separated parts included), parsed once."""
    return tuple(parse_modules(read_text(path), path))


def corpus(stage: str) -> list[str]:
    return [f for f in CORPUS_FILES if f".{stage}.hlo" in f]


def test_the_data_is_there():
    assert len(CORPUS_FILES) == 38 * 5 and len(XLA_FILES) == 38


@pytest.mark.parametrize("path", CORPUS_FILES + [f for f in XLA_FILES if f != INVALID_CONCAT],
                         ids=lambda p: p.rsplit("/", 1)[-1])
def test_real_modules_are_accepted(path):
    for module in parsed(path):
        assert collect_errors(module) == []


def xla_test_case_files() -> list[str]:
    """The .hlo files of XLA's parser (must-parse cases) and layout pass test suites."""
    out = []
    for folder in ("hlo_parser_test", "layout_assignment_test", "gpu_layout_assignment_test",
                   "layout_normalization_test", "reduction_layout_normalizer_test"):
        base = shared_path("xla-cases", folder)
        for case in json.loads((base / "cases.json").read_text()):
            if case.get("file") and case.get("expect", "parse_ok") == "parse_ok":
                out.append(str(base / case["file"]))
    return sorted(set(out))


#: The one XLA test input that is not a valid module: its transpose turns f64 into f32
#: (the upstream pass test never runs the verifier on its input).
PHYSICAL_TRANSPOSE = "layout_normalization_test/PhysicalTranspose.hlo"


def test_xla_test_suite_modules_are_accepted():
    files = xla_test_case_files()
    assert len(files) > 100
    for path in files:
        for module in parsed(path):
            errors = collect_errors(module)
            if path.endswith(PHYSICAL_TRANSPOSE):
                assert len(errors) == 1 and "instruction 't'" in errors[0].message
                assert "f64[5,4,3]" in errors[0].message
            else:
                assert errors == [], path


def test_invalid_concat_is_rejected_naming_the_instruction():
    (module,) = parsed(INVALID_CONCAT)
    with pytest.raises(VerifyError) as info:
        verify_module(module, source_name="invalid_concat.hlo")
    err = info.value
    assert "'cat.3'" in err.message and "concatenate" in err.message
    assert (err.location.name, err.location.line, err.location.column) == (
        "invalid_concat.hlo", 6, 3)


def test_large_module_verifies_fast():
    (module,) = parsed(str(shared_path("corpus", "gpt_train_12l.after_layout.hlo.gz")))
    start = time.perf_counter()
    collect_errors(module)
    # Not a benchmark: a generous bound that still catches accidental quadratic work.
    assert time.perf_counter() - start < 5.0


# ---------------------------------------------------------------------------
# Editing real modules
# ---------------------------------------------------------------------------

MLP = str(shared_path("corpus", "mlp_train.after_layout.hlo"))


def replace_instruction(module: Module, comp_name: str, target: str, **changes) -> Module:
    comps = []
    for comp in module.computations:
        if comp.name == comp_name:
            comp = dataclasses.replace(comp, instructions=tuple(
                dataclasses.replace(i, **changes) if i.name == target else i
                for i in comp.instructions))
        comps.append(comp)
    return dataclasses.replace(module, computations=tuple(comps))


def first(module: Module, opcode: str, *,
          rank: int | None = None) -> tuple[Computation, Instruction]:
    for comp in module.computations:
        for instr in comp.instructions:
            if instr.opcode == opcode and (rank is None or (
                    isinstance(instr.shape, ArrayShape) and instr.shape.rank == rank)):
                return comp, instr
    raise LookupError(opcode)


def single_error(module: Module) -> VerifyError:
    errors = collect_errors(module, source_name="m.hlo")
    assert len(errors) >= 1
    return errors[0]


def assert_names(err: VerifyError, comp: Computation, instr: Instruction, fragment: str) -> None:
    assert f"computation '{comp.name}'" in err.message
    assert f"instruction '{instr.name}'" in err.message
    assert fragment in err.message
    assert err.location is not None and err.location.line == instr.span.line
    assert err.location.column == instr.span.column


def test_wrong_result_shape():
    (module,) = parsed(MLP)
    comp, add = first(module, "add", rank=2)
    dims = add.shape.dims
    bad = replace_instruction(module, comp.name, add.name,
                              shape=ArrayShape("f32", (dims[0] + 1, dims[1])))
    err = single_error(bad)
    assert_names(err, comp, add, "does not match the shape")


def test_unknown_operand():
    (module,) = parsed(MLP)
    comp, add = first(module, "add", rank=2)
    bad = replace_instruction(module, comp.name, add.name, operands=(add.operands[0], "ghost"))
    assert_names(single_error(bad), comp, add, "unknown operand 'ghost'")


def test_use_before_definition():
    (module,) = parsed(MLP)
    comp, add = first(module, "add", rank=2)
    producer = add.operands[0]
    # Move the producer to just after its user.
    instrs = [i for i in comp.instructions if i.name != producer]
    k = next(j for j, i in enumerate(instrs) if i.name == add.name)
    instrs.insert(k + 1, comp.instruction(producer))
    bad_comp = dataclasses.replace(comp, instructions=tuple(instrs))
    bad = dataclasses.replace(module, computations=tuple(
        bad_comp if c.name == comp.name else c for c in module.computations))
    errors = collect_errors(bad)
    assert any(f"instruction '{add.name}'" in e.message
               and f"operand '{producer}' is used before its definition" in e.message
               and e.location.line == add.span.line for e in errors)


def test_duplicate_name():
    (module,) = parsed(MLP)
    comp, add = first(module, "add", rank=2)
    earlier = comp.instructions[0].name
    bad = replace_instruction(module, comp.name, add.name, name=earlier)
    errors = collect_errors(bad)
    assert any(f"instruction '{earlier}'" in e.message and "already defined" in e.message
               and e.location.line == add.span.line for e in errors)


def test_wrong_operand_count():
    (module,) = parsed(MLP)
    comp, add = first(module, "add", rank=2)
    bad = replace_instruction(module, comp.name, add.name, operands=add.operands * 2)
    assert_names(single_error(bad), comp, add, "add takes 2 operand(s), got 4")


def test_missing_called_computation():
    (module,) = parsed(MLP)
    comp, reduce = first(module, "reduce")
    attrs = tuple((k, ComputationRef("nowhere") if k == "to_apply" else v)
                  for k, v in reduce.attributes)
    bad = replace_instruction(module, comp.name, reduce.name, attributes=attrs)
    assert_names(single_error(bad), comp, reduce, "calls unknown computation 'nowhere'")


def test_callee_arity():
    text = SMALL.replace("  b = f32[] parameter(1)\n",
                         "  b = f32[] parameter(1)\n  c = f32[] parameter(2)\n")
    err = single_error(parse_module(text, "s.hlo"))
    assert "instruction 'r'" in err.message
    assert "must take 2 parameter(s), it takes 3" in err.message
    assert err.location.line == 13


def test_callee_defined_after_use():
    (module,) = parsed(MLP)
    comp, reduce = first(module, "reduce")
    callee = reduce.attr("to_apply").name
    comps = [c for c in module.computations if c.name != callee] + [module.computation(callee)]
    errors = collect_errors(dataclasses.replace(module, computations=tuple(comps)))
    assert any(f"instruction '{reduce.name}'" in e.message and "before it is defined" in e.message
               for e in errors)


def test_parameter_numbers():
    (module,) = parsed(MLP)
    entry = module.entry
    p0, p1 = entry.parameter_instructions()[:2]
    attrs = tuple((k, 0 if k == "parameter_number" else v) for k, v in p1.attributes)
    err = single_error(replace_instruction(module, entry.name, p1.name, attributes=attrs))
    assert_names(err, entry, p1, "parameter number 0 is already used")


def test_root_must_exist_and_entry_is_unique():
    (module,) = parsed(MLP)
    entry = module.entry
    bad = dataclasses.replace(module, computations=tuple(
        dataclasses.replace(c, root="nothing") if c.is_entry else c for c in module.computations))
    assert any("root 'nothing'" in e.message for e in collect_errors(bad))
    two = dataclasses.replace(module, computations=tuple(
        dataclasses.replace(c, is_entry=True) if i == 0 else c
        for i, c in enumerate(module.computations)))
    assert any("second ENTRY" in e.message and entry.name in e.message
               for e in collect_errors(two))


def test_entry_computation_layout_must_match():
    (module,) = parsed(MLP)
    layout = module.attr("entry_computation_layout")
    params = (ArrayShape("f32", (7,)),) + layout.parameters[1:]
    attrs = tuple((k, ProgramShape(params, layout.result) if k == "entry_computation_layout"
                   else v) for k, v in module.attributes)
    errors = collect_errors(dataclasses.replace(module, attributes=attrs))
    p0 = module.entry.parameter_instructions()[0]
    assert any(f"instruction '{p0.name}'" in e.message and "entry_computation_layout" in e.message
               for e in errors)


# ---------------------------------------------------------------------------
# Small texts
# ---------------------------------------------------------------------------

SMALL = """HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  p = f32[4,5] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[4] reduce(p, z), dimensions={1}, to_apply=add
}
"""


def test_small_text_is_valid_and_reduce_dims_are_checked():
    verify_module(parse_module(SMALL, "s.hlo"))
    bad = SMALL.replace("dimensions={1}", "dimensions={0}")
    with pytest.raises(VerifyError) as info:
        verify_module(parse_module(bad, "s.hlo"), source_name="s.hlo")
    assert "instruction 'r'" in info.value.message
    assert (info.value.location.line, info.value.location.column) == (12, 3)


def test_collect_errors_reports_every_error():
    text = SMALL.replace("ROOT s = f32[] add(a, b)", "ROOT s = f32[2] add(a, b)").replace(
        "dimensions={1}", "dimensions={0}")
    errors = collect_errors(parse_module(text, "s.hlo"))
    assert [e.location.line for e in errors] == [6, 12]
