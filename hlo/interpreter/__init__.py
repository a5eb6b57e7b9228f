"""The layout-aware reference interpreter: executes an HLO module with numpy.

``evaluate(module, args)`` runs the entry computation on logical numpy arrays
(tuples for tuple-shaped parameters) and returns its value. Semantics follow
XLA's operation semantics; only ``bitcast`` and width-changing
``bitcast-convert`` look at layouts, through the physical byte image (see
:mod:`hlo.interpreter.physical`), so a wrong bitcast gives wrong numbers.

Choices where HLO leaves freedom (documented in the op modules): float dots,
convolutions and add/multiply reductions accumulate in f64 and round once;
16-bit floats are rounded after every instruction; ``sort`` is stable.
``rng-bit-generator`` gives XLA's exact bits (:mod:`hlo.interpreter.random`);
the legacy ``rng`` op, seeded outside the module by XLA, is refused.

Collectives: ``evaluate`` runs the module as participant (replica 0, partition
0); a collective whose group holds other participants raises, and
``evaluate_participants`` runs every participant the header declares
(``replica_count x num_partitions``) as threads of this process, exchanging
values at each collective (see :mod:`hlo.interpreter.collectives`). Ops that
talk to the host or another program (:data:`PEER_OPCODES`) raise when run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

from hlo.interpreter import (  # noqa: F401  (registers the handlers)
    async_ops,
    batch_norm,
    collectives,
    control,
    custom_calls,
    dot_conv,
    elementwise,
    gather_scatter,
    random,
    reduce_ops,
    shape_ops,
    sort,
)
from hlo.interpreter.async_ops import PEER_OPCODES, register_async_sugar
from hlo.interpreter.budget import DEFAULT_MEMORY_LIMIT, MemoryBudgetError, check_memory
from hlo.interpreter.machine import HANDLERS, Machine
from hlo.interpreter.participants import Exchange, Participant, PeerFailure, World
from hlo.interpreter.values import TOKEN, InterpretError, Value, dtype_of
from hlo.ir import Instruction, Module

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "MemoryBudgetError",
    "PEER_OPCODES",
    "TOKEN",
    "InterpretError",
    "Machine",
    "Value",
    "dtype_of",
    "evaluate",
    "evaluate_participants",
    "supported_opcodes",
]

register_async_sugar()


def evaluate(
    module: Module,
    args: Sequence[Value],
    *,
    perturb: Callable[[Machine, Instruction, list[Value], Value], Value] | None = None,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
) -> Value:
    """Run ``module``'s entry computation on ``args`` (logical arrays, tuples).

    ``perturb``, when given, is applied to every instruction's result (see :mod:`hlo.shadow`).
    A module whose buffers may exceed ``memory_limit`` bytes is refused before anything runs
    (:class:`MemoryBudgetError`, see :mod:`hlo.interpreter.budget`).
    """
    check_memory(module, memory_limit)
    machine = Machine(module)
    machine.perturb = perturb
    with np.errstate(all="ignore"):
        return machine.run(module.entry, list(args))


def evaluate_participants(module: Module, args_per_participant: Sequence[Sequence[Value]]) -> list[Value]:
    """Run every participant of ``module`` (one argument list each) and return their results.

    Participants are ordered by flattened id ``replica * num_partitions + partition``;
    there must be exactly ``replica_count * num_partitions`` of them (module header).
    Each runs in its own thread; collectives exchange values between them. The
    first root-cause error (lowest participant id) is raised after all stopped.
    """
    world = World.of(module)
    check_memory(module, DEFAULT_MEMORY_LIMIT // max(world.size, 1))
    if len(args_per_participant) != world.size:
        raise InterpretError(
            f"module '{module.name}' has {world.size} participants (replica_count="
            f"{world.replica_count}, num_partitions={world.num_partitions}), "
            f"got arguments for {len(args_per_participant)}"
        )
    exchange = Exchange(world)
    results: list[Value] = [None] * world.size
    errors: list[Exception | None] = [None] * world.size

    def run(flat: int) -> None:
        me = Participant.from_flat(flat, world)
        error: Exception | None = None
        try:
            with np.errstate(all="ignore"):
                results[flat] = Machine(module, me, exchange).run(module.entry, list(args_per_participant[flat]))
        except Exception as exc:  # noqa: BLE001  (re-raised in the caller's thread below)
            error = errors[flat] = exc
        finally:
            exchange.finish(me, error)

    threads = [threading.Thread(target=run, args=(flat,), daemon=True) for flat in range(world.size)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    failures = [e for e in errors if e is not None]
    if failures:
        roots = [e for e in failures if not isinstance(e, PeerFailure)]
        raise (roots or failures)[0]
    return results


def supported_opcodes() -> frozenset[str]:
    """Opcodes the interpreter executes (the :data:`PEER_OPCODES` only raise)."""
    return (frozenset(HANDLERS) - PEER_OPCODES) | {"parameter"}
