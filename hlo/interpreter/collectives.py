"""Collectives: ``all-reduce``, ``all-gather``, ``reduce-scatter``, ``all-to-all``,
``collective-permute``, ``collective-broadcast``, ``replica-id``, ``partition-id``
and the asynchronous ``-start``/``-done`` pairs of the first three kinds.

Who meets whom is decided by :mod:`hlo.interpreter.participants`. A machine
running alone (``evaluate``) is participant (replica 0, partition 0); a
collective whose group is that participant alone runs locally, with XLA's
one-participant results:

* ``all-reduce``: the operand itself (one contribution; the reducer is never applied);
* ``all-gather``, ``reduce-scatter``, ``all-to-all``, ``collective-broadcast``: the
  operand (the shapes are equal when the group has one member);
* ``collective-permute``: the operand when a pair ``{0,0}`` targets this
  participant, zeros when no pair targets it;
* ``replica-id`` and ``partition-id``: ``0`` (u32).

A group with more members needs all of them: alone, the machine raises an
:class:`InterpretError` naming how many participants the module needs;
:func:`hlo.interpreter.evaluate_participants` runs them all as threads of one
process. Semantics with several participants (rank = position in the group):

* ``all-reduce``: ``to_apply`` folds the contributions left to right in rank
  order, elementwise; ``reduce-scatter`` does the same and keeps slice ``rank`` of
  ``dimensions``; ``all-gather`` concatenates the contributions along ``dimensions``;
* ``all-to-all`` with ``dimensions={d}``: the operand is cut into group-size
  chunks along ``d``, chunk ``j`` goes to rank ``j``, the result concatenates the
  received chunks in sender rank order; without ``dimensions`` operand ``j`` goes
  to rank ``j`` and result element ``i`` came from rank ``i``;
* ``collective-broadcast``: every member gets the first member's operand;
  participants in no group get zeros;
* ``collective-permute``: the value of the source of the pair targeting this
  participant, zeros when none does.

Every variadic form (several operands) applies per operand and returns a tuple.
Async forms: ``all-reduce-start`` produces the all-reduce result and
``all-reduce-done`` passes it on; ``all-gather-start`` produces
``(operands, results)`` and ``collective-permute-start`` ``(operand, result,
contexts...)``; their ``-done`` extracts element 1.
The in-place ``collective-permute`` (input and output buffers with offsets and
``slice_sizes``) is not supported and says so.
"""

from __future__ import annotations

import numpy as np

from hlo.interpreter.machine import Machine, computation_attr, error_at, ints, register
from hlo.interpreter.participants import Participant, group_of, permute_space
from hlo.interpreter.values import Value, zeros_for
from hlo.ir import Instruction
from hlo.shape import TupleShape


def _needs_peers(m: Machine, instr: Instruction, count: int) -> Exception:
    world = m.participant.world
    return error_at(
        instr,
        f"needs {count} participants in its group but runs alone; the module declares "
        f"replica_count={world.replica_count}, num_partitions={world.num_partitions} "
        f"({world.size} participant(s)): run every participant with "
        "hlo.interpreter.evaluate_participants(module, args_per_participant)",
    )


def _check_implied(m: Machine, instr: Instruction, operand: np.ndarray, result_dims: tuple[int, ...], dim: int, group: tuple[Participant, ...], gathers: bool) -> None:
    """The shapes fix the group size (result = operand x size along ``dim`` for a gather)."""
    small, big = (operand.shape[dim], result_dims[dim]) if gathers else (result_dims[dim], operand.shape[dim])
    if small * len(group) != big:
        implied = big // small if small and big % small == 0 else "an impossible number of"
        world = m.participant.world
        raise error_at(
            instr,
            f"its shapes imply {implied} participants per group along dimension {dim}, but the module "
            f"header (replica_count={world.replica_count}, num_partitions={world.num_partitions}) "
            f"gives its group {len(group)}",
        )


def _result_dims(instr: Instruction, k: int) -> tuple[int, ...]:
    shape = _result_shape(instr)
    if isinstance(shape, TupleShape):
        shape = shape.elements[k]
    return tuple(shape.dims)


def exchange(m: Machine, instr: Instruction, group: tuple[Participant, ...], value: Value) -> list[Value]:
    """Every group member's ``value`` in group order (``me`` included)."""
    me = m.participant
    if group == (me,):
        return [value]
    if m.exchange is None:
        raise _needs_peers(m, instr, len(group))
    if me not in group:
        raise error_at(instr, f"participant {me.flat} is not in its own group")
    count = m.occurrences.get(instr.name, 0)
    m.occurrences[instr.name] = count + 1
    return m.exchange.swap((instr.name, count), me, group, value)


def _rank(m: Machine, group: tuple[Participant, ...]) -> int:
    return group.index(m.participant)


def _variadic(instr: Instruction, results: list[np.ndarray]) -> Value:
    return tuple(results) if isinstance(instr.shape, TupleShape) else results[0]


def _reduce_contributions(m: Machine, instr: Instruction, contributions: list[list[np.ndarray]]) -> list[np.ndarray]:
    """Fold each operand's contributions (``contributions[rank][operand]``) in rank order."""
    if len(contributions) == 1:
        return [x.copy() for x in contributions[0]]
    name = computation_attr(instr, "to_apply")
    out = []
    for k in range(len(contributions[0])):
        acc = contributions[0][k]
        for rank in range(1, len(contributions)):
            acc = np.asarray(m.apply_scalar(name, [acc, contributions[rank][k]]))
        out.append(acc)
    return out


