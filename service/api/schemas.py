"""Request and response bodies of the HTTP API: one schema per direction.

Options are the frozen values of :mod:`service.options`, used unchanged, so the JSON schema of
``options`` is the CLI's flag set. A target is a built-in name (``"tpu"``) or an inline object
describing one (validated by the target loader; an invalid one is a 422 naming ``target``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from service.options import (
    AssignOptions,
    CheckOptions,
    FormatOptions,
    MeasureOptions,
    NormalizeOptions,
    ScoreOptions,
    VerifyOptions,
)
from service.pipeline import Operation

EXAMPLE_HLO = """HloModule add_one, entry_computation_layout={(f32[2,3]{1,0})->f32[2,3]{1,0}}

ENTRY main {
  p = f32[2,3]{1,0} parameter(0)
  one = f32[] constant(1)
  ones = f32[2,3]{1,0} broadcast(one), dimensions={}
  ROOT sum = f32[2,3]{1,0} add(p, ones)
}
"""

TargetField = str | dict[str, Any]
_NAME = Field("module", max_length=256, description="Name used in diagnostics (FILE:LINE:COL).")
_HLO = Field(description="The HLO module as text.", examples=[EXAMPLE_HLO])
_TARGET = Field(
    description="A built-in target name (see GET /v1/targets) or an inline target object.",
    examples=["tpu"],
)


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AssignIn(_In):
    hlo: str = _HLO
    name: str = _NAME
    target: TargetField = _TARGET
    options: AssignOptions = AssignOptions()


class ScoreIn(_In):
    hlo: str = _HLO
    name: str = _NAME
    target: TargetField = _TARGET
    options: ScoreOptions = ScoreOptions()


class NormalizeIn(_In):
    hlo: str = _HLO
    name: str = _NAME
    options: NormalizeOptions = NormalizeOptions()


class FormatIn(_In):
    hlo: str = _HLO
    name: str = _NAME
    options: FormatOptions = FormatOptions()


class CheckIn(_In):
    hlo: str = _HLO
    name: str = _NAME
    options: CheckOptions = CheckOptions()


class VerifyIn(_In):
    original: str = Field(description="The module before the rewrite.", examples=[EXAMPLE_HLO])
    rewritten: str = Field(description="The module after the rewrite.", examples=[EXAMPLE_HLO])
    options: VerifyOptions = VerifyOptions()


class MeasureModuleIn(_In):
    label: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.#-]+$",
                       description="Its name in the report (distinct within the request).")
    hlo: str = Field(description="A laid-out module (a layout on every array).",
                     examples=[EXAMPLE_HLO])


class MeasureIn(_In):
    """Laid-out modules run in XLA:CPU with exactly their layouts on the same inputs; the
    first is the reference, or, with ``xla_layouts_of``, XLA's own layouts for that module
    (its layout-assignment pass), labelled ``xla``."""

    modules: list[MeasureModuleIn] = Field(min_length=1, max_length=4)
    xla_layouts_of: str | None = Field(
        None, description="The module before layout assignment: XLA lays it out and the "
                          "result is the reference.")
    target: TargetField = Field("cpu", description="Target whose cost model prices the "
                                "modules (the predicted ratios).", examples=["cpu"])
    options: MeasureOptions = MeasureOptions()


MODULE_INPUTS: dict[Operation, type[_In]] = {
    Operation.ASSIGN: AssignIn,
    Operation.SCORE: ScoreIn,
    Operation.NORMALIZE: NormalizeIn,
    Operation.FORMAT: FormatIn,
    Operation.CHECK: CheckIn,
}


class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")


class ErrorOut(BaseModel):
    """Every error answer: a machine-readable ``type``, a message and, where there is one,
    the request field and the line and column in its HLO text."""

    type: str = Field(examples=["parse_error"])
    message: str = Field(examples=["expected '=' after instruction name"])
    field: str | None = Field(None, examples=["hlo"])
    line: int | None = Field(None, examples=[4])
    column: int | None = Field(None, examples=[7])
    details: list[dict[str, Any]] | None = None


class ModuleSummaryOut(_Out):
    operation: Operation
    module: str
    computations: int
    instructions: int


class FormatOut(ModuleSummaryOut):
    hlo: str = Field(description="The module in canonical text form.")


class CheckOut(ModuleSummaryOut):
    valid: bool


class VerifyOut(_Out):
    """The verdict of the reference interpreter; further fields come from the comparison."""

    operation: Operation
    original: str
    rewritten: str
    equivalent: bool


class LayoutOut(BaseModel):
    computation: str
    instruction: str
    shape: str = Field(description="The instruction's shape with its layout, as HLO text.")


class ConversionOut(_Out):
    """A layout conversion the result needs: which value, for which use, from and to which
    layout, its bytes (read + written), its cost and why it is there. ``shared`` marks a use
    served by a conversion already listed (one copy per value and layout)."""

    value: str
    computation: str
    operand: int | None = None
    from_: str = Field(alias="from")
    to: str
    bytes: int
    cost_ns: int
    shared: bool
    why: str


class AssignOut(_Out):
    """The report of DESIGN §10; ``timings_ms`` is the only part that depends on the run
    rather than the request."""

    operation: Operation
    module: str
    target: str
    status: str = Field(description="OPTIMAL (proven) or FEASIBLE (see lower_bound and gap).")
    objective: int = Field(description="Cost of the returned module, in estimated ns.")
    model_objective: int
    lower_bound: int | None
    gap: float | None
    baselines: dict[str, int] = Field(
        description="Cost of all-default layouts and of greedy propagation, same model."
    )
    breakdown: dict[str, int] = Field(description="Cost by kind (copy, padding, backend...).")
    terms: list[dict[str, Any]]
    layouts: list[LayoutOut]
    inserted: list[ConversionOut]
    copies_inserted: int
    entry_layouts: dict[str, Any] = Field(
        description="For entry_layout=auto: the parameter and result layouts to feed."
    )
    normalization: dict[str, Any] = Field(
        description="Passes run on the result, reduces they rewrote and reduces left as they were."
    )
    violations: list[str]
    timings_ms: dict[str, float]
    hlo: str = Field(description="The module with a layout on every array (normalized).")


class ScoreOut(_Out):
    """The cost of the layouts already written in a module (same as ``score --json``)."""

    operation: Operation
    module: str
    target: str
    cost: int
    breakdown: dict[str, int]
    terms: list[dict[str, Any]]
    hard_rules_broken: list[str]


class NormalizeOut(_Out):
    operation: Operation
    module: str
    passes: list[str]
    notes: list[str] = Field(description="Reduces a pass had to leave as they were, and why.")
    instructions: int
    timings_ms: dict[str, float]
    hlo: str


class MeasureOut(_Out):
    """Measured times beside the model's predicted ratios (``service.measurement``): one row
    per module, the reference first, with the A/A noise of the reference against itself."""

    operation: Operation
    platform: str
    target: str
    reference: str | None
    reps: int
    noise: dict[str, Any] | None
    modules: list[dict[str, Any]]


class TargetsOut(BaseModel):
    targets: list[dict[str, Any]]


class BatchModuleIn(_In):
    name: str = Field(max_length=256, description="Unique within the batch.")
    hlo: str


class BatchIn(_In):
    operation: Operation = Operation.ASSIGN
    modules: list[BatchModuleIn] = Field(min_length=1)
    target: TargetField | None = None
    options: dict[str, Any] = Field(
        default_factory=dict, description="Options of the operation (as in its own endpoint)."
    )


class ProgressOut(BaseModel):
    """Where a running layout assignment stands (the last word once it is done)."""

    phase: str
    elapsed_s: float
    best: int | None = Field(None, description="Cheapest true cost found so far (ns).")
    bound: int | None = Field(None, description="Best proven lower bound on it (ns).")
    gap: float | None = Field(None, description="(best - bound) / best.")


class BatchItemOut(BaseModel):
    name: str
    status: Literal["pending", "ok", "failed"]
    cached: bool = False
    result: dict[str, Any] | None = None
    error: ErrorOut | None = None
    progress: ProgressOut | None = None


class BatchOut(BaseModel):
    id: str
    operation: Operation
    status: Literal["running", "done"]
    total: int
    finished: int
    succeeded: int
    failed: int
    results: list[BatchItemOut] | None = None


class HealthOut(BaseModel):
    status: str
    workers: int | None = None
    busy: int | None = None
    waiting: int | None = None
