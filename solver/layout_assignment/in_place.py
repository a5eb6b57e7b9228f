"""Which elementwise ops XLA:CPU runs in place: its buffer assignment, predicted.

XLA:CPU's buffer assignment lets an elementwise op write its result into the buffer of an
operand that dies there. The loop XLA:CPU then emits reads and writes one buffer, and
LLVM's vectorizer guards such a loop with a runtime overlap check that sends exactly
aliased pointers to its scalar version: measured on jaxlib 0.10, an in-place ``tanh`` over
``f32[256,256]`` ran 7 times slower than the same op into a fresh buffer, an ``add`` 4
times (``hlo-layout calibrate`` measures the price per opcode). Layouts decide some of
this: a relayout ``copy`` between an operand and its consumer takes the consumer off the
operand's buffer, and XLA's own copies do the same.

:func:`in_place_reads` replays the part of XLA's ``BufferAssigner`` that decides it, on
the entry computation as written, in XLA:CPU's schedule (:func:`_schedule`; dead code
left out, as XLA removes it):

1. buffers sorted by decreasing size, live-out first, then by their defining
   instruction's position in a depth-first post order from the root;
2. each buffer joins the allocation of one of its operands, else an existing allocation
   (smallest first), when its live range interferes with nothing already there; a buffer
   that is neither assigned so nor live-out is a temporary;
3. temporaries are placed in schedule order; one shares the slot of a temporary operand
   that dies at it when the op may write over that operand.

Two live ranges do not interfere when one ends where the other begins and the later
instruction may reuse the earlier buffer: an elementwise op whose operand has its exact
shape, element type and layout (XLA's ``CanShareOperandBufferWithUser``). Copies never do.
An element of a tuple another op returns (a sort's, a library call's, read through
``get-tuple-element``) is that op's value, live from the op on and never written over by the
op reading it; a while loop's results stay in the buffer the loop carries its state in,
which nothing else joins (both from XLA's dumps: a sort, LAPACK calls, scan loops).

The replay is a prediction, checked against XLA's own buffer assignment: on the fidelity
modules' layout variants it agreed on 97.6 % of 18,603 elementwise ops (BENCHMARKS.md,
"In-place elementwise ops"); with reshapes and transposes that move no bytes read as
bitcasts, as XLA runs them, on 97.0 % of 5,427 ops of 12 modules' variants (the same as
before). It prices a module as written (``score``, the predicted ratios of ``measure``):
which op overwrites which depends on the copies a module has, so layout assignment, which
decides those copies, does not minimize it; it only picks, among its rewritten answers, the
one with the least predicted time where the cheapest has such writes.

Example: in ``a = add(p, p); t = tanh(a); ROOT r = negate(t)`` the result ``r`` is live
out; ``t`` joins ``r``'s allocation, then ``a`` joins it too (``t`` may overwrite ``a``):
``{"t": InPlace(0, "a"), "r": InPlace(0, "t")}``.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass

from hlo.bitcast import moves_no_bytes
from hlo.ir import Computation, Instruction
from hlo.opcode_facts import ELEMENTWISE
from hlo.shape import ArrayShape, element_bytes

__all__ = ["InPlace", "in_place_reads"]

#: Ops whose result is (part of) an operand's buffer, not a buffer of their own; so is a
#: reshape or transpose that moves no bytes (XLA writes it as a bitcast after layout
#: assignment).
_ALIASING = frozenset({"bitcast", "opt-barrier"})
#: Values in allocations of their own that no other value joins.
_READ_ONLY = frozenset({"parameter", "constant"})


@dataclass(frozen=True, slots=True)
class InPlace:
    """An elementwise op writes over operand ``operand`` (``name``): both in the allocation
    of a live-out buffer (step 2) or in one temporary's slot (step 3)."""

    operand: int
    name: str


def in_place_reads(comp: Computation) -> dict[str, InPlace]:
    """Elementwise instruction name -> the operand it is predicted to overwrite."""
    return _Replay(comp).run()


def _shareable(operand: ArrayShape, user: Instruction) -> bool:
    if user.opcode not in ELEMENTWISE or not isinstance(user.shape, ArrayShape):
        return False
    mine = user.shape
    return (mine.element_type == operand.element_type and mine.dims == operand.dims
            and _order(mine) == _order(operand))


def _order(shape: ArrayShape) -> tuple[int, ...] | None:
    return shape.layout.minor_to_major if shape.layout is not None else None


