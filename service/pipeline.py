"""The one core function behind HTTP, the command line and batch: ``run(request) -> outcome``.

Every door is a thin adapter over it: the HTTP routes (:mod:`service.api.routes`), the
commands ``assign``, ``score``, ``check``, ``normalize``, ``fmt``, ``verify`` and ``measure``
(:mod:`service.cli`, through :func:`service.cli.source.outcome_of`), and ``batch``
(:mod:`service.batch`) build a request, call ``run`` and render the outcome.

A request is a frozen value (the operation, the HLO text, the target, the options); an outcome is
either :class:`Success` (plain JSON-able data plus the output module text, if any) or
:class:`Failure` (a typed error with its place). ``run`` never raises for bad input, so an
outcome can cross a process boundary (worker pool, Ray) and be cached or written to a batch
result file exactly as the HTTP layer returns it.

Every operation first does the checks that do not depend on the solver: the HLO parses, the
target loads, the options hold. ``assign``, ``score`` and ``normalize`` then go through
:mod:`service.layout_operations`, the single place where the service calls the layout
engine (``solver.layout_assignment``) and the normalization passes (``hlo.passes``).

A success's ``data`` depends only on the request: wall-clock timings travel beside it
(``timings_ms``), so a cached body and a recomputed one are the same document.

Example::

    run(ModuleRequest(Operation.FORMAT, "HloModule m\\nENTRY e { ROOT p = f32[2] parameter(0) }"))
    -> Success(operation=Operation.FORMAT, data={"module": "m", ...}, hlo="HloModule m, ...")
"""

from __future__ import annotations

import dataclasses
import enum
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from service.options import (
    AssignOptions,
    CheckOptions,
    FormatOptions,
    MeasureOptions,
    NormalizeOptions,
    Options,
    ScoreOptions,
    VerifyOptions,
    options_to_json,
)

if TYPE_CHECKING:
    from solver.progress import ProgressCallback


class Operation(str, enum.Enum):
    ASSIGN = "assign"
    SCORE = "score"
    NORMALIZE = "normalize"
    FORMAT = "format"
    CHECK = "check"
    VERIFY = "verify"
    MEASURE = "measure"


OPTIONS_OF: dict[Operation, type] = {
    Operation.ASSIGN: AssignOptions,
    Operation.SCORE: ScoreOptions,
    Operation.NORMALIZE: NormalizeOptions,
    Operation.FORMAT: FormatOptions,
    Operation.CHECK: CheckOptions,
    Operation.VERIFY: VerifyOptions,
    Operation.MEASURE: MeasureOptions,
}

NEEDS_TARGET = frozenset({Operation.ASSIGN, Operation.SCORE})


class FailureType(str, enum.Enum):
    """Why an operation did not succeed. The HTTP layer maps each to a status code."""

    PARSE_ERROR = "parse_error"  # the HLO text does not parse (line, column)
    VERIFY_ERROR = "verify_error"  # it parses but breaks a structural rule
    INVALID_TARGET = "invalid_target"  # the target name or object is not a valid target
    INVALID_OPTION = "invalid_option"  # an option is out of range or unknown
    LAYOUT_ERROR = "layout_error"  # a layout in the module is invalid for its shape
    # a ``bitcast`` in a module without layouts: its meaning depends on the layouts being chosen
    LAYOUT_DEPENDENT_BITCAST = "layout_dependent_bitcast"
    INFEASIBLE = "infeasible"  # no layout assignment meets the target's hard rules
    TOO_LARGE = "too_large"  # the module's buffers exceed the interpreter's memory budget
    NOT_AVAILABLE = "not_available"  # the operation is not part of this build
    NOT_RUNNABLE = "not_runnable"  # the XLA execution path cannot run a module (the reason)
    TIMEOUT = "timeout"  # the work ran past its wall-clock limit and was stopped
    WORKER_CRASHED = "worker_crashed"  # the process doing the work died
    QUEUE_FULL = "queue_full"  # too much work waiting; retry later
    INTERNAL_ERROR = "internal_error"  # a defect: an unexpected exception


# Failures that depend only on the request (so caching them is as sound as caching a success).
DETERMINISTIC_FAILURES = frozenset(
    {
        FailureType.PARSE_ERROR,
        FailureType.VERIFY_ERROR,
        FailureType.INVALID_TARGET,
        FailureType.INVALID_OPTION,
        FailureType.LAYOUT_ERROR,
        FailureType.LAYOUT_DEPENDENT_BITCAST,
        FailureType.INFEASIBLE,
        FailureType.TOO_LARGE,
    }
)