def all_reduce(m: Machine, instr: Instruction, ops: list[Value]) -> list[np.ndarray]:
    group = group_of(instr, m.participant)
    return _reduce_contributions(m, instr, exchange(m, instr, group, list(ops)))


def all_gather(m: Machine, instr: Instruction, ops: list[Value]) -> list[np.ndarray]:
    dim = ints(instr, "dimensions")[0]
    group = group_of(instr, m.participant)
    for k, x in enumerate(ops):
        _check_implied(m, instr, x, _result_dims(instr, k), dim, group, gathers=True)
    contributions = exchange(m, instr, group, list(ops))
    return [np.concatenate([c[k] for c in contributions], axis=dim) for k in range(len(ops))]


def collective_permute(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    """The permuted operand (a tuple of them for the combined, several-operand form)."""
    if instr.has_attr("slice_sizes") or any(isinstance(x, tuple) for x in ops):
        raise error_at(instr, "the in-place collective-permute (input/output buffers and offsets) is not supported")
    pairs = tuple(tuple(int(i) for i in p) for p in instr.attr("source_target_pairs", ()))
    space, own = permute_space(instr, m.participant)
    if any(i >= len(space) for p in pairs for i in p):
        needed = max(i for p in pairs for i in p) + 1
        raise error_at(
            instr,
            f"source_target_pairs name ids up to {needed - 1}, but the module header declares "
            f"{len(space)} along this axis",
        )
    sources = [s for s, t in pairs if t == own]
    if len(sources) > 1:
        raise error_at(instr, f"id {own} is the target of {len(sources)} pairs")
    if len(space) == 1 or all(s == own and t == own for s, t in pairs):
        values = {own: list(ops)}
    else:
        values = dict(enumerate(exchange(m, instr, space, list(ops))))
    shape = _result_shape(instr)
    if not sources:
        return zeros_for(shape)
    received = [np.array(x) for x in values[sources[0]]]
    return tuple(received) if isinstance(shape, TupleShape) else received[0]


def _result_shape(instr: Instruction):
    """The shape of the collective's result (element 1 of a ``-start`` tuple, except all-reduce's)."""
    shape = instr.shape
    if instr.opcode in ("all-gather-start", "collective-permute-start"):
        return shape.elements[1]
    return shape


@register("all-reduce", "all-reduce-start")
def _all_reduce(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return _variadic(instr, all_reduce(m, instr, ops))


@register("all-gather")
def _all_gather(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return _variadic(instr, all_gather(m, instr, ops))


@register("all-gather-start")
def _all_gather_start(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    results = all_gather(m, instr, ops)
    if len(ops) == 1:
        return (ops[0], results[0])
    return (tuple(ops), tuple(results))


@register("collective-permute")
def _collective_permute(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return collective_permute(m, instr, ops)


@register("collective-permute-start")
def _collective_permute_start(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    result = collective_permute(m, instr, ops)
    contexts = tuple(zeros_for(s) for s in instr.shape.elements[2:])
    return (ops[0] if len(ops) == 1 else tuple(ops), result, *contexts)


@register("all-reduce-done")
def _all_reduce_done(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return ops[0]


@register("all-gather-done", "collective-permute-done")
def _element_one(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return ops[0][1]


@register("reduce-scatter")
def _reduce_scatter(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    dim = ints(instr, "dimensions")[0]
    group = group_of(instr, m.participant)
    for k, x in enumerate(ops):
        _check_implied(m, instr, x, _result_dims(instr, k), dim, group, gathers=False)
    reduced = _reduce_contributions(m, instr, exchange(m, instr, group, list(ops)))
    rank = _rank(m, group)
    out = []
    for x in reduced:
        size = x.shape[dim] // len(group)
        out.append(np.take(x, np.arange(rank * size, (rank + 1) * size), axis=dim))
    return _variadic(instr, out)


@register("all-to-all")
def _all_to_all(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    group = group_of(instr, m.participant)
    n = len(group)
    if instr.has_attr("dimensions"):
        dim = ints(instr, "dimensions")[0]
        if len(ops) != 1:
            raise error_at(instr, "an array all-to-all takes one operand")
        if ops[0].shape[dim] % n:
            raise error_at(instr, f"dimension {dim} ({ops[0].shape[dim]}) does not split into {n} chunks")
        chunks = np.split(ops[0], n, axis=dim)
        received = [c[_rank(m, group)] for c in exchange(m, instr, group, chunks)]
        return np.concatenate(received, axis=dim)
    if len(ops) != n:
        raise error_at(instr, f"a tuple all-to-all takes one operand per group member ({n}), got {len(ops)}")
    received = [c[_rank(m, group)] for c in exchange(m, instr, group, list(ops))]
    return tuple(np.array(x) for x in received)


@register("collective-broadcast")
def _collective_broadcast(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    group = group_of(instr, m.participant, absent_ok=True)
    if not group:
        return _variadic(instr, [np.zeros_like(x) for x in ops])
    contributions = exchange(m, instr, group, list(ops))
    return _variadic(instr, [np.array(x) for x in contributions[0]])


@register("replica-id")
def _replica_id(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return np.asarray(m.participant.replica, np.uint32)


@register("partition-id")
def _partition_id(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return np.asarray(m.participant.partition, np.uint32)
