"""Asynchronous wrappers, ``copy-start``/``copy-done``, and ops that need a host or peer.

The interpreter runs an async pair eagerly, which is what the pair means for
values:

* ``async-start(operands), calls=c`` runs ``c`` on the operands and produces
  ``((operands...), result, contexts...)`` (the start's tuple shape; contexts,
  e.g. ``s32[]`` or ``u32[]``, are zeros); ``async-update`` passes that tuple on;
  ``async-done`` extracts element 1, the result.
* ``<op>-start``/``<op>-update``/``<op>-done`` (XLA's sugar, e.g.
  ``custom-call-start(p), custom_call_target="foo"``) is the same with ``c`` a
  single ``<op>`` instruction carrying the start's attributes; it is supported
  exactly when ``<op>`` is (an unknown custom-call target gives the usual
  unsupported custom-call error). Ops with their own async forms
  (``all-reduce-start``, ``copy-start``, ...) keep them.
* ``copy-start(x)`` produces ``(copy of x, x, u32 context)`` (element 0 is the
  destination buffer) and ``copy-done`` extracts element 0.

``infeed``, ``outfeed``, ``send``, ``recv`` and their ``-done`` forms exchange
data with the host or another program, which a module alone does not describe:
executing one raises an :class:`InterpretError` that names the instruction and
says it needs a host/peer. :data:`PEER_OPCODES` lists them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

import numpy as np

from hlo.interpreter.machine import HANDLERS, Machine, computation_attr, error_at, register
from hlo.interpreter.values import Value, zeros_for
from hlo.ir import Instruction
from hlo.shape import TupleShape

#: Opcodes that need a host or a peer program (never executable alone).
PEER_OPCODES: Final[frozenset[str]] = frozenset(
    {"infeed", "outfeed", "send", "send-done", "recv", "recv-done"}
)

_SUFFIXES: Final[tuple[str, ...]] = ("-start", "-update", "-done")


def _start_value(instr: Instruction, ops: list[Value], result: Value) -> Value:
    shape = instr.shape
    if not isinstance(shape, TupleShape) or len(shape.elements) < 2:
        raise error_at(instr, "an async start must produce ((operands...), result, contexts...)")
    contexts = tuple(zeros_for(s) for s in shape.elements[2:])
    return (tuple(ops), result, *contexts)


@register("async-start")
def _async_start(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return _start_value(instr, ops, m.run(computation_attr(instr, "calls"), ops))


@register("async-update")
def _async_update(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return ops[0]


@register("async-done")
def _async_done(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return ops[0][1]


@register("copy-start")
def _copy_start(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    contexts = tuple(zeros_for(s) for s in instr.shape.elements[2:])
    return (np.array(ops[0]), ops[0], *contexts)


@register("copy-done")
def _copy_done(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return ops[0][0]


@register(*PEER_OPCODES)
def _needs_peer(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    raise error_at(
        instr,
        "needs a host/peer to exchange data with (infeed, outfeed, send and recv talk to the "
        "host or another program); the reference interpreter runs one module alone",
    )


def _sugar_start(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    wrapped = instr.opcode[: -len("-start")]
    if not isinstance(instr.shape, TupleShape) or len(instr.shape.elements) < 2:
        raise error_at(instr, "an async start must produce ((operands...), result, contexts...)")
    inner = replace(instr, opcode=wrapped, shape=instr.shape.elements[1])
    return _start_value(instr, ops, m.execute(inner, list(ops)))


def register_async_sugar() -> None:
    """Give every executable opcode without its own async forms XLA's ``-start/-update/-done`` sugar.

    Called once after every op module has registered (so the set is complete).
    """
    for opcode in sorted(HANDLERS):
        if opcode in PEER_OPCODES or opcode.startswith("async-") or opcode.endswith(_SUFFIXES):
            continue
        if any(opcode + suffix in HANDLERS for suffix in _SUFFIXES):
            continue
        HANDLERS[opcode + "-start"] = _sugar_start
        HANDLERS[opcode + "-update"] = _async_update
        HANDLERS[opcode + "-done"] = _async_done
