"""The process that talks to XLA: run as ``python child.py JOB.json RESULT.json``.

It imports only numpy, ml_dtypes and jax (not the rest of the project), because XLA aborts the
whole process on some inputs (a CHECK failure): the parent (:mod:`service.xla.execution`,
:mod:`service.xla.layout_pass`) reads the result file, or the exit status and stderr when there
is none. One job, one mode:

- ``run``: compile each module through the ``PRE_SCHEDULER`` swap (XLA schedules and emits the
  module we give it, with exactly its layouts; keys listed in ``plain`` go through XLA's whole
  pipeline instead: its own layouts and fusion, the semantics oracle; keys in ``pinned``, a
  key -> ``{"params": [...], "results": [...]}`` map of minor_to_major texts, go through the
  whole pipeline with those entry layouts fixed: how single-op microbenchmarks run on a
  backend whose emitter takes only fused modules, such as XLA:GPU), feed it the inputs in its
  entry parameter layouts, write every output leaf to ``OUT/KEY.npz``; with ``reps > 0`` then time the modules
  round by round in the ``order`` given (a label may repeat: the reference twice is A/B/A), on
  one shared set of input buffers per parameter layout.
- ``layouts``: compile with only XLA's ``layout-assignment`` pass enabled and return the module
  XLA dumps right after it.
"""

from __future__ import annotations

import glob
import json
import math
import os
import sys
import time

#: At most this many executions in one timed sample.
_MAX_RUNS = 1000


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


def _private_jax():
    """jaxlib's extension module (``_jax``; ``xla_extension`` before jaxlib 0.7)."""
    try:
        from jax._src.lib import _jax
    except ImportError:
        from jax._src.lib import xla_extension as _jax
    return _jax


def _private_hlo():
    """The module with ``hlo_module_from_text`` and ``XlaComputation``."""
    try:
        from jaxlib import _hlo
    except ImportError:
        return _private_jax()
    return _hlo


def _layout_classes():
    """jax's ``(Format, Layout)``: a sharding with a layout, and the layout."""
    try:
        from jax.experimental.layout import Format, Layout
    except ImportError:
        from jax.layout import Format, Layout  # type: ignore[no-redef]
    return Format, Layout


def _minor_to_major(layout) -> tuple[int, ...]:
    """The dim order of a layout jax reports for an executable's parameter or output."""
    try:
        return tuple(layout._xla_layout().minor_to_major())
    except AttributeError:  # a jax whose layouts are XLA's own objects
        return tuple(layout.minor_to_major())


def _text(minor_to_major: tuple[int, ...]) -> str:
    return "{" + ",".join(map(str, minor_to_major)) + "}"


def pin_entry_layouts(mlir: str, params: list[str], results: list[str]) -> str:
    """``mlir`` with ``mhlo.layout_mode`` set on the entry function's arguments and results
    (how jax asks XLA for given entry layouts)."""
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib.mlir import ir

    with jax_mlir.make_ir_context():
        module = ir.Module.parse(mlir)
        main = next(op for op in module.body.operations
                    if "sym_name" in op.attributes
                    and ir.StringAttr(op.attributes["sym_name"]).value == "main")
        kinds = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        if len(kinds.inputs) != len(params) or len(kinds.results) != len(results):
            raise RuntimeError(
                f"the entry function takes {len(kinds.inputs)} arguments and returns "
                f"{len(kinds.results)} results; {len(params)} and {len(results)} layouts given")

        def attrs(layouts: list[str]):
            return ir.ArrayAttr.get([ir.DictAttr.get({"mhlo.layout_mode": ir.StringAttr.get(x)})
                                     for x in layouts])

        main.attributes["arg_attrs"] = attrs(params)
        main.attributes["res_attrs"] = attrs(results)
        return str(module)


