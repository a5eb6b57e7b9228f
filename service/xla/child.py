"""The process that talks to XLA: run as ``python child.py JOB.json RESULT.json``.

It imports only numpy, ml_dtypes and jax (not the rest of the project), because XLA aborts the
whole process on some inputs (a CHECK failure): the parent (:mod:`service.xla.execution`,
:mod:`service.xla.layout_pass`) reads the result file, or the exit status and stderr when there
is none. One job, one mode:

- ``run``: compile each module through the ``PRE_SCHEDULER`` swap (XLA schedules and emits the
  module we give it, with exactly its layouts; keys listed in ``plain`` go through XLA's whole
  pipeline instead: its own layouts and fusion, the semantics oracle), feed it the inputs in its entry parameter
  layouts, write every output leaf to ``OUT/KEY.npz``; with ``reps > 0`` then time the modules
  round by round in the ``order`` given (a label may repeat: the reference twice is A/B/A), on
  one shared set of input buffers per parameter layout.
- ``layouts``: compile with only XLA's ``layout-assignment`` pass enabled and return the module
  XLA dumps right after it.
"""

from __future__ import annotations

import glob
import json
import os
import sys
import time


def _pin(cpu: int | None) -> int | None:
    """Pin this process to one CPU (before XLA creates its threads): the last allowed one."""
    if cpu is None or not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    chosen = cpu if cpu in allowed else allowed[-1]
    os.sched_setaffinity(0, {chosen})
    return chosen


