"""Targets change answers where they should; tiny modules match brute force; determinism."""

from __future__ import annotations

import itertools
import json

from typer.testing import CliRunner

from conftest import shared_path
from hlo.parser import parse_module
from hlo.printer import print_module
from solver.layout_assignment.assign import assign, score
from solver.layout_assignment.plan import plan_for
from solver.layout_assignment.candidates import candidate_sets
from solver.layout_assignment.costs import CostModel
from solver.layout_assignment.layout_graph import build_graph
from solver.layout_assignment.options import AssignOptions
from solver.layout_assignment.report import to_json
from hlo.passes.apply_layouts import apply_layouts
from hlo.target import load_target

SMALL_MINOR = """HloModule small_minor, entry_computation_layout={(f32[1024,2])->f32[1024,2]}
ENTRY e {
  p = f32[1024,2] parameter(0)
  e = f32[1024,2] exponential(p)
  ROOT n = f32[1024,2] negate(e)
}"""

CONV = """HloModule conv, entry_computation_layout={(DT[8,32,32,16]{3,2,1,0}, DT[16,16,3,3]{3,2,1,0})->DT[8,16,32,32]{3,2,1,0}}
ENTRY e {
  x = DT[8,32,32,16]{3,2,1,0} parameter(0)
  w = DT[16,16,3,3]{3,2,1,0} parameter(1)
  t = DT[8,16,32,32] transpose(x), dimensions={0,3,1,2}
  c = DT[8,16,32,32] convolution(t, w), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  ROOT r = DT[8,16,32,32] negate(c)
}"""


def test_tpu_padding_steers_a_small_minor_dim_to_the_other_order():
    module = parse_module(SMALL_MINOR)
    tpu = assign(module, "tpu", AssignOptions(entry_layout="auto", time_limit_s=5))
    cpu = assign(module, "cpu", AssignOptions(entry_layout="auto", time_limit_s=5))
    assert str(tpu.module.entry.root_instruction.shape) == "f32[1024,2]{0,1:T(2,128)}"
    assert str(cpu.module.entry.root_instruction.shape) == "f32[1024,2]{1,0}"
    assert tpu.entry_layouts["parameters"] == ["f32[1024,2]{0,1:T(2,128)}"]


def test_gpu_picks_nhwc_for_half_precision_2d_convolutions():
    for dtype, want in (("f16", (1, 3, 2, 0)), ("bf16", (1, 3, 2, 0)), ("f64", (3, 2, 1, 0))):
        module = parse_module(CONV.replace("DT", dtype))
        r = assign(module, "gpu", AssignOptions(time_limit_s=5))
        comp = r.module.entry
        conv = comp.instruction("c")
        lhs = comp.instruction(conv.operands[0]).shape
        # bf01: NHWC means feature (dim 1) most minor, batch (dim 0) most major.
        assert lhs.layout.minor_to_major == want, (dtype, str(lhs))
        assert r.violations == ()


def test_ascend_puts_convolution_operands_in_nc1hwc0_and_fractal_z():
    module = parse_module(CONV.replace("DT", "f16"))
    r = assign(module, "ascend", AssignOptions(time_limit_s=5))
    comp = r.module.entry
    conv = comp.instruction("c")
    lhs = comp.instruction(conv.operands[0])
    rhs = comp.instruction(conv.operands[1])
    assert str(lhs.shape.layout) == "{3,2,1,0:T(16,1,1)}"  # NC1HWC0, C0 = 32 B / 2 B
    assert 'layout_format="FRACTAL_Z"' in rhs.attr("frontend_attributes").text
    assert r.violations == ()
    # The formats are hard: without them the conv cannot run, so score() lists it.
    assert score(module.__class__(**{**_fields(module)}), "ascend").broken


def _fields(module):
    return {f: getattr(module, f) for f in module.__dataclass_fields__}


TINY = [
    """HloModule t1, entry_computation_layout={(f32[64,32]{0,1})->f32[32,64]{1,0}}
ENTRY e {
  p = f32[64,32] parameter(0)
  a = f32[64,32] exponential(p)
  t = f32[32,64] transpose(a), dimensions={1,0}
  b = f32[32,64] negate(t)
  ROOT c = f32[32,64] add(b, t)
}""",
    """HloModule t2, entry_computation_layout={(f32[8,16,4]{0,1,2}, f32[16]{0})->f32[8,16,4]{0,2,1}}
ENTRY e {
  p = f32[8,16,4] parameter(0)
  q = f32[16] parameter(1)
  b = f32[8,16,4] broadcast(q), dimensions={1}
  m = f32[8,16,4] multiply(p, b)
  ROOT s = f32[8,16,4] exponential(m)
}""",
]


def test_tiny_modules_match_brute_force_over_all_candidate_combinations():
    for text in TINY:
        module = parse_module(text)
        for target in ("cpu", "tpu", "gpu"):
            result = assign(module, target, AssignOptions(time_limit_s=5))
            cm = CostModel(load_target(target))
            graph = build_graph(module)
            cands = candidate_sets(graph, cm)
            best = None
            for combo in itertools.product(*cands):
                plan, _ = plan_for(graph, cm, list(combo), False)
                cost = score(apply_layouts(module, plan), target).total
                best = cost if best is None else min(best, cost)
            assert result.objective == best, (target, result.objective, best)


def test_same_input_same_output_and_report():
    module = parse_module(open(shared_path("corpus", "einsum_zoo.before_layout.hlo")).read())
    runs = [assign(module, "tpu", AssignOptions(time_limit_s=5)) for _ in range(2)]
    texts = [print_module(r.module) for r in runs]
    reports = [json.dumps(to_json(r, include_timings=False), sort_keys=True) for r in runs]
    assert texts[0] == texts[1] and reports[0] == reports[1]


def test_cli_assign_and_score(tmp_path):
    from service.cli import build_app
    app = build_app()
    runner = CliRunner()
    src = shared_path("corpus", "transpose_reshape_chain.before_layout.hlo")
    out, rep = tmp_path / "o.hlo", tmp_path / "r.json"
    run = runner.invoke(app, ["assign", str(src), "-t", "cpu", "-o", str(out), "--report", str(rep)])
    assert run.exit_code == 0, run.output
    report = json.loads(rep.read_text())
    assert report["status"] == "OPTIMAL" and report["hlo"] == out.read_text()
    run = runner.invoke(app, ["score", str(out), "-t", "cpu", "--json"])
    assert run.exit_code == 0 and json.loads(run.stdout)["cost"] == report["objective"]
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  p = f32[2] parameter(0\n}\n")
    run = runner.invoke(app, ["assign", str(bad)])
    assert run.exit_code == 2 and "bad.hlo:" in run.output
