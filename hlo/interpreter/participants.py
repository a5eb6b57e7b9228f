"""Who takes part in a collective: replica/partition ids, groups, and the exchange.

A module runs on ``replica_count x num_partitions`` participants (both read from
the module header, default 1). Participant ``(replica r, partition p)`` has the
flattened id ``r * num_partitions + p`` (XLA's device-id order).

What the ids inside ``replica_groups`` mean depends on the op (XLA's
``CollectiveOpGroupMode``):

===================  ==========================  =========================================
``channel_id``       ``use_global_device_ids``   the ids are ...
===================  ==========================  =========================================
absent               absent / false              replica ids; a group spans one partition
present              (the op has no such flag)   partition ids; a group spans one replica
present              false                       replica ids; the group holds every
                                                 partition of those replicas
present              true                        flattened ids
===================  ==========================  =========================================

``all-reduce``, ``all-gather`` and ``reduce-scatter`` carry the flag (absent =
false); ``all-to-all``, ``collective-broadcast`` and ``collective-permute`` do
not. An empty ``replica_groups={}`` is one group of every id; iota groups
``[G,S]<=[d0,d1,..]T(perm)`` list ``iota(d0*d1*..)`` reshaped to ``dims``,
transposed by ``perm`` and read as ``G`` groups of ``S``; mesh groups
``mesh['a'=2,'b'=2] {'b'}`` group the devices of a row-major mesh that differ
only along the named axes.

Several participants are simulated in one process (:class:`Exchange`): each
runs its own :class:`~hlo.interpreter.machine.Machine` in a thread and every
collective is a rendezvous keyed by (instruction, occurrence). A participant
that waits for a peer that failed or finished raises instead of hanging.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import numpy as np

from hlo.interpreter.values import InterpretError, Value
from hlo.ir import Instruction, Module, Verbatim


@dataclass(frozen=True, slots=True)
class World:
    """How many replicas and partitions the module runs on (from its header)."""

    replica_count: int = 1
    num_partitions: int = 1

    @property
    def size(self) -> int:
        return self.replica_count * self.num_partitions

    @staticmethod
    def of(module: Module) -> World:
        return World(int(module.attr("replica_count", 1)), int(module.attr("num_partitions", 1)))


@dataclass(frozen=True, slots=True)
class Participant:
    """One participant: its replica and partition ids within ``world``."""

    replica: int
    partition: int
    world: World

    @property
    def flat(self) -> int:
        return self.replica * self.world.num_partitions + self.partition

    @staticmethod
    def from_flat(flat: int, world: World) -> Participant:
        return Participant(flat // world.num_partitions, flat % world.num_partitions, world)


# ---------------------------------------------------------------------------
# Replica groups
# ---------------------------------------------------------------------------

_IOTA = re.compile(r"\[([\d,\s]*)\]\s*<=\s*\[([\d,\s]*)\](?:T\(([\d,\s]*)\))?$")
_MESH = re.compile(r"mesh\[(.*)\]\s*\{(.*)\}$")


def _int_list(text: str) -> list[int]:
    return [int(t) for t in text.split(",") if t.strip()]


def parse_groups(instr: Instruction, value: object) -> tuple[tuple[int, ...], ...]:
    """``replica_groups`` as explicit id tuples (``()`` for ``{}``, meaning every id)."""
    if value is None or value == ():
        return ()
    if isinstance(value, tuple):
        if all(isinstance(v, int) for v in value):  # one group written {{0,1}} may parse flat
            return (tuple(int(v) for v in value),)
        return tuple(tuple(int(i) for i in group) for group in value)
    text = value.text if isinstance(value, Verbatim) else str(value)
    found = _IOTA.match(text.strip())
    if found:
        shape = _int_list(found.group(1))
        dims = _int_list(found.group(2))
        perm = _int_list(found.group(3)) if found.group(3) is not None else list(range(len(dims)))
        ids = np.arange(int(np.prod(dims)), dtype=np.int64).reshape(dims).transpose(perm)
        return tuple(tuple(int(i) for i in row) for row in ids.reshape(shape))
    found = _MESH.match(text.strip())
    if found:
        axes = re.findall(r"'(\w+)'\s*=\s*(\d+)", found.group(1))
        chosen = re.findall(r"'([^']+)'", found.group(2))
        names = [a for a, _ in axes]
        if any(c not in names for c in chosen):
            raise InterpretError(f"{instr.name}: mesh replica groups '{text}' use sub-axes (not supported)")
        mesh = np.arange(int(np.prod([int(n) for _, n in axes])), dtype=np.int64)
        mesh = mesh.reshape([int(n) for _, n in axes])
        kept = [d for d, a in enumerate(names) if a not in chosen]
        grouped = [names.index(c) for c in chosen]
        rows = mesh.transpose(kept + grouped).reshape(-1, int(np.prod([mesh.shape[d] for d in grouped])))
        return tuple(tuple(int(i) for i in row) for row in rows)
    raise InterpretError(f"{instr.name}: cannot read replica_groups '{text}'")


def _has_flag(instr: Instruction) -> bool:
    return instr.opcode.split("-start")[0] in ("all-reduce", "all-gather", "reduce-scatter")


def group_of(instr: Instruction, me: Participant, *, absent_ok: bool = False) -> tuple[Participant, ...]:
    """The participants of ``me``'s group, in rank order (rank = position in the group).

    ``me`` outside every group is an error unless ``absent_ok`` (then ``()``).
    """
    world = me.world
    groups = parse_groups(instr, instr.attr("replica_groups"))
    channel = instr.has_attr("channel_id")
    global_ids = bool(instr.attr("use_global_device_ids", False))
    if not channel:
        mode, space, own = "replica", world.replica_count, me.replica
    elif not _has_flag(instr):
        mode, space, own = "partition", world.num_partitions, me.partition
    elif global_ids:
        mode, space, own = "flat", world.size, me.flat
    else:
        mode, space, own = "replica+partitions", world.replica_count, me.replica
    if not groups:
        if mode == "flat":
            raise InterpretError(f"{instr.name}: use_global_device_ids needs explicit replica_groups")
        groups = (tuple(range(space)),)
    needed = max((max(g) for g in groups if g), default=-1) + 1
    if needed > space:
        raise InterpretError(
            f"{instr.opcode} '{instr.name}': its replica_groups name {mode} ids up to {needed - 1}, "
            f"but the module header declares replica_count={world.replica_count}, "
            f"num_partitions={world.num_partitions}"
        )
    mine = [g for g in groups if own in g]
    if not mine and absent_ok:
        return ()
    if len(mine) != 1:
        raise InterpretError(
            f"{instr.opcode} '{instr.name}': {mode} id {own} is in {len(mine)} replica groups, not 1"
        )
    group = mine[0]
    if mode == "replica":
        return tuple(Participant(r, me.partition, world) for r in group)
    if mode == "partition":
        return tuple(Participant(me.replica, p, world) for p in group)
    if mode == "flat":
        return tuple(Participant.from_flat(f, world) for f in group)
    return tuple(Participant(r, p, world) for r in group for p in range(world.num_partitions))


def permute_space(instr: Instruction, me: Participant) -> tuple[tuple[Participant, ...], int]:
    """For ``collective-permute``: the participants whose ids the pairs use, and ``me``'s id.

    With a ``channel_id`` the pairs name partition ids (within ``me``'s replica),
    otherwise replica ids (within ``me``'s partition).
    """
    world = me.world
    if instr.has_attr("channel_id"):
        return tuple(Participant(me.replica, p, world) for p in range(world.num_partitions)), me.partition
    return tuple(Participant(r, me.partition, world) for r in range(world.replica_count)), me.replica


# ---------------------------------------------------------------------------
# The exchange between simulated participants
# ---------------------------------------------------------------------------


class PeerFailure(InterpretError):
    """A participant stopped because another one failed or left (not the root cause)."""


class Exchange:
    """Rendezvous of several participants run as threads of one process.

    ``swap(key, me, group, value)`` deposits ``me``'s value under ``key`` and
    returns every group member's value (in group order) once all have arrived.
    Keys name the instruction and how many times ``me`` has executed it, so a
    collective inside a loop meets the same iteration of its peers.
    """

    def __init__(self, world: World) -> None:
        self.world = world
        self._lock = threading.Condition()
        self._slots: dict[tuple[str, int], dict[int, Value]] = {}
        self._finished: set[int] = set()
        self._failed: str | None = None

    def swap(self, key: tuple[str, int], me: Participant, group: tuple[Participant, ...], value: Value) -> list[Value]:
        with self._lock:
            slot = self._slots.setdefault(key, {})
            slot[me.flat] = value
            self._lock.notify_all()
            while True:
                if all(p.flat in slot for p in group):
                    return [slot[p.flat] for p in group]
                if self._failed is not None:
                    raise PeerFailure(f"{key[0]}: a peer participant failed ({self._failed})")
                gone = [p.flat for p in group if p.flat in self._finished and p.flat not in slot]
                if gone:
                    raise InterpretError(
                        f"{key[0]}: participant(s) {gone} finished without reaching this collective"
                    )
                self._lock.wait()

    def finish(self, me: Participant, error: Exception | None = None) -> None:
        with self._lock:
            self._finished.add(me.flat)
            if error is not None and self._failed is None:
                self._failed = f"participant {me.flat}: {error}"
            self._lock.notify_all()