class Compiler:
    """Compiles HLO text on a jax backend: swapped in at PRE_SCHEDULER (exactly its layouts;
    XLA:CPU), through XLA's whole pipeline (``plain``), or through the whole pipeline with its
    entry layouts pinned (``pinned``)."""

    def __init__(self, platform: str = "cpu") -> None:
        import jax

        jax.config.update("jax_enable_x64", True)
        from jax.extend import backend as jb

        self.jax, self._jax, self._hlo = jax, _private_jax(), _private_hlo()
        if platform == "cpu":
            try:  # LAPACK custom-calls segfault without it (jaxlib 0.10)
                import jaxlib.lapack

                jaxlib.lapack._lapack.initialize()
            except (ImportError, AttributeError):
                pass
        self.platform = platform
        self.backend = jb.get_backend(platform)
        self.device = self.backend.devices()[0]
        self._swap: tuple[str, bytes] | None = None
        self._hooked = False
        self.swapped = False

    def _hook(self) -> None:
        """Register the PRE_SCHEDULER swap once, on the first swapped compile."""
        if self._hooked:
            return
        import jax.extend.xla as jx

        # The hook names the PJRT plugin ("cuda"), which a backend asked for as "gpu" is.
        names = dict.fromkeys([self.platform, self.backend.platform, "cuda", "rocm"])
        for i, name in enumerate(names):
            try:
                jx.register_hlo_module_transformation(
                    self._callback, name="hlo_layout_swap",
                    stage=jx.PipelineStage.PRE_SCHEDULER, platforms=name)
                break
            except Exception:  # not this plugin's name: the next one, or the last error
                if i == len(names) - 1:
                    raise
        self._hooked = True

    def _callback(self, serialized: bytes) -> bytes | None:
        # Every compile in the process passes here (device_put with a layout compiles too).
        if self._swap is None or self._hlo.XlaComputation(serialized).name() != self._swap[0]:
            return None
        self.swapped = True
        return self._swap[1]

    def _mlir(self, text: str) -> tuple[str, bytes, str]:
        proto = self._hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
        comp = self._hlo.XlaComputation(proto)
        convert = getattr(self._jax.mlir, "xla_computation_to_mlir_module", None)
        if convert is not None:
            return comp.name(), proto, convert(comp)
        from jax._src.interpreters import mlir as jax_mlir
        from jax._src.lib.mlir import ir

        with jax_mlir.make_ir_context():  # a newer jaxlib: StableHLO bytecode
            return comp.name(), proto, str(ir.Module.parse(self._jax.mlir.hlo_to_stablehlo(proto)))

    def compile_swapped(self, text: str, carrier: str):
        """Compile ``carrier`` (same name and entry layouts; XLA's passes must accept it) and
        swap ``text`` in at PRE_SCHEDULER: the executable runs ``text`` as written."""
        self._hook()
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

    def compile_pinned(self, text: str, params: list[str], results: list[str]):
        """XLA's whole pipeline with the entry layouts pinned to ``params`` and ``results``
        (minor_to_major texts such as ``{0,1}``, one per parameter and per result leaf): XLA
        fuses and emits the module for its backend, and an op whose operands and results are
        all entry arrays runs on exactly those layouts. Raises when the executable's entry
        layouts are not the ones asked for."""
        _, _, mlir = self._mlir(text)
        exe = self.backend.compile_and_load(pin_entry_layouts(mlir, params, results),
                                            self._jax.DeviceList((self.device,)))
        got_params = [_text(_minor_to_major(x)) for x in exe.get_parameter_layouts()]
        got_results = [_text(_minor_to_major(x)) for x in exe.get_output_layouts()]
        if got_params != list(params) or got_results != list(results):
            raise RuntimeError(
                f"XLA did not keep the entry layouts: asked ({', '.join(params)}) -> "
                f"({', '.join(results)}), compiled ({', '.join(got_params)}) -> "
                f"({', '.join(got_results)})")
        return exe

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
        from jax.sharding import SingleDeviceSharding

        layouts = exe.get_parameter_layouts()
        if len(layouts) != len(self.arrays):
            raise RuntimeError(f"the module takes {len(layouts)} parameters, "
                               f"{len(self.arrays)} inputs given")
        out = []
        for i, (array, layout) in enumerate(zip(self.arrays, layouts)):
            minor_to_major = _minor_to_major(layout)
            key = (i, minor_to_major)
            if key not in self._buffers:
                major_to_minor = tuple(reversed(minor_to_major))
                where = SingleDeviceSharding(self.compiler.device)
                if major_to_minor != tuple(range(len(major_to_minor))):
                    format_, layout_ = _layout_classes()
                    where = format_(layout_(major_to_minor=major_to_minor), where)
                self._buffers[key] = self.compiler.jax.device_put(array, where)
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


def _save_outputs(leaves: list, path: str | None) -> list[str]:
    import numpy as np

    names = {v: k for k, v in _dtypes().items()}
    if path is None:  # only the types: the caller times the modules, it compares nothing
        return [names[np.dtype(leaf.dtype)] for leaf in leaves]
    arrays = [np.asarray(leaf) for leaf in leaves]
    raw = {f"o{i}": x if x.dtype == np.bool_ else x.view(f"u{x.dtype.itemsize}")
           for i, x in enumerate(arrays)}
    np.savez(path, **raw)
    return [names[x.dtype] for x in arrays]


