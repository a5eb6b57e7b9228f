"""XLA:CPU's own buffer assignment of a laid-out module: which elementwise ops it runs in place.

The oracle for :mod:`solver.layout_assignment.in_place`: the module runs once on the execution
path (:func:`service.xla.execution.run_modules`) with ``--xla_dump_to``, and the dumped
buffer assignment and schedule are read back. An elementwise op runs in place where its result
and an operand get the same slice (allocation and offset; a bitcast operand has the slice of
the buffer it views).

    xla_in_place(module)  -> {"mul": ["add"], "tanh": ["mul"], "sub": []}
"""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile

from hlo.ir import Module
from hlo.opcode_facts import ELEMENTWISE
from service.xla.errors import XlaError
from service.xla.execution import run_modules
from service.xla.stages import read_dump

__all__ = ["xla_in_place"]

#: The name the module is compiled under, to find its dumps among XLA's other modules'.
_NAME = "in_place_oracle"

_ALLOCATION = re.compile(r"allocation (\d+):")
_VALUE = re.compile(r"\s*value: <\d+ (\S+) @\S*> \(size=\d+,offset=(\d+)\)")
_INSTRUCTION = re.compile(r"\s*(?:ROOT )?%(\S+) = \S+ ([\w-]+)\((.*?)\)")


def xla_in_place(module: Module) -> dict[str, list[str]]:
    """Every elementwise op XLA keeps in the entry computation -> the operands whose slice
    its result shares (empty: a fresh buffer). Raises :class:`XlaError` when XLA refuses the
    module."""
    with tempfile.TemporaryDirectory() as folder:
        previous = os.environ.get("XLA_FLAGS")
        os.environ["XLA_FLAGS"] = f"{previous or ''} --xla_dump_to={folder}".strip()
        try:
            run = run_modules([("module", dataclasses.replace(module, name=_NAME))],
                              outputs=False)
        finally:
            if previous is None:
                del os.environ["XLA_FLAGS"]
            else:
                os.environ["XLA_FLAGS"] = previous
        if run.executions[0].refusal is not None:
            raise XlaError(run.executions[0].refusal)
        # The module's own dumps: XLA also compiles helpers (one that lays out the inputs).
        assigned = read_dump(folder, f"*.{_NAME}.cpu_after_optimizations-buffer-assignment.txt")
        scheduled = read_dump(folder, f"*.{_NAME}.cpu_after_optimizations.txt")
    where: dict[str, tuple[int, int]] = {}
    allocation = -1
    for line in assigned.splitlines():
        if m := _ALLOCATION.match(line):
            allocation = int(m.group(1))
        elif m := _VALUE.match(line):
            where.setdefault(m.group(1), (allocation, int(m.group(2))))
    out: dict[str, list[str]] = {}
    for line in scheduled[scheduled.index("ENTRY"):].splitlines():
        m = _INSTRUCTION.match(line)
        if not m:
            continue
        operands = re.findall(r"%([\w.\-]+)", m.group(3))
        if m.group(2) == "bitcast" and operands and operands[0] in where:
            where.setdefault(m.group(1), where[operands[0]])  # its operand's slice
        elif m.group(2) in ELEMENTWISE and m.group(1) in where:
            out[m.group(1)] = [o for o in operands if where.get(o) == where[m.group(1)]]
    return out

