"""The evaluation loop: computations run instruction by instruction.

A :class:`Machine` holds one module and runs any of its computations on given
values. Opcode handlers live in the sibling modules and register themselves in
:data:`HANDLERS`; a handler takes ``(machine, instr, operand_values)`` and returns
the instruction's value.

Scalar computations (reducers, comparators, ``map`` and scatter combiners) are
run *batched* when every instruction in them is elementwise: the parameters are
whole arrays instead of scalars and numpy broadcasting does the rest, so a
reduce applies its ``to_apply`` faithfully without a Python loop per element.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hlo.interpreter.participants import Exchange, Participant, World
from hlo.interpreter.values import InterpretError, Value, check_value, dtype_of
from hlo.ir import Computation, ComputationRef, Instruction, Module
from hlo.opcode_facts import ELEMENTWISE
from hlo.shape import ArrayShape, TupleShape

Handler = Callable[["Machine", Instruction, list[Value]], Value]

#: opcode -> handler; filled by the op-family modules at import.
HANDLERS: dict[str, Handler] = {}

#: Opcodes that merely pass or restructure values and so are batch-safe, like the
#: elementwise ones.
_BATCH_SAFE_STRUCTURAL = frozenset(
    {"parameter", "constant", "tuple", "get-tuple-element", "copy", "call",
     "broadcast", "reshape", "bitcast", "opt-barrier"}
)


def register(*opcodes: str) -> Callable[[Handler], Handler]:
    def wrap(fn: Handler) -> Handler:
        for opcode in opcodes:
            HANDLERS[opcode] = fn
        return fn

    return wrap


def error_at(instr: Instruction, message: str) -> InterpretError:
    where = f" (line {instr.span.line})" if instr.span is not None else ""
    error = InterpretError(f"{instr.opcode} '{instr.name}'{where}: {message}")
    error.located = True  # type: ignore[attr-defined]  (names its instruction: not wrapped again)
    return error


def ints(instr: Instruction, name: str, default: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """An attribute read as a tuple of ints (``dimensions={1}`` or ``index_vector_dim=1``)."""
    value = instr.attr(name)
    if value is None:
        if default is None:
            raise error_at(instr, f"missing attribute '{name}'")
        return default
    if isinstance(value, bool):
        return (int(value),)
    if isinstance(value, int):
        return (value,)
    return tuple(int(v) for v in value)


def computation_attr(instr: Instruction, name: str) -> str:
    value = instr.attr(name)
    if isinstance(value, ComputationRef):
        return value.name
    if isinstance(value, str):
        return value.lstrip("%")
    raise error_at(instr, f"missing computation attribute '{name}'")


class Machine:
    """Runs the computations of one module, as one participant of its collectives.

    ``participant`` defaults to replica 0, partition 0 of the world the module
    header declares; ``exchange`` connects the participants of a simulated
    multi-participant run (``None``: this machine runs alone, see
    :mod:`hlo.interpreter.collectives`).
    """

    def __init__(
        self, module: Module, participant: Participant | None = None, exchange: Exchange | None = None
    ) -> None:
        self.module = module
        self.participant = participant or Participant(0, 0, World.of(module))
        self.exchange = exchange
        #: instruction name -> how many times this machine has run it (rendezvous keys).
        self.occurrences: dict[str, int] = {}
        self._computations = {c.name: c for c in module.computations}
        self._batch_safe: dict[str, bool] = {}
        self._indexes: dict[str, dict[str, Instruction]] = {}
        self._frames: list[dict[str, Instruction]] = []
        self.batched = False
        #: ``perturb(machine, instr, operands, result)`` replaces every result (``None``: none); see
        #: :mod:`hlo.shadow`.
        self.perturb: Callable[[Machine, Instruction, list[Value], Value], Value] | None = None

    def computation(self, name: str) -> Computation:
        try:
            return self._computations[name]
        except KeyError:
            raise InterpretError(f"no computation '{name}' in module '{self.module.name}'") from None

    # -- running ------------------------------------------------------------

    def run(self, comp: Computation | str, args: Sequence[Value]) -> Value:
        if isinstance(comp, str):
            comp = self.computation(comp)
        params = comp.parameter_instructions()
        if len(params) != len(args):
            raise InterpretError(
                f"computation '{comp.name}' takes {len(params)} arguments, got {len(args)}"
            )
        index = self._indexes.get(comp.name)
        if index is None:
            index = self._indexes[comp.name] = {i.name: i for i in comp.instructions}
        self._frames.append(index)
        try:
            return self._run(comp, params, args)
        finally:
            self._frames.pop()

    def operand_shape(self, instr: Instruction, number: int) -> Any:
        """The shape of operand ``number`` of ``instr`` (in the running computation)."""
        return self._frames[-1][instr.operands[number]].shape

    def _run(self, comp: Computation, params: tuple[Instruction, ...], args: Sequence[Value]) -> Value:
        env: dict[str, Value] = {}
        for instr in comp.instructions:
            if instr.opcode == "parameter":
                number = _parameter_number(instr, params)
                value = args[number]
                if not self.batched:
                    value = check_value(value, instr.shape, f"parameter '{instr.name}'")
                env[instr.name] = value
                continue
            try:
                operands = [env[o] for o in instr.operands]
            except KeyError as missing:
                raise error_at(instr, f"operand {missing} is not defined before use") from None
            env[instr.name] = self.execute(instr, operands)
        return env[comp.root]

    def execute(self, instr: Instruction, operands: list[Value]) -> Value:
        handler = HANDLERS.get(instr.opcode)
        if handler is None:
            raise error_at(instr, f"unsupported opcode '{instr.opcode}'")
        try:
            result = handler(self, instr, operands)
        except InterpretError as exc:
            if getattr(exc, "located", False) or type(exc) is not InterpretError:
                raise
            # e.g. a called computation given the wrong number of arguments: say who called it.
            raise error_at(instr, exc.message) from exc
        except MemoryError:
            raise error_at(instr, "out of memory while evaluating this instruction") from None
        except RecursionError:
            raise error_at(instr, "computations nest too deeply to evaluate") from None
        except Exception as exc:  # noqa: BLE001  (any other failure is a defect: name where it happened)
            raise error_at(instr, f"cannot evaluate on operands ({self._operand_text(instr)}): {exc}") from exc
        result = self._conform(instr, result)
        return result if self.perturb is None else self.perturb(self, instr, operands, result)

    def _operand_text(self, instr: Instruction) -> str:
        frame = self._frames[-1] if self._frames else {}
        return ", ".join(
            frame[o].shape.dims_text() if o in frame and isinstance(frame[o].shape, ArrayShape) else str(
                frame[o].shape if o in frame else o
            )
            for o in instr.operands
        )

    def _conform(self, instr: Instruction, result: Value) -> Value:
        shape = instr.shape
        if isinstance(shape, ArrayShape):
            want = dtype_of(shape.element_type)
            if not isinstance(result, np.ndarray):
                result = np.asarray(result)
            if result.dtype != want:
                raise error_at(instr, f"internal: produced {result.dtype}, expected {want}")
            if not self.batched and result.shape != tuple(shape.dims):
                raise error_at(
                    instr, f"internal: produced shape {list(result.shape)}, expected {shape.dims_text()}"
                )
        elif isinstance(shape, TupleShape) and not isinstance(result, tuple):
            raise error_at(instr, "internal: expected a tuple value")
        return result

    # -- scalar computations applied to arrays -------------------------------

    def is_batch_safe(self, name: str) -> bool:
        cached = self._batch_safe.get(name)
        if cached is None:
            self._batch_safe[name] = False  # guards recursion
            comp = self.computation(name)
            cached = all(
                (i.opcode in ELEMENTWISE or i.opcode in _BATCH_SAFE_STRUCTURAL)
                and (i.opcode not in ("broadcast", "reshape", "bitcast") or _scalar(i))
                and all(self.is_batch_safe(c) for c in i.called_computations())
                for i in comp.instructions
            )
            self._batch_safe[name] = cached
        return cached

    def apply_scalar(self, name: str, args: Sequence[Value]) -> Value:
        """Apply scalar computation ``name`` to every element of equally shaped ``args``.

        ``args`` are arrays (broadcastable against each other); the result has
        the broadcast shape (a tuple for tuple-valued computations).
        """
        arrays = [np.asarray(a) for a in args]
        if self.is_batch_safe(name):
            previous, self.batched = self.batched, True
            try:
                out = self.run(name, arrays)
            finally:
                self.batched = previous
            full = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
            return _broadcast_value(out, full)
        return self._apply_elementwise_loop(name, arrays)

    def _apply_elementwise_loop(self, name: str, arrays: list[np.ndarray]) -> Value:
        full = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
        arrays = [np.broadcast_to(a, full) for a in arrays]
        comp = self.computation(name)
        results: list[Value] = []
        for index in np.ndindex(*full):
            results.append(self.run(comp, [np.asarray(a[index]) for a in arrays]))
        return _stack(results, full, comp.root_instruction.shape)


def _scalar(instr: Instruction) -> bool:
    return isinstance(instr.shape, ArrayShape) and instr.shape.rank == 0


def _parameter_number(instr: Instruction, params: tuple[Instruction, ...]) -> int:
    number = instr.attr("parameter_number")
    if number is None:
        number = params.index(instr)
    return int(number)


def _broadcast_value(value: Value, shape: tuple[int, ...]) -> Value:
    if isinstance(value, tuple):
        return tuple(_broadcast_value(v, shape) for v in value)
    return np.array(np.broadcast_to(value, shape))


def _stack(results: list[Value], shape: tuple[int, ...], result_shape: Any) -> Value:
    if isinstance(result_shape, TupleShape):
        return tuple(
            _stack([r[i] for r in results], shape, s) for i, s in enumerate(result_shape.elements)
        )
    dtype = dtype_of(result_shape.element_type)
    out = np.empty(shape, dtype)
    for flat, r in enumerate(results):
        out[np.unravel_index(flat, shape) if shape else ()] = r
    return out