def _describe(compiler: Compiler) -> dict[str, str]:
    """The jax version and the device kind the modules run with (empty where unknown)."""
    return {"jax": str(getattr(getattr(compiler, "jax", None), "__version__", "")),
            "device": str(getattr(getattr(compiler, "device", None), "device_kind", ""))}


def run(job: dict) -> dict:
    cpu = _pin(job.get("cpu"))
    compiler = Compiler(job.get("platform", "cpu"))
    inputs = Inputs(compiler, _load_inputs(job))
    executables, result = {}, {"cpu": cpu, "modules": {}, "times_ms": {}, **_describe(compiler)}
    for key, path in job["modules"].items():
        try:
            exe = _compile(compiler, path, key, job)
            leaves = _execute(exe, inputs.for_executable(exe))
            types = _save_outputs(leaves, os.path.join(job["out"], f"{key}.npz")
                                  if job.get("outputs", True) else None)
        except Exception as exc:  # XLA refused it: its message is the reason
            result["modules"][key] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        executables[key] = exe
        result["modules"][key] = {"types": types, "temp_bytes": _temp_bytes(exe)}
    order = [key for key in job.get("order", []) if key.split("#")[0] in executables]
    for key in order:
        # A second run of a module per round gets an executable of its own, compiled apart:
        # run through the same executable twice per round, the reference kept its code and
        # buffers warmer than any candidate and measured faster than identical copies of it.
        if key not in executables:
            base = key.split("#")[0]
            executables[key] = _compile(compiler, job["modules"][base], base, job)
    reps = int(job.get("reps", 0)) if order else 0
    buffers = {key: inputs.for_executable(executables[key]) for key in order}
    for _ in range(int(job.get("warmup", 1)) if reps else 0):
        for key in order:
            _execute(executables[key], buffers[key])
    runs = _runs_per_sample(executables, buffers, order, float(job.get("sample_ms", 0)))
    times = {key: [] for key in order}
    for r in range(reps):
        shift = r % len(order)  # rotate the order so no module always runs first
        for key in order[shift:] + order[:shift]:
            times[key].append(_sample_ms(executables[key], buffers[key], runs))
    result["times_ms"], result["runs_per_sample"] = times, runs
    return result


def _temp_bytes(exe) -> int | None:
    """The bytes of XLA's temporary buffers for one execution (its buffer assignment), where
    the backend reports them."""
    try:
        return int(exe.get_compiled_memory_stats().temp_size_in_bytes)
    except Exception:  # a backend without memory statistics
        return None


def _sample_ms(exe, buffers, runs: int) -> float:
    """Milliseconds per execution of ``exe``, over ``runs`` executions back to back."""
    start = time.perf_counter()
    for _ in range(runs):
        _execute(exe, buffers)
    return (time.perf_counter() - start) * 1000.0 / runs


def _runs_per_sample(executables, buffers, order, sample_ms: float) -> int:
    """How many executions one timed sample takes so that the fastest module's sample lasts
    ``sample_ms`` (1 when that is 0, nothing is timed or a single run is longer): a lone run
    of a module of a few hundred microseconds swings by ±10 % from one to the next (measured:
    XLA's layouts for cond_branches, 0.13 ms, against identical copies, quartiles 0.86 to
    1.03 in single runs, 0.91 to 1.00 in 5 ms samples)."""
    if sample_ms <= 0 or not order:
        return 1
    fastest = min(_sample_ms(executables[key], buffers[key], 1) for key in order)
    return max(1, min(_MAX_RUNS, math.ceil(sample_ms / max(fastest, 1e-3))))


def _compile(compiler: Compiler, path: str, key: str, job: dict):
    """The executable of module ``key`` (at ``path``): swapped in, through XLA's whole
    pipeline (``plain``), or through it with its entry layouts pinned (``pinned``)."""
    with open(path) as f:
        text = f.read()
    if key in job.get("plain", ()):
        return compiler.compile_plain(text)
    pins = job.get("pinned", {}).get(key)
    if pins is not None:
        return compiler.compile_pinned(text, pins["params"], pins["results"])
    with open(path[: -len(".hlo")] + ".carrier.hlo") as f:
        return compiler.compile_swapped(text, f.read())


def layouts(job: dict) -> dict:
    compiler = Compiler(job.get("platform", "cpu"))
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
