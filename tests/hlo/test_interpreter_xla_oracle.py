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

import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import shared_path

from hlo.equivalence import random_arguments
from hlo.interpreter import evaluate
from hlo.interpreter.values import dtype_of, element_type_of, from_bits, to_bits
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

CHILD = r"""
import json, sys
import numpy as np
import ml_dtypes  # noqa: F401  (registers bf16 & co. with numpy)
import jax
jax.config.update("jax_enable_x64", True)
import jaxlib.lapack
jaxlib.lapack._lapack.initialize()
from jaxlib import _hlo
from jax._src.lib import _jax
from jax.extend import backend as jb

DT = {"pred": np.bool_, "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
      "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16,
      "f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16,
      "c64": np.complex64, "c128": np.complex128}
NAMES = {np.dtype(v): k for k, v in DT.items()}
be = jb.get_backend("cpu")
dev = be.devices()[0]
jobs = json.load(open(sys.argv[1]))
for job in jobs:
    data = np.load(job["inputs"])
    args = [data[f"a{i}"].view(DT[t]) if t != "pred" else data[f"a{i}"].astype(bool)
            for i, t in enumerate(job["types"])]
    text = open(job["hlo"]).read()
    comp = _hlo.XlaComputation(_hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto())
    mlir = _jax.mlir.xla_computation_to_mlir_module(comp)
    exe = be.compile_and_load(mlir, _jax.DeviceList((dev,)))
    outs = exe.execute_sharded([jax.device_put(a, dev) for a in args])
    leaves = [np.asarray(group[0]) for group in outs.disassemble_into_single_device_arrays()]
    raw = {f"o{i}": x if x.dtype == np.bool_ else x.view(f"u{x.dtype.itemsize}")
           for i, x in enumerate(leaves)}
    np.savez(job["out"], **raw)
    with open(job["out"] + ".json", "w") as f:
        json.dump([NAMES[x.dtype] for x in leaves], f)
    print("done", job["name"], flush=True)
"""


def _leaves(value):
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _raw(x: np.ndarray) -> np.ndarray:
    return x if x.dtype == np.bool_ else to_bits(x)


@pytest.mark.xla
def test_interpreter_matches_xla_cpu(tmp_path):
    jobs, ours, tolerances = [], {}, {}
    for k, name in enumerate(MODULES):
        path = shared_path("corpus", f"{name}.pre.hlo")
        module = parse_file(path)
        args = random_arguments(module, np.random.default_rng([11, k]), float_scale=SCALE.get(name, 0.25))
        types = [element_type_of(a.dtype) for a in args]
        np.savez(tmp_path / f"{name}.in.npz", **{f"a{i}": _raw(a) for i, a in enumerate(args)})
        jobs.append({"name": name, "hlo": str(path), "inputs": str(tmp_path / f"{name}.in.npz"),
                     "types": types, "out": str(tmp_path / f"{name}.out.npz")})
        ours[name] = _leaves(evaluate(module, args))
        text = path.read_text()
        tolerances[name] = 5e-2 if ("bf16[" in text or "f16[" in text) else LOOSER.get(name, 2e-4)
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "jobs.json")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]

    failures = []
    for job in jobs:
        name = job["name"]
        data = np.load(job["out"])
        types = json.loads(open(job["out"] + ".json").read())
        theirs = [from_bits(data[f"o{i}"], dtype_of(t)) if t != "pred" else data[f"o{i}"]
                  for i, t in enumerate(types)]
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