@dataclass(frozen=True, slots=True)
class InlineTarget:
    """A target the user describes as data, kept as canonical JSON text (sorted keys)."""

    text: str

    @staticmethod
    def from_data(data: dict[str, Any]) -> InlineTarget:
        return InlineTarget(json.dumps(data, sort_keys=True, separators=(",", ":")))

    @property
    def data(self) -> dict[str, Any]:
        return json.loads(self.text)


TargetSpec = str | InlineTarget
"""A built-in target name (``"tpu"``) or an inline target object."""


def target_identity(spec: TargetSpec | None) -> Any:
    """What ``spec`` stands for on this host, as JSON data: an inline target's data, the
    built-in ``cpu`` as the CPU target it means here (``cpu-xeon``...), other names as they
    are. Results keyed by it are never shared between hosts that price differently."""
    from hlo.target import TargetError, resolved_name

    if isinstance(spec, InlineTarget):
        return spec.data
    try:
        return resolved_name(spec) if isinstance(spec, str) else spec
    except TargetError:  # a bad HLO_LAYOUT_CPU_TARGET: the operation reports it
        return spec


@dataclass(frozen=True, slots=True)
class ModuleRequest:
    """One module and what to do with it. ``name`` is the file name used in diagnostics."""

    operation: Operation
    hlo: str
    name: str = "module"
    target: TargetSpec | None = None
    options: Options | None = None  # None: the operation's default options

    def __post_init__(self) -> None:
        if self.options is None:
            object.__setattr__(self, "options", OPTIONS_OF[self.operation]())


@dataclass(frozen=True, slots=True)
class VerifyRequest:
    """Two modules that must compute the same function (``rewritten`` may have other layouts)."""

    original: str
    rewritten: str
    options: VerifyOptions = VerifyOptions()
    original_name: str = "original"
    rewritten_name: str = "rewritten"

    @property
    def operation(self) -> Operation:
        return Operation.VERIFY


@dataclass(frozen=True, slots=True)
class MeasureRequest:
    """Laid-out modules to run and time in XLA:CPU, ``(label, text)``; the first is the
    reference. ``target`` prices them with the cost model, for the predicted ratios."""

    modules: tuple[tuple[str, str], ...]
    target: TargetSpec = "cpu"
    options: MeasureOptions = MeasureOptions()
    #: A module without its layouts: XLA's layout-assignment pass lays it out, and the result,
    #: labelled ``xla``, goes first (the reference).
    xla_layouts_of: str | None = None

    @property
    def operation(self) -> Operation:
        return Operation.MEASURE


Request = ModuleRequest | VerifyRequest | MeasureRequest


@dataclass(frozen=True, slots=True)
class Success:
    """The result of an operation: JSON-able ``data`` (the report) and the output module text."""

    operation: Operation
    data: dict[str, Any]
    hlo: str | None = None
    elapsed_ms: float = 0.0
    # Wall-clock time per step, kept out of ``data`` so ``data`` is a function of the request.
    timings_ms: tuple[tuple[str, float], ...] = ()

    def to_json(self) -> dict[str, Any]:
        out = {"operation": self.operation.value, **self.data}
        if self.hlo is not None:
            out["hlo"] = self.hlo
        if self.timings_ms:
            out["timings_ms"] = dict(self.timings_ms)
        return out


