"""Loading the normalization cases of ``xla-cases/`` the way XLA's tests parse them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from conftest import shared_path

from hlo.ir import Module, ProgramShape
from hlo.parser import parse_module
from hlo.shape import ArrayShape, default_layout

#: Upstream typos that XLA's test never verified, fixed so the module is valid
#: HLO: ``PhysicalTranspose`` transposes an f64 parameter into an f32 result.
TEXT_FIXES = {
    "PhysicalTranspose.hlo": [("f64[3,4,5]{0,1,2} parameter(0)", "f32[3,4,5]{0,1,2} parameter(0)")],
}
CHECK_FIXES = {
    "PhysicalTranspose.hlo": [("f64[5,4,3]", "f32[5,4,3]")],
}


def cases(folder: str) -> list[dict]:
    path = shared_path("xla-cases", folder, "cases.json")
    out = []
    for case in json.loads(path.read_text()):
        case = dict(case)
        for old, new in CHECK_FIXES.get(case.get("file") or "", []):
            case["expected_filecheck"] = (case.get("expected_filecheck") or "").replace(old, new)
        out.append(case)
    return out


def load(folder: str, file: str) -> Module:
    """Parse a case file with XLA's parser conventions: an instruction written
    without a shape gets its operand's layout (shape inference of elementwise
    ops keeps the layout), anything else without a layout the default one."""
    text = Path(shared_path("xla-cases", folder, file)).read_text()
    for old, new in TEXT_FIXES.get(file, []):
        text = text.replace(old, new)
    module = parse_module(text, file)
    computations = []
    for comp in module.computations:
        shapes: dict[str, object] = {}
        instructions = []
        for instr in comp.instructions:
            shape = instr.shape
            if isinstance(shape, ArrayShape) and shape.layout is None:
                inherited = next(
                    (
                        shapes[o]
                        for o in instr.operands
                        if isinstance(shapes.get(o), ArrayShape)
                        and shapes[o].dims == shape.dims
                        and shapes[o].layout is not None
                    ),
                    None,
                )
                layout = inherited.layout if inherited is not None else default_layout(shape.rank)
                shape = shape.with_layout(layout)
                instr = dataclasses.replace(instr, shape=shape)
            shapes[instr.name] = shape
            instructions.append(instr)
        computations.append(dataclasses.replace(comp, instructions=tuple(instructions)))
    module = dataclasses.replace(module, computations=tuple(computations))
    entry = module.entry
    layout = ProgramShape(
        tuple(p.shape for p in entry.parameter_instructions()), entry.root_instruction.shape
    )
    attributes = tuple(
        (k, layout if k == "entry_computation_layout" else v) for k, v in module.attributes
    )
    return dataclasses.replace(module, attributes=attributes)
