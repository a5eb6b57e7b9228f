"""What the command line needs from the one pipeline, asked of ``service.pipeline.run`` directly:
every structural error of a module, the layout verifier's findings, split files, and a report whose
options are the request's own options schema."""

from __future__ import annotations

from conftest import shared_path
from pydantic import TypeAdapter

from service.options import AssignOptions, CheckOptions, EntryLayout, NormalizePass
from service.pipeline import Failure, FailureType, ModuleRequest, Operation, Success, run

TWO_ERRORS = ("HloModule m\n\nENTRY main {\n  p = f32[2] parameter(0)\n  q = f32[3] add(p, p)\n"
              "  ROOT r = f32[4] add(p, p)\n}\n")


def test_a_structural_failure_lists_every_error_in_text_order() -> None:
    failure = run(ModuleRequest(Operation.CHECK, TWO_ERRORS, "two.hlo"))
    assert isinstance(failure, Failure) and failure.type is FailureType.VERIFY_ERROR
    assert [(d.line, d.column) for d in failure.details] == [(5, 3), (6, 3)]
    assert failure.details[0] == Failure(failure.type, failure.message, failure.field,
                                         failure.line, failure.column)
    assert [d["line"] for d in failure.to_json()["details"]] == [5, 6]
    assert Failure.from_json(failure.to_json()) == failure


def test_check_reports_layout_violations_only_when_asked() -> None:
    text = shared_path("corpus", "mlp_train.before_layout.hlo").read_text()
    plain = run(ModuleRequest(Operation.CHECK, text))
    assert isinstance(plain, Success) and "layout_violations" not in plain.data
    checked = run(ModuleRequest(Operation.CHECK, text, options=CheckOptions(layouts=True)))
    assert isinstance(checked, Success) and checked.data["valid"] is True
    found = checked.data["layout_violations"]
    assert found and all({"rule", "computation", "instruction", "line"} <= set(v) for v in found)


def test_format_keeps_a_split_file_split() -> None:
    one = "HloModule a\n\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n"
    text = one + "\n// -----\n\n" + one.replace("HloModule a", "HloModule b")
    done = run(ModuleRequest(Operation.FORMAT, text))
    assert isinstance(done, Success)
    assert [m["module"] for m in done.data["modules"]] == ["a", "b"]
    assert done.hlo is not None and done.hlo.count("// -----") == 1
    empty = run(ModuleRequest(Operation.FORMAT, "// nothing here\n"))
    assert isinstance(empty, Failure) and empty.message == "no HLO module found"


def test_the_report_echoes_the_request_options_as_the_same_schema() -> None:
    asked = AssignOptions(time_limit_s=5, entry_layout=EntryLayout.AUTO,
                          normalize=(NormalizePass.REDUCTIONS,), max_candidates=4)
    text = shared_path("corpus", "mlp_fwd_tiny.pre_short.hlo").read_text()
    done = run(ModuleRequest(Operation.ASSIGN, text, target="cpu", options=asked))
    assert isinstance(done, Success)
    assert TypeAdapter(AssignOptions).validate_python(done.data["options"]) == asked