@dataclass(frozen=True, slots=True)
class Failure:
    """A typed error: what went wrong and where (``field`` of the request, ``line``/``column``
    in its HLO text). ``details``: the further errors of the same kind, in text order (a
    module that breaks several structural rules), the first being this one."""

    type: FailureType
    message: str
    field: str | None = None
    line: int | None = None
    column: int | None = None
    details: tuple[Failure, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type.value, "message": self.message}
        for key in ("field", "line", "column"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.details:
            out["details"] = [d.to_json() for d in self.details]
        return out

    @staticmethod
    def from_json(data: dict[str, Any]) -> Failure:
        return Failure(
            FailureType(data["type"]), data["message"], data.get("field"), data.get("line"),
            data.get("column"), tuple(Failure.from_json(d) for d in data.get("details", ())),
        )


Outcome = Success | Failure


def request_to_json(request: Request) -> dict[str, Any]:
    """The request as canonical JSON data: the identity a cache key is computed from."""
    if isinstance(request, VerifyRequest):
        return {
            "operation": Operation.VERIFY.value,
            "original": request.original,
            "rewritten": request.rewritten,
            "options": options_to_json(request.options),
        }
    if isinstance(request, MeasureRequest):
        return {
            "operation": Operation.MEASURE.value,
            "modules": [list(m) for m in request.modules],
            "target": target_identity(request.target),
            "options": options_to_json(request.options),
            **({"xla_layouts_of": request.xla_layouts_of}
               if request.xla_layouts_of is not None else {}),
        }
    return {
        "operation": request.operation.value,
        "hlo": request.hlo,
        "target": target_identity(request.target),
        "options": options_to_json(request.options),
    }


class OperationFailed(Exception):
    """Carries a :class:`Failure` out of the nested steps of one operation."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def run(request: Request, progress: ProgressCallback | None = None) -> Outcome:
    """Do one operation. Never raises for bad input: every error is a :class:`Failure`.

    ``progress`` hears the :class:`~solver.progress.Progress` events of a layout
    assignment while it runs (other operations are quick and send none)."""
    start = time.perf_counter()
    try:
        if isinstance(request, VerifyRequest):
            produced = _verify(request)
        elif isinstance(request, MeasureRequest):
            produced = _measure(request)
        elif request.operation not in _MODULE_OPERATIONS:
            raise OperationFailed(
                Failure(
                    FailureType.INVALID_OPTION,
                    f"{request.operation.value} compares several modules: it is not an "
                    "operation on one module",
                    field="operation",
                )
            )
        else:
            expected = OPTIONS_OF[request.operation]
            if not isinstance(request.options, expected):
                raise OperationFailed(
                    Failure(
                        FailureType.INVALID_OPTION,
                        f"{request.operation.value} takes {expected.__name__}, "
                        f"not {type(request.options).__name__}",
                        field="options",
                    )
                )
            produced = _MODULE_OPERATIONS[request.operation](request, progress)
    except OperationFailed as fail:
        return fail.failure
    except Exception as exc:  # a defect, reported as data so the caller keeps running
        return Failure(FailureType.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
    elapsed = round((time.perf_counter() - start) * 1000.0, 3)
    timings = produced.timings_ms + (("total", elapsed),) if produced.timings_ms else ()
    return Success(request.operation, produced.data, produced.hlo, elapsed, timings)


# ---------------------------------------------------------------------------
# Steps shared by the operations
# ---------------------------------------------------------------------------


def hlo_failure(exc: Exception, kind: FailureType, field_name: str) -> Failure:
    location = getattr(exc, "location", None)
    return Failure(
        kind,
        getattr(exc, "message", str(exc)),
        field=field_name,
        line=location.line if location is not None else None,
        column=location.column if location is not None else None,
    )


def _parse(text: str, name: str, field_name: str = "hlo") -> Any:
    from hlo.errors import HloError, ParseError
    from hlo.parser import parse_module

    try:
        return parse_module(text, name)
    except ParseError as exc:
        raise OperationFailed(hlo_failure(exc, FailureType.PARSE_ERROR, field_name)) from exc
    except HloError as exc:  # e.g. a LayoutError for an invalid layout written in the text
        raise OperationFailed(hlo_failure(exc, failure_type_of(exc), field_name)) from exc


def _parse_all(text: str, name: str) -> list[Any]:
    """Every module of a text whose modules are separated by ``// -----`` lines."""
    from hlo.errors import HloError
    from hlo.parser import parse_module, split_modules

    parts = split_modules(text)
    if not parts:
        raise OperationFailed(Failure(FailureType.PARSE_ERROR, "no HLO module found", "hlo"))
    if len(parts) == 1:
        return [_parse(text, name)]
    try:
        return [parse_module(part, name) for part in parts]
    except HloError as exc:
        raise OperationFailed(hlo_failure(exc, failure_type_of(exc), "hlo")) from exc


def _verify_structure(module: Any, name: str, field_name: str = "hlo") -> None:
    """Every structural error of ``module`` (the first, with all of them as ``details``)."""
    from hlo.verifier import collect_errors

    errors = [hlo_failure(e, failure_type_of(e), field_name)
              for e in collect_errors(module, source_name=name)]
    if errors:
        raise OperationFailed(dataclasses.replace(errors[0], details=tuple(errors)))


def failure_type_of(exc: Exception) -> FailureType:
    from hlo.errors import LayoutDependentBitcast, LayoutError, ParseError
    from hlo.interpreter import MemoryBudgetError

    if isinstance(exc, MemoryBudgetError):
        return FailureType.TOO_LARGE
    if isinstance(exc, ParseError):
        return FailureType.PARSE_ERROR
    if isinstance(exc, LayoutDependentBitcast):
        return FailureType.LAYOUT_DEPENDENT_BITCAST
    if isinstance(exc, LayoutError):
        return FailureType.LAYOUT_ERROR
    return FailureType.VERIFY_ERROR


def load_target(spec: TargetSpec) -> Any:
    """The target named or described by ``spec``; an invalid one fails naming ``target``.

    A name must be a built-in one: a request never makes the server read a file by path.
    """
    from hlo.errors import HloError
    from hlo.target import builtin_target_names, load_target as load

    if isinstance(spec, str) and spec not in builtin_target_names():
        names = ", ".join(builtin_target_names())
        raise OperationFailed(
            Failure(
                FailureType.INVALID_TARGET,
                f"unknown target '{spec}': use one of {names} or a target of your own (an "
                "inline object over HTTP, a .toml/.json file on the command line)",
                field="target",
            )
        )
    try:
        return load(spec.data if isinstance(spec, InlineTarget) else spec)
    except HloError as exc:
        raise OperationFailed(Failure(FailureType.INVALID_TARGET, exc.message, field="target")) from exc


def _module_summary(module: Any) -> dict[str, Any]:
    return {
        "module": module.name,
        "computations": len(module.computations),
        "instructions": sum(len(c.instructions) for c in module.computations),
    }


# ---------------------------------------------------------------------------
# Operations
# ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Produced:
    """What an operation made: the report data, the output module text, step timings."""

    data: dict[str, Any]
    hlo: str | None = None
    timings_ms: tuple[tuple[str, float], ...] = ()


def _format(request: ModuleRequest, progress: ProgressCallback | None = None) -> Produced:
    """Canonical text; a text of several ``// -----``-separated modules stays split (``data``
    then also lists each module's summary under ``modules``)."""
    from hlo.printer import print_module

    modules = _parse_all(request.hlo, request.name)
    options: FormatOptions = request.options  # type: ignore[assignment]
    data = _module_summary(modules[0])
    if len(modules) == 1:
        return Produced(data, print_module(modules[0], short=options.short))
    data["modules"] = [_module_summary(m) for m in modules]
    printed = [print_module(m, short=options.short).rstrip("\n") + "\n" for m in modules]
    return Produced(data, "\n// -----\n\n".join(printed))


def _check(request: ModuleRequest, progress: ProgressCallback | None = None) -> Produced:
    """Structure (a failure lists every error); with ``layouts``, the layout verifier's
    findings as ``layout_violations`` (a success: the module is valid HLO either way)."""
    from hlo.layout_verifier import verify_layouts

    module = _parse(request.hlo, request.name)
    _verify_structure(module, request.name)
    options: CheckOptions = request.options  # type: ignore[assignment]
    data = {**_module_summary(module), "valid": True}
    if options.layouts:
        violations = verify_layouts(module, compare_tiles=options.compare_tiles)
        data["layout_violations"] = [dataclasses.asdict(v) for v in violations]
    return Produced(data)


def _verify(request: VerifyRequest) -> Produced:
    """The reference interpreter on both modules (:func:`hlo.equivalence.compare_modules`),
    then, with ``xla``, XLA:CPU on both (:func:`service.measurement.xla_check`)."""
    from hlo.equivalence import compare_modules
    from hlo.errors import HloError

    original = _parse(request.original, request.original_name, "original")
    rewritten = _parse(request.rewritten, request.rewritten_name, "rewritten")
    _verify_structure(original, request.original_name, "original")
    _verify_structure(rewritten, request.rewritten_name, "rewritten")
    options = request.options
    try:
        comparison = compare_modules(
            original, rewritten, seed=options.seed, trials=options.trials, exact=options.exact,
            memory_limit=options.memory_limit_mb * 2**20,
        )
    except HloError as exc:
        raise OperationFailed(hlo_failure(exc, failure_type_of(exc), "rewritten")) from exc
    data = {"original": original.name, "rewritten": rewritten.name, **comparison.to_json()}
    if options.xla:
        data["xla"] = _xla_check(original, rewritten, options.seed)
    return Produced(data)


def _xla_check(original: Any, rewritten: Any, seed: int) -> dict[str, Any]:
    from service.measurement import xla_check
    from service.xla.errors import XlaError

    try:
        return xla_check(original, rewritten, seed=seed)
    except XlaError as exc:
        raise OperationFailed(Failure(FailureType.NOT_AVAILABLE, exc.message)) from exc


def _measure(request: MeasureRequest) -> Produced:
    """Run the modules in XLA:CPU (:mod:`service.measurement`); XLA missing is NOT_AVAILABLE."""
    from service.measurement import measure_report
    from service.xla.errors import XlaError

    labels = ["xla"] * (request.xla_layouts_of is not None) + [m[0] for m in request.modules]
    if len(set(labels)) != len(labels):
        raise OperationFailed(Failure(FailureType.INVALID_OPTION,
                                      f"module labels must be distinct: {', '.join(labels)}",
                                      field="modules"))
    modules = []
    for k, (label, text) in enumerate(request.modules):
        module = _parse(text, label, f"modules.{k}")
        _verify_structure(module, label, f"modules.{k}")
        modules.append((label, module))
    target = load_target(request.target)
    if request.xla_layouts_of is not None:
        modules.insert(0, ("xla", _xla_layouts(request.xla_layouts_of)))
    options = request.options
    try:
        data = measure_report(modules, target, seed=options.seed, reps=options.reps,
                              warmup=options.warmup, sessions=options.sessions)
    except XlaError as exc:
        raise OperationFailed(Failure(FailureType.NOT_AVAILABLE, exc.message)) from exc
    return Produced(data)


def _xla_layouts(text: str) -> Any:
    """XLA's own layouts for ``text`` (its layout-assignment pass), parsed."""
    from service.xla.errors import XlaError, XlaUnavailable
    from service.xla.layout_pass import xla_layout_assignment

    field_name = "xla_layouts_of"
    _verify_structure(_parse(text, "original", field_name), field_name)
    try:
        laid_out = xla_layout_assignment(text)
    except XlaUnavailable as exc:
        raise OperationFailed(Failure(FailureType.NOT_AVAILABLE, exc.message)) from exc
    except XlaError as exc:
        raise OperationFailed(Failure(FailureType.NOT_RUNNABLE, exc.message,
                                      field=field_name)) from exc
    return _parse(laid_out, "xla-layouts", field_name)


def _layout_operation(request: ModuleRequest, progress: ProgressCallback | None = None
                      ) -> Produced:
    """``assign``, ``score`` and ``normalize``: validate everything the engine will need, then
    hand over to :mod:`service.layout_operations`."""
    from service import layout_operations

    clock = time.perf_counter()
    module = _parse(request.hlo, request.name)
    _verify_structure(module, request.name)
    target = None
    if request.operation in NEEDS_TARGET:
        if request.target is None:
            raise OperationFailed(
                Failure(FailureType.INVALID_OPTION, "a target is required", field="target")
            )
        target = load_target(request.target)
    parsed_ms = round((time.perf_counter() - clock) * 1000.0, 3)
    if request.operation is Operation.ASSIGN:
        produced = layout_operations.assign(module, target, request.options, progress)
    else:
        produced = layout_operations.OPERATIONS[request.operation](module, target, request.options)
    return Produced(
        produced.data, produced.hlo, (("parse", parsed_ms),) + produced.timings_ms
    )


_MODULE_OPERATIONS: dict[Operation, Callable[[ModuleRequest, ProgressCallback | None], Produced]] = {
    Operation.FORMAT: _format,
    Operation.CHECK: _check,
    Operation.ASSIGN: _layout_operation,
    Operation.SCORE: _layout_operation,
    Operation.NORMALIZE: _layout_operation,
}


def default_batch_operation() -> Operation:
    """What ``hlo-layout batch`` does unless told otherwise: layout assignment."""
    return Operation.ASSIGN


def warm_up() -> None:
    """Import the modules every operation needs, so a worker's first request is not slower."""
    import importlib

    for name in (
        "hlo.parser", "hlo.printer", "hlo.verifier", "hlo.passes", "solver.layout_assignment.assign",
    ):
        importlib.import_module(name)


def list_targets() -> list[dict[str, Any]]:
    """The built-in targets as JSON data: name, description, layout family."""
    from hlo.target import builtin_target_names, load_target as load

    listed = []
    for name in builtin_target_names():
        target = load(name)
        listed.append(
            {
                "name": name,
                **({"this_host": target.name} if target.name != name else {}),
                "description": target.description,
                "layout_family": target.layout_family,
                "memory_bandwidth_gb_per_s": target.memory_bandwidth_gb_per_s,
            }
        )
    return listed