def _dtypes():
    import ml_dtypes
    import numpy as np

    names = {"pred": np.bool_, "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
             "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
             "f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16,
             "c64": np.complex64, "c128": np.complex128,
             "f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}
    return {k: np.dtype(v) for k, v in names.items()}


class Compiler:
    """Compiles HLO text on the CPU backend, swapping the given module in at PRE_SCHEDULER."""

    def __init__(self, platform: str = "cpu") -> None:
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.extend.xla as jx
        import jaxlib.lapack
        from jax._src.lib import _jax
        from jax.extend import backend as jb
        from jaxlib import _hlo

        jaxlib.lapack._lapack.initialize()  # LAPACK custom-calls segfault without it
        self.jax, self._jax, self._hlo = jax, _jax, _hlo
        self.backend = jb.get_backend(platform)
        self.device = self.backend.devices()[0]
        self._swap: tuple[str, bytes] | None = None
        self.swapped = False
        jx.register_hlo_module_transformation(
            self._callback, name="hlo_layout_swap", stage=jx.PipelineStage.PRE_SCHEDULER,
            platforms=platform)

    def _callback(self, serialized: bytes) -> bytes | None:
        # Every compile in the process passes here (device_put with a layout compiles too).
        if self._swap is None or self._hlo.XlaComputation(serialized).name() != self._swap[0]:
            return None
        self.swapped = True
        return self._swap[1]

    def _mlir(self, text: str) -> tuple[str, bytes, str]:
        proto = self._hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
        comp = self._hlo.XlaComputation(proto)
        return comp.name(), proto, self._jax.mlir.xla_computation_to_mlir_module(comp)

    def compile_swapped(self, text: str, carrier: str):
        """Compile ``carrier`` (same name and entry layouts; XLA's passes must accept it) and
        swap ``text`` in at PRE_SCHEDULER: the executable runs ``text`` as written."""
        name, proto, _ = self._mlir(text)
        _, _, mlir = self._mlir(carrier)
        self._swap, self.swapped = (name, proto), False
        try:
            exe = self.backend.compile_and_load(mlir, self._jax.DeviceList((self.device,)))
        finally:
            self._swap = None
        if not self.swapped:
            raise RuntimeError("XLA never offered the module to the swap hook")
        return exe

    def compile_plain(self, text: str):
        """XLA's whole pipeline on the module (its own layouts, fusion): its semantics."""
        _, _, mlir = self._mlir(text)
        return self.backend.compile_and_load(mlir, self._jax.DeviceList((self.device,)))

    def layout_assignment(self, text: str, dump_dir: str) -> str:
        _, _, mlir = self._mlir(text)
        options = self._jax.CompileOptions()
        options.env_option_overrides = [
            ("xla_enable_hlo_passes_only", "layout-assignment"),
            ("xla_dump_to", dump_dir),
            ("xla_dump_hlo_pass_re", "layout-assignment"),
        ]
        try:
            self.backend.compile_and_load(mlir, self._jax.DeviceList((self.device,)), options)
        except Exception:  # the backend may fail after the pass: the dump is written first
            pass
        found = sorted(glob.glob(os.path.join(dump_dir, "*.after_layout-assignment.*txt")))
        if not found:
            raise RuntimeError("XLA wrote no module after layout-assignment")
        with open(found[0]) as f:
            return f.read()


class Inputs:
    """One device buffer per (parameter, layout): modules with the same entry layouts share them."""

    def __init__(self, compiler: Compiler, arrays: list) -> None:
        self.compiler, self.arrays, self._buffers = compiler, arrays, {}

    def for_executable(self, exe) -> list:
        from jax.experimental.layout import Format, Layout
        from jax.sharding import SingleDeviceSharding

        layouts = exe.get_parameter_layouts()
        if len(layouts) != len(self.arrays):
            raise RuntimeError(f"the module takes {len(layouts)} parameters, "
                               f"{len(self.arrays)} inputs given")
        out = []
        for i, (array, layout) in enumerate(zip(self.arrays, layouts)):
            minor_to_major = tuple(layout._xla_layout().minor_to_major())
            key = (i, minor_to_major)
            if key not in self._buffers:
                major_to_minor = tuple(reversed(minor_to_major))
                fmt = Format(Layout(major_to_minor=major_to_minor),
                             SingleDeviceSharding(self.compiler.device))
                self._buffers[key] = self.compiler.jax.device_put(array, fmt)
                self._buffers[key].block_until_ready()
            out.append(self._buffers[key])
        return out


def _execute(exe, buffers) -> list:
    results = exe.execute_sharded(buffers).disassemble_into_single_device_arrays()
    leaves = [group[0] for group in results]
    for leaf in leaves:
        leaf.block_until_ready()
    return leaves


def _load_inputs(job: dict) -> list:
    import numpy as np

    types = _dtypes()
    data = np.load(job["inputs"])
    arrays = []
    for i, t in enumerate(job["types"]):
        raw = data[f"a{i}"]
        arrays.append(raw.astype(bool) if t == "pred" else raw.view(types[t]))
    return arrays


def _save_outputs(leaves: list, path: str) -> list[str]:
    import numpy as np

    names = {v: k for k, v in _dtypes().items()}
    arrays = [np.asarray(leaf) for leaf in leaves]
    raw = {f"o{i}": x if x.dtype == np.bool_ else x.view(f"u{x.dtype.itemsize}")
           for i, x in enumerate(arrays)}
    np.savez(path, **raw)
    return [names[x.dtype] for x in arrays]


def run(job: dict) -> dict:
    cpu = _pin(job.get("cpu"))
    compiler = Compiler(job.get("platform", "cpu"))
    inputs = Inputs(compiler, _load_inputs(job))
    executables, result = {}, {"cpu": cpu, "modules": {}, "times_ms": {}}
    for key, path in job["modules"].items():
        try:
            exe = _compile(compiler, path, key in job.get("plain", ()))
            leaves = _execute(exe, inputs.for_executable(exe))
            types = _save_outputs(leaves, os.path.join(job["out"], f"{key}.npz"))
        except Exception as exc:  # XLA refused it: its message is the reason
            result["modules"][key] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        executables[key] = exe
        result["modules"][key] = {"types": types}
    order = [key for key in job.get("order", []) if key.split("#")[0] in executables]
    for key in order:
        # A second run of a module per round gets an executable of its own, compiled apart:
        # run through the same executable twice per round, the reference kept its code and
        # buffers warmer than any candidate and measured faster than identical copies of it.
        if key not in executables:
            base = key.split("#")[0]
            executables[key] = _compile(compiler, job["modules"][base], base in job.get("plain", ()))
    reps = int(job.get("reps", 0)) if order else 0
    buffers = {key: inputs.for_executable(executables[key]) for key in order}
    for _ in range(int(job.get("warmup", 1)) if reps else 0):
        for key in order:
            _execute(executables[key], buffers[key])
    times = {key: [] for key in order}
    for r in range(reps):
        shift = r % len(order)  # rotate the order so no module always runs first
        for key in order[shift:] + order[:shift]:
            exe = executables[key]
            start = time.perf_counter()
            leaves = _execute(exe, buffers[key])
            times[key].append((time.perf_counter() - start) * 1000.0)
            del leaves
    result["times_ms"] = times
    return result


def _compile(compiler: Compiler, path: str, plain: bool):
    """The executable of the module at ``path``: swapped in, or through XLA's whole pipeline."""
    with open(path) as f:
        text = f.read()
    if plain:
        return compiler.compile_plain(text)
    with open(path[: -len(".hlo")] + ".carrier.hlo") as f:
        return compiler.compile_swapped(text, f.read())


def layouts(job: dict) -> dict:
    compiler = Compiler()
    with open(job["module"]) as f:
        return {"module": compiler.layout_assignment(f.read(), job["out"])}


def main(argv: list[str]) -> int:
    with open(argv[1]) as f:
        job = json.load(f)
    mode = {"run": run, "layouts": layouts}[job["mode"]]
    try:
        result = mode(job)
    except Exception as exc:  # reported to the parent as data: XLA's own message
        result = {"error": f"{type(exc).__name__}: {exc}"}
    with open(argv[2], "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