def _schedule(comp: Computation) -> tuple[list[Instruction], list[Instruction]]:
    """XLA:CPU's schedule of the instructions the root needs (the others are dead code XLA
    removes): first in, first out, each instruction once all its operands are scheduled.
    The queue starts with the parameters (by number), then the other instructions without
    operands; an instruction's users join it in the order of XLA's instruction list, a
    depth-first post order from the root. Returns the schedule and that list."""
    by = {i.name: i for i in comp.instructions}
    listed: list[Instruction] = []
    seen: set[str] = set()
    stack = [(comp.root_instruction.name, 0)]
    while stack:
        name, k = stack.pop()
        if name in seen:
            continue
        operands = [o for o in by[name].operands if o in by]
        if k < len(operands):
            stack.append((name, k + 1))
            if operands[k] not in seen:
                stack.append((operands[k], 0))
        else:
            seen.add(name)
            listed.append(by[name])
    params = sorted((i for i in comp.instructions if i.opcode == "parameter"),
                    key=lambda i: _number(i))
    listed = params + [i for i in listed if i.opcode != "parameter"]
    waiting = {i.name: len({o for o in i.operands if o in by}) for i in listed}
    users: dict[str, list[str]] = {}
    for instr in listed:
        for operand in dict.fromkeys(instr.operands):
            if operand in by:
                users.setdefault(operand, []).append(instr.name)
    queue = deque(i.name for i in listed if not waiting[i.name])
    order: list[Instruction] = []
    while queue:
        name = queue.popleft()
        order.append(by[name])
        for user in users.get(name, ()):
            waiting[user] -= 1
            if not waiting[user]:
                queue.append(user)
    return order, listed


def _number(param: Instruction) -> int:
    number = param.attr("parameter_number")
    return number if isinstance(number, int) else 0


class _Replay:
    def __init__(self, comp: Computation) -> None:
        self.by = {i.name: i for i in comp.instructions}
        self.order, self.listed = _schedule(comp)
        self.pos = {i.name: k for k, i in enumerate(self.order)}
        self.root = comp.root_instruction.name
        self.base: dict[str, str] = {}
        for instr in self.order:
            self.base[instr.name] = self._base_of(instr)
        self.values = [i for i in self.order
                       if self.base[i.name] == i.name and isinstance(i.shape, ArrayShape)]
        self.size = {v.name: math.prod(v.shape.dims) * element_bytes(v.shape.element_type)
                     for v in self.values}
        # Where each value's live range begins: an element of a tuple another op returns
        # (read through get-tuple-element) is that op's value, live from the op on.
        self.start = {v.name: self.pos[v.operands[0]]
                      if v.opcode == "get-tuple-element" and v.operands[0] in self.pos
                      else self.pos[v.name] for v in self.values}
        self.live_out = self._live_out()
        self.end = self._ends()

    def _base_of(self, instr: Instruction) -> str:
        if instr.operands and (instr.opcode in _ALIASING or moves_no_bytes(
                instr, getattr(self.by.get(instr.operands[0]), "shape", None))):
            return self.base.get(instr.operands[0], instr.operands[0])
        if instr.opcode == "get-tuple-element" and instr.operands:
            src = self.by.get(instr.operands[0])
            index = instr.attr("index")
            if src is not None and src.opcode == "tuple" and isinstance(index, int):
                if index < len(src.operands):
                    return self.base.get(src.operands[index], src.operands[index])
        return instr.name

    def _live_out(self) -> set[str]:
        out: set[str] = set()
        stack = [self.root]
        while stack:
            name = stack.pop()
            instr = self.by.get(name)
            if instr is None:
                continue
            if instr.opcode == "tuple":
                stack.extend(instr.operands)
            elif self.base[name] != name:
                stack.append(self.base[name])
            else:
                out.add(name)
        return out

    def _ends(self) -> dict[str, int]:
        end = {v.name: self.pos[v.name] for v in self.values}
        for instr in self.order:
            for operand in instr.operands:
                base = self.base.get(operand, operand)
                if base in end:
                    end[base] = max(end[base], self.pos[instr.name])
        last = len(self.order)
        for name in self.live_out:
            if name in end:
                end[name] = last
        return end

    def _may_overwrite(self, earlier: str, later: str) -> bool:
        """Does ``later`` (defined where ``earlier`` dies) reuse ``earlier``'s buffer?"""
        user = self.by[later]
        # An element of a tuple some op returns (a sort's, a custom-call's) is never written
        # over: measured, XLA gives the op reading it a buffer of its own.
        if self.by[earlier].opcode == "get-tuple-element":
            return False
        # The shape the user reads: a bitcast's (XLA compares the operand as its user sees it).
        return (earlier not in self.live_out
                and any(self.base.get(o, o) == earlier and o in self.by
                        and _shareable(self.by[o].shape, user) for o in user.operands))

    def interfere(self, a: str, b: str) -> bool:
        """Do the live ranges of values ``a`` and ``b`` keep them out of one buffer?"""
        if self.start[a] > self.start[b]:
            a, b = b, a
        if self.end[a] < self.start[b]:
            return False
        return not (self.end[a] == self.start[b] and self._may_overwrite(a, b))

    def run(self) -> dict[str, InPlace]:
        allocations, temps = self._assign()
        slot = self._place(temps)
        found: dict[str, InPlace] = {}
        for value in self.values:
            name = value.name
            if value.opcode not in ELEMENTWISE:
                continue
            for k, operand in enumerate(value.operands):
                base = self.base.get(operand, operand)
                if base == name or base not in self.size:
                    continue
                if (allocations.together(name, base)
                        or (name in slot and slot.get(base) == slot[name])):
                    found[name] = InPlace(k, operand)
                    break
        return found

    def _assign(self) -> tuple[_Allocations, set[str]]:
        """Step 2: buffers into allocations, largest first; the temporaries left over."""
        post = {instr.name: k for k, instr in enumerate(self.listed)}
        ranked = sorted(self.values, key=lambda v: (-self.size[v.name], v.name not in self.live_out,
                                                    post.get(v.name, 0)))
        allocations = _Allocations(self)
        temps: set[str] = set()
        for value in ranked:
            name = value.name
            if value.opcode in _READ_ONLY or self._loop_carried(value):
                allocations.new(name, growing=False)
                continue
            bases = [self.base.get(o, o) for o in value.operands]
            if any(allocations.join(allocations.home[b], name)
                   for b in bases if b in allocations.home):
                continue
            if any(allocations.join(index, name) for index in reversed(allocations.growing)):
                continue
            if name not in self.live_out:
                temps.add(name)
                continue
            allocations.new(name, growing=True)
        return allocations, temps

    def _loop_carried(self, value: Instruction) -> bool:
        """A while loop's result: XLA keeps it in the buffer the loop carries its state in
        (one allocation with the loop's operand and body), which nothing else joins."""
        return (value.opcode == "get-tuple-element"
                and getattr(self.by.get(value.operands[0]), "opcode", None) == "while")

    def _place(self, temps: set[str]) -> dict[str, str]:
        """Step 3: temporaries in schedule order; the slot (a value's name) of each."""
        slot: dict[str, str] = {}
        for value in self.values:
            name = value.name
            if name not in temps:
                continue
            slot[name] = name
            for operand in value.operands:
                base = self.base.get(operand, operand)
                if (base in slot and self.end[base] == self.start[name]
                        and self._may_overwrite(base, name)):
                    slot[name] = slot[base]
                    break
        return slot


