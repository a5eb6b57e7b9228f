"""Layout assignment on real XLA modules: every built-in target, verified, equivalent,
accepted by XLA's parser, and on cpu never worse than XLA's own answer."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import shared_path
from hlo.equivalence import compare_modules
from hlo.parser import parse_file
from hlo.printer import print_module
from solver.layout_assignment.assign import assign, score
from solver.layout_assignment.options import AssignOptions

#: A representative subset (control flow, custom-calls, convs, reductions, scans,
#: sorts, scatter, bf16, int8, AUTO entries); the big modules run in bench/assign.py.
MODULES = [
    "mlp_fwd_tiny", "conv2d_nchw", "conv2d_nhwc", "conv_grouped_dilated", "reduce_2d",
    "argmax_multi_output_reduce", "transpose_reshape_chain", "einsum_zoo",
    "pad_concat_slice_reverse", "attention_fwd", "auto_layout_conv_attention",
    "dynamic_slice_update", "rnn_scan_fwd", "cond_branches", "sort_argsort", "scatter_ops",
    "fft_1d", "int8_quant_matmul", "bf16_mixed_precision", "bool_mask_ops",
    "tuple_outputs_aliasing", "linalg_custom_calls", "layernorm_fwd",
]
TARGETS = ["cpu", "gpu", "tpu", "ascend"]
OPTIONS = dict(time_limit_s=5.0)


def _path(name: str, stage: str):
    base = shared_path("corpus")
    path = base / f"{name}.{stage}.hlo"
    return path if path.exists() else base / f"{name}.{stage}.hlo.gz"


@pytest.fixture(scope="module")
def outputs():
    """Every (module, stage, target) result, computed once."""
    results = {}
    for name in MODULES:
        for stage in ("before_layout", "pre"):
            module = parse_file(_path(name, stage))
            for target in TARGETS:
                results[(name, stage, target)] = (
                    module, assign(module, target, AssignOptions(**OPTIONS)))
    return results


def test_every_result_verifies_and_is_scored_consistently(outputs):
    for key, (_, result) in outputs.items():
        assert result.violations == (), (key, result.violations[:3])
        # The true (rewritten) cost never exceeds what the model charged per use.
        assert result.objective <= result.model_objective, key
        assert result.objective == score(result.module, result.target).total, key
        for name, cost in result.baselines.items():
            assert result.objective <= cost, (key, name)
        assert result.status in ("OPTIMAL", "FEASIBLE")
        # The report claims only what is proven about the true cost.
        assert result.lower_bound is not None and result.lower_bound <= result.objective, key
        assert (result.status == "OPTIMAL") == (result.lower_bound == result.objective), key
        assert result.gap == (0.0 if result.status == "OPTIMAL"
                              else (result.objective - result.lower_bound) / result.objective)


EQUIVALENCE = ["conv2d_nchw", "transpose_reshape_chain", "einsum_zoo", "cond_branches",
               "rnn_scan_fwd", "argmax_multi_output_reduce", "linalg_custom_calls",
               "sort_argsort", "pad_concat_slice_reverse", "attention_fwd", "bf16_mixed_precision",
               "scatter_ops", "dynamic_slice_update", "reduce_2d", "mlp_fwd_tiny"]


@pytest.mark.parametrize("target", TARGETS)
def test_rewritten_modules_compute_the_same_values(outputs, target):
    for name in EQUIVALENCE:
        original, result = outputs[(name, "before_layout", target)]
        report = compare_modules(original, result.module, seed=1)
        assert report.equivalent, (name, target, report.to_json()["first_difference"])


def test_cpu_never_worse_than_xla_and_strictly_better_where_xla_copies_redundantly(outputs):
    strictly = []
    for name in MODULES:
        _, result = outputs[(name, "before_layout", "cpu")]
        xla_module = parse_file(_path(name, "after_layout"))
        xla = score(xla_module, "cpu").total
        assert result.objective <= xla, (name, result.objective, xla)
        redundant = _redundant_copies(xla_module)
        if redundant:
            assert result.objective < xla, (name, redundant, result.objective, xla)
            strictly.append(name)
    # The corpus has modules where XLA inserts duplicate or no-op copies.
    assert strictly, "expected at least one module with redundant XLA copies in the subset"


def _redundant_copies(module) -> int:
    """Copies that duplicate another copy of the same value and layout, or move nothing."""
    from hlo.bitcast import is_bitcast
    count = 0
    for comp in module.computations:
        shapes = {i.name: i.shape for i in comp.instructions}
        seen = set()
        for instr in comp.instructions:
            if instr.opcode != "copy":
                continue
            key = (instr.operands[0], str(instr.shape))
            src = shapes[instr.operands[0]]
            if key in seen or (hasattr(src, "dims") and is_bitcast(src, instr.shape)):
                count += 1
            seen.add(key)
    return count


@pytest.mark.xla
def test_xla_parser_accepts_every_output(outputs, tmp_path):
    texts = {f"{n}.{s}.{t}": print_module(r.module) for (n, s, t), (_, r) in outputs.items()}
    data = tmp_path / "texts.json"
    data.write_text(json.dumps(texts))
    program = textwrap.dedent("""
        import json, sys
        from jaxlib import _hlo
        bad = {}
        for key, text in json.load(open(sys.argv[1])).items():
            try:
                _hlo.hlo_module_from_text(text)
            except Exception as err:
                bad[key] = str(err)[:300]
        print(json.dumps(bad))
    """)
    run = subprocess.run([sys.executable, "-c", program, str(data)], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {}
