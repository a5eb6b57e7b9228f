"""Run HLO modules in XLA:CPU (jaxlib) in one subprocess, for tests that use XLA as the oracle.

The recipe is ORACLES.md §2: text -> ``HloModuleProto`` -> MLIR -> compile on the
CPU client -> execute. Layouts inside the module are dropped on this path, so it
gives the semantics. LAPACK kernels are initialized and x64 is enabled first.
Everything runs in a child process because XLA aborts the process on some inputs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hlo.interpreter.values import dtype_of, element_type_of, from_bits, to_bits

CHILD = r"""
import json, sys
import numpy as np
import ml_dtypes  # noqa: F401  (registers bf16 & co. with numpy)
import jax
jax.config.update("jax_enable_x64", True)
import jaxlib.lapack
jaxlib.lapack._lapack.initialize()
import jax.experimental.sparse  # noqa: F401  (registers cpu_csr_sparse_dense_ffi)
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
    args = [data[f"a{i}"].view(DT[t]) if t not in ("pred", "c64", "c128") else data[f"a{i}"]
            for i, t in enumerate(job["types"])]
    proto = _hlo.hlo_module_from_text(job["hlo"]).as_serialized_hlo_module_proto()
    comp = _hlo.XlaComputation(proto)
    mlir = _jax.mlir.xla_computation_to_mlir_module(comp)
    exe = be.compile_and_load(mlir, _jax.DeviceList((dev,)))
    outs = exe.execute_sharded([jax.device_put(a, dev) for a in args])
    leaves = [np.asarray(group[0]) for group in outs.disassemble_into_single_device_arrays()]
    raw = {f"o{i}": x if x.dtype.kind in "bc" else x.view(f"u{x.dtype.itemsize}")
           for i, x in enumerate(leaves)}
    np.savez(job["out"], **raw)
    with open(job["out"] + ".json", "w") as f:
        json.dump([NAMES[x.dtype] for x in leaves], f)
"""


def _raw(x: np.ndarray) -> np.ndarray:
    return x if x.dtype.kind in "bc" else to_bits(x)  # npz keeps bool and complex as they are


def execute_in_xla(
    jobs: Sequence[tuple[str, Sequence[np.ndarray]]], workdir: Path, timeout: float = 600
) -> list[list[np.ndarray]]:
    """Run each ``(hlo_text, arguments)`` in XLA:CPU; return each module's output leaves."""
    specs = []
    for k, (text, args) in enumerate(jobs):
        inputs = workdir / f"job{k}.in.npz"
        np.savez(inputs, **{f"a{i}": _raw(np.asarray(a)) for i, a in enumerate(args)})
        specs.append({"hlo": text, "inputs": str(inputs), "out": str(workdir / f"job{k}.out.npz"),
                      "types": [element_type_of(np.asarray(a).dtype) for a in args]})
    (workdir / "jobs.json").write_text(json.dumps(specs))
    proc = subprocess.run([sys.executable, "-c", CHILD, str(workdir / "jobs.json")],
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"XLA child failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    results = []
    for spec in specs:
        data = np.load(spec["out"])
        types = json.loads(Path(spec["out"] + ".json").read_text())
        results.append([data[f"o{i}"] if t in ("pred", "c64", "c128")
                        else from_bits(data[f"o{i}"], dtype_of(t)) for i, t in enumerate(types)])
    return results


def leaves(value) -> list[np.ndarray]:
    """The arrays of a (nested) tuple value, in order."""
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in leaves(v)]
    return [value]