class _Allocations:
    """Allocations and their members. Per allocation, the members' live ranges sorted by
    start: they do not overlap (beyond one ending where the next begins), so their ends are
    sorted too and an interference check looks at the few around the new range."""

    def __init__(self, replay: _Replay) -> None:
        self.replay = replay
        self.home: dict[str, int] = {}
        self.starts: list[list[int]] = []
        self.members: list[list[str]] = []
        self.sizes: list[int] = []
        self.growing: list[int] = []
        self._growing: set[int] = set()

    def new(self, name: str, growing: bool) -> None:
        self.starts.append([])
        self.members.append([])
        self.sizes.append(self.replay.size[name])
        index = len(self.members) - 1
        self._add(index, name)
        if growing:
            self.growing.append(index)
            self._growing.add(index)

    def join(self, index: int, name: str) -> bool:
        size = self.replay.size[name]
        if index not in self._growing or self.sizes[index] < size:
            return False
        if name in self.replay.live_out and self.sizes[index] != size:
            return False
        if self._clashes(index, name):
            return False
        self._add(index, name)
        return True

    def together(self, a: str, b: str) -> bool:
        """Do ``a`` and ``b`` share an allocation that values join (not a parameter's)?"""
        index = self.home.get(a)
        return index is not None and index in self._growing and self.home.get(b) == index

    def _add(self, index: int, name: str) -> None:
        at = bisect.bisect_right(self.starts[index], self.replay.start[name])
        self.starts[index].insert(at, self.replay.start[name])
        self.members[index].insert(at, name)
        self.home[name] = index

    def _clashes(self, index: int, name: str) -> bool:
        replay, members = self.replay, self.members[index]
        begin, end = replay.start[name], replay.end[name]
        k = bisect.bisect_right(self.starts[index], end) - 1
        while k >= 0 and replay.end[members[k]] >= begin:
            if replay.interfere(members[k], name):
                return True
            k -= 1
        return False
