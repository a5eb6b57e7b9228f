"""Buffers: the arrays that carry layouts, after forwarding ops are seen through.

A *position* is one array leaf of one instruction's result:
``(computation, instruction, tuple index path)``. Positions that must hold the
same bytes form one :class:`Buffer` (union-find):

* ``tuple``: element ``i`` is operand ``i``; ``get-tuple-element``: the result
  is element ``index`` of the operand; ``opt-barrier``, ``domain`` and
  ``add-dependency`` forward operand 0;
* ``while``: result = body parameter = condition parameter (the loop-carried
  buffer). The init operand and the body root are *writes into* that buffer,
  not members of it: a layout mismatch there is a copy, as XLA inserts one.

Calls, conditionals and fusions do not share buffers across their boundary
for the same reason: callee parameters and results are their own buffers, and
a computation called from several sites has one parameter buffer for all of
them. ``f32[8,16]`` parameter ``p`` and ``gte = get-tuple-element(t), index=1``
of ``t = tuple(x, p)`` share one buffer.

Per buffer, :attr:`Buffer.writes` counts the members that produce data (not
forwarding ops, not callee parameters) and :attr:`Buffer.reads` the operand
uses by instructions that read data; the cost model charges tile padding per
write and per read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hlo.ir import Instruction, Module
from hlo.shape import ArrayShape, Shape, TupleShape, leaf_arrays

__all__ = ["Buffer", "BufferAnalysis", "FORWARDING", "Position", "analyze_buffers", "is_reader"]

#: ``(computation, instruction, path)``: one array leaf of one result.
Position = tuple[str, str, tuple[int, ...]]

#: Opcodes whose result leaves are (some of) their operands' leaves.
FORWARDING = frozenset({"tuple", "get-tuple-element", "opt-barrier", "domain", "add-dependency"})

#: Consumers that pass a value across a computation boundary without reading it.
_BOUNDARY = frozenset({"while", "call", "conditional", "fusion", "async-start"})


def is_reader(opcode: str) -> bool:
    """Whether an operand use by ``opcode`` reads the operand's bytes."""
    return opcode not in FORWARDING and opcode not in _BOUNDARY


@dataclass(frozen=True, slots=True)
class Buffer:
    """One array in memory: its positions (text order), shape, writes and reads."""

    id: int
    shape: ArrayShape
    members: tuple[Position, ...]
    writes: int
    reads: int


@dataclass(frozen=True, slots=True)
class BufferAnalysis:
    buffers: tuple[Buffer, ...]
    position_buffer: dict[Position, int] = field(compare=False)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[Position, Position] = {}

    def add(self, x: Position) -> None:
        self.parent.setdefault(x, x)

    def find(self, x: Position) -> Position:
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: Position, b: Position) -> None:
        if a in self.parent and b in self.parent:
            ra, rb = self.find(a), self.find(b)
            if ra != rb:
                self.parent[rb] = ra


def _ref_name(value: object) -> str | None:
    if isinstance(value, tuple) and len(value) == 1:
        value = value[0]
    return getattr(value, "name", None)


def _union_shapes(uf: _UnionFind, a: tuple[str, str], a_prefix: tuple[int, ...], shape: Shape,
                  b: tuple[str, str], b_prefix: tuple[int, ...]) -> None:
    for path, _ in leaf_arrays(shape):
        uf.union((*a, a_prefix + path), (*b, b_prefix + path))


def analyze_buffers(module: Module) -> BufferAnalysis:
    """Group every array position of ``module`` into buffers (deterministic ids)."""
    uf = _UnionFind()
    order: list[Position] = []
    comps = {c.name: c for c in module.computations}
    for comp in module.computations:
        for instr in comp.instructions:
            for path, _ in leaf_arrays(instr.shape):
                pos = (comp.name, instr.name, path)
                uf.add(pos)
                order.append(pos)
    for comp in module.computations:
        shapes = {i.name: i.shape for i in comp.instructions}
        for instr in comp.instructions:
            here = (comp.name, instr.name)
            op = instr.opcode
            if op == "tuple":
                for i, name in enumerate(instr.operands):
                    _union_shapes(uf, here, (i,), shapes.get(name, TupleShape(())),
                                  (comp.name, name), ())
            elif op == "get-tuple-element" and instr.operands:
                _union_shapes(uf, here, (), instr.shape, (comp.name, instr.operands[0]),
                              (int(instr.attr("index", 0)),))
            elif op in ("opt-barrier", "domain", "add-dependency") and instr.operands:
                _union_shapes(uf, here, (), instr.shape, (comp.name, instr.operands[0]), ())
            elif op == "while":
                for attr in ("body", "condition"):
                    callee = comps.get(_ref_name(instr.attr(attr)) or "")
                    if callee is None:
                        continue
                    params = callee.parameter_instructions()
                    if params:
                        _union_shapes(uf, here, (), instr.shape, (callee.name, params[0].name), ())
    entry = module.entry.name
    # Every position's root, found once (the unions are all made).
    roots = [(pos, uf.find(pos)) for pos in order]
    root_of = dict(roots)
    groups: dict[Position, list[Position]] = {}
    for pos, root in roots:
        groups.setdefault(root, []).append(pos)
    writes: dict[Position, int] = {}
    by_name = {c.name: {i.name: i for i in c.instructions} for c in module.computations}
    for pos, root in roots:
        instr = by_name[pos[0]][pos[1]]
        if _is_writer(instr, pos[0] == entry):
            writes[root] = writes.get(root, 0) + 1
    reads: dict[Position, int] = {}
    for comp in module.computations:
        shapes = {i.name: i.shape for i in comp.instructions}
        for instr in comp.instructions:
            if not is_reader(instr.opcode):
                continue
            for name in instr.operands:
                for path, _ in leaf_arrays(shapes.get(name, TupleShape(()))):
                    root = root_of[(comp.name, name, path)]
                    reads[root] = reads.get(root, 0) + 1
    buffers: list[Buffer] = []
    position_buffer: dict[Position, int] = {}
    seen: dict[Position, int] = {}
    for _, root in roots:
        if root in seen:
            continue
        members = tuple(groups[root])
        first = members[0]
        shape = _leaf_shape(by_name[first[0]][first[1]].shape, first[2])
        bid = len(buffers)
        seen[root] = bid
        buffers.append(Buffer(bid, shape, members, writes.get(root, 0), reads.get(root, 0)))
        for m in members:
            position_buffer[m] = bid
    return BufferAnalysis(tuple(buffers), position_buffer)


def _is_writer(instr: Instruction, in_entry: bool) -> bool:
    if instr.opcode in FORWARDING or instr.opcode == "while":
        return False
    if instr.opcode == "parameter":
        return in_entry
    return True


def _leaf_shape(shape: Shape, path: tuple[int, ...]) -> ArrayShape:
    for i in path:
        shape = shape.elements[i]  # type: ignore[union-attr]  # paths come from value_leaves
    if not isinstance(shape, ArrayShape):
        shape = shape.array  # BufferShape
    return shape
