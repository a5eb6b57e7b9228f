"""The interpreter agrees with XLA:CPU (jaxlib) on a representative set of corpus modules.

All modules run in ONE subprocess (XLA can abort the process), compiled from
their ``pre`` text by the recipe of ORACLES.md §2, on the same random inputs
the interpreter gets. Integers and ``pred`` must match exactly. Floats must
agree normwise (``|xla - ours| <= rtol * max|xla|`` per output) with rtol
``2e-4`` for f32/c64 modules and ``5e-2`` when bf16 is involved: XLA uses its
own polynomial approximations for exp/tanh/log, sums in f32 in its own order and
keeps excess precision in fused bf16 chains, while the interpreter accumulates
in f64 and rounds every bf16 instruction. Float inputs have standard deviation
0.25 (0.1 for ``rnn_scan_fwd``, 32 steps of ``tanh(x Wx + h Wh + b)``, so that
the recurrence is contractive: with larger weights it is chaotic and any
rounding difference grows to O(1)); eigen/QR factors of random matrices get
``2e-3``.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import shared_path
from xla_cpu import execute_in_xla, leaves

from hlo.equivalence import random_arguments
from hlo.interpreter import evaluate
from hlo.parser import parse_file

#: name -> what it exercises
MODULES = {
    "conv2d_nhwc": "convolution",
    "conv_grouped_dilated": "grouped, dilated convolution",
    "attention_fwd": "dot / attention, softmax",
    "reduce_3d": "reductions",
    "argmax_multi_output_reduce": "variadic reduce",
    "pooling_nhwc_nchw": "reduce-window, select-and-scatter",
    "rnn_scan_fwd": "while",
    "cond_branches": "conditional",
    "embedding_fwd_bwd": "gather / scatter",
    "scatter_ops": "scatter combiners",
    "sort_argsort": "sort, multi-operand, bf16",
    "linalg_custom_calls": "LAPACK custom-calls",
    "bf16_mixed_precision": "bf16 / f16",
    "int8_quant_matmul": "integer dots, converts",
    "rng_dropout_init": "threefry bit arithmetic, u32/u64",
    "fft_1d": "fft",
    "dynamic_slice_update": "dynamic-slice / update",
    "cumsum_scan_ops": "reduce-window scans",
}

#: Modules whose outputs are ill-conditioned functions of rounding differences.
LOOSER = {"linalg_custom_calls": 2e-3}  # eigenvectors / QR factors of random matrices
#: Input scale: the recurrence must be contractive (|Wh| < 1) to be comparable.
SCALE = {"rnn_scan_fwd": 0.1}

@pytest.mark.xla
def test_interpreter_matches_xla_cpu(tmp_path):
    jobs, ours, tolerances = [], {}, {}
    for k, name in enumerate(MODULES):
        path = shared_path("corpus", f"{name}.pre.hlo")
        module = parse_file(path)
        args = random_arguments(module, np.random.default_rng([11, k]), float_scale=SCALE.get(name, 0.25))
        text = path.read_text()
        jobs.append((text, args))
        ours[name] = leaves(evaluate(module, args))
        tolerances[name] = 5e-2 if ("bf16[" in text or "f16[" in text) else LOOSER.get(name, 2e-4)
    results = dict(zip(MODULES, execute_in_xla(jobs, tmp_path)))

    failures = []
    for name in MODULES:
        theirs = results[name]
        mine = ours[name]
        assert len(theirs) == len(mine), name
        for i, (x, y) in enumerate(zip(theirs, mine)):
            assert x.shape == y.shape and x.dtype == y.dtype, (name, i, x.dtype, y.dtype)
            if x.dtype.kind in "biu":
                if not np.array_equal(x, y):
                    failures.append(f"{name} output {i}: integers differ at {np.argwhere(x != y)[0]}")
                continue
            xw = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
            yw = y.astype(xw.dtype)
            nan_x, nan_y = np.isnan(xw), np.isnan(yw)
            if not np.array_equal(nan_x, nan_y):
                failures.append(f"{name} output {i}: NaN positions differ")
                continue
            finite = np.isfinite(xw) & np.isfinite(yw)
            if not np.array_equal(xw[~finite & ~nan_x], yw[~finite & ~nan_x]):
                failures.append(f"{name} output {i}: infinities differ")
            scale = float(np.abs(xw[finite]).max(initial=0.0)) or 1.0
            err = float(np.abs(xw[finite] - yw[finite]).max(initial=0.0)) / scale
            if err > tolerances[name]:
                failures.append(f"{name} output {i}: normwise error {err:.3g} > {tolerances[name]}")
    assert not failures, "\n".join(failures)
