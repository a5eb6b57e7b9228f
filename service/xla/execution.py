"""Run laid-out modules in XLA:CPU with exactly their layouts; their outputs and their times.

``run_modules([("xla", reference), ("ours", candidate)], reps=10)`` prints each module, feeds it
the same inputs (seeded, or given) in its own entry parameter layouts, and runs it in a child
process (:mod:`service.xla.child`) through the ``PRE_SCHEDULER`` swap: XLA schedules, emits
and runs the module as written, so two modules that differ only in layouts can be timed
against each other. The first module is the reference.

How times are taken (ORACLES §3, learned on a shared 2-core machine): the child is pinned to
one CPU; modules with the same entry layouts share one set of input buffers; after a warm-up,
every round runs each module once, in a rotated order (one timed sample: the module run back
to back as often as makes the fastest module's sample last ``sample_ms``); the reference runs
twice per round (A/B/A), its two runs half a round apart (:func:`_round_order`) and each through an executable
compiled on its own, so the noise floor is measured with the numbers. Ratios are paired: per round,
candidate over the mean of the reference's two runs, then the median and quartiles over
rounds. With ``sessions > 1`` the rounds are shared out among that many children, each
compiling every module afresh: an executable keeps a speed of its own for the life of its
process (measured on a 1 ms convolution module, the same two modules timed in five
children: ratios 0.97 to 1.04, each child's quartiles 0.03 wide; two executables of one
module in one child up to 13 % apart), which rounds within one child cannot average out.

A module the path cannot run is not an error: its :class:`Execution` carries a ``refusal``
(a static reason from :mod:`service.xla.refusals`, XLA's compile error, or the abort message
when XLA killed the child). Only a missing jax raises (:class:`~service.xla.errors.XlaUnavailable`).

Example::

    m = run_modules([("xla", parse_file("a.after_layout.hlo")), ("ours", ours)], reps=10)
    m.executions[1].refusal          -> None
    m.matches(1)                     -> Comparison(ok=True, exact=False, max_error=3e-07, ...)
    m.ratio(1).median                -> 0.97   (ours / xla, paired)
    m.noise().median                 -> 1.004  (xla / xla)
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Sequence

import numpy as np

from hlo.equivalence import Difference, compare_normwise, module_tolerance, random_arguments
from hlo.errors import HloError
from hlo.interpreter.values import dtype_of, element_type_of, from_bits, to_bits
from hlo.ir import Module
from hlo.printer import print_module
from hlo.shape import ArrayShape, leaf_arrays
from service.xla.adapters import adapt_for_xla
from service.xla.availability import require_xla
from service.xla.refusals import parameter_reason, pinned_reason, refusal_reason

CHILD = Path(__file__).with_name("child.py")
#: Float inputs are normal with this standard deviation (keeps exp/tanh chains well-conditioned).
FLOAT_SCALE = 0.25
_AGAIN = "#again"
#: A timed sample lasts about this long: the fastest module runs back to back that often.
SAMPLE_MS = 5.0


@dataclass(frozen=True, slots=True)
class Execution:
    """One module on the path: its output leaves (logical order), or why it did not run."""

    label: str
    outputs: tuple[np.ndarray, ...] = ()
    refusal: str | None = None
    times_ms: tuple[float, ...] = ()
    #: XLA's temporary buffers for one execution, in bytes (its buffer assignment).
    temp_bytes: int | None = None

    @property
    def ran(self) -> bool:
        return self.refusal is None

    @property
    def median_ms(self) -> float | None:
        return float(np.median(self.times_ms)) if self.times_ms else None

    @property
    def min_ms(self) -> float | None:
        return float(min(self.times_ms)) if self.times_ms else None


@dataclass(frozen=True, slots=True)
class PairedRatio:
    """Per-round ratios ``a/b`` summarized: median and quartiles."""

    median: float
    low: float  # 25th percentile
    high: float  # 75th percentile
    rounds: int

    @staticmethod
    def of(a: Sequence[float], b: Sequence[float]) -> PairedRatio | None:
        if not a or len(a) != len(b):
            return None
        ratios = np.asarray(a, float) / np.asarray(b, float)
        low, median, high = np.percentile(ratios, [25, 50, 75])
        return PairedRatio(float(median), float(low), float(high), len(ratios))

    def to_json(self) -> dict[str, float | int]:
        return {"median": round(self.median, 4), "p25": round(self.low, 4),
                "p75": round(self.high, 4), "rounds": self.rounds}


@dataclass(frozen=True, slots=True)
class Comparison:
    """A module's outputs against the reference's."""

    ok: bool
    exact: bool
    max_error: float
    difference: Difference | None = None
    message: str | None = None  # the outputs cannot be compared (shapes differ)


@dataclass(frozen=True, slots=True)
class Measurement:
    executions: tuple[Execution, ...]  # [0] is the reference
    reference_again_ms: tuple[float, ...] = ()  # the reference's second run per round (A/B/A)
    rtol: float = 0.0
    cpu: int | None = None
    seed: int = 0
    jax_version: str = ""  # the jax the child ran
    device: str = ""  # the device it ran on, as jax names its kind
    runs_per_sample: int = 1  # executions back to back in one timed sample (the first child's)
    sessions: int = 1  # children whose rounds the times hold (see :func:`run_modules`)

    def ratio(self, index: int) -> PairedRatio | None:
        """Paired time ratio of module ``index`` over the reference: per round, over the mean
        of the reference's two runs where it ran twice (A/B/A: a drift within the round
        cancels), else over its one run."""
        reference = self.executions[0].times_ms
        if index != 0 and len(self.reference_again_ms) == len(reference):
            reference = tuple((a + b) / 2 for a, b in zip(reference, self.reference_again_ms))
        return PairedRatio.of(self.executions[index].times_ms, reference)

    def noise(self) -> PairedRatio | None:
        """The reference against itself (A/A): the noise floor of :meth:`ratio`."""
        return PairedRatio.of(self.reference_again_ms, self.executions[0].times_ms)

    def matches(self, index: int) -> Comparison | None:
        """Module ``index``'s outputs against the reference's; ``None`` if either did not run."""
        ref, got = self.executions[0], self.executions[index]
        if not (ref.ran and got.ran):
            return None
        try:
            diff, exact, err = compare_normwise(tuple(ref.outputs), tuple(got.outputs), rtol=self.rtol)
        except HloError as exc:
            return Comparison(False, False, 0.0, None, exc.message)
        return Comparison(diff is None, exact, err, diff)


def run_modules(
    modules: Sequence[tuple[str, Module]],
    *,
    inputs: Sequence[np.ndarray] | None = None,
    seed: int = 0,
    reps: int = 0,
    warmup: int = 1,
    pin_cpu: bool = True,
    timeout_s: float | None = None,
    plain: Collection[str] = (),
    pinned: Collection[str] = (),
    platform: str = "cpu",
    outputs: bool = True,
    sample_ms: float = SAMPLE_MS,
    sessions: int = 1,
) -> Measurement:
    """Run every module on the same inputs; with ``reps > 0`` also time them (see module doc).

    Modules whose label is in ``plain`` are not swapped in: XLA compiles them through its
    whole pipeline (its own layouts, fusion), which gives their semantics whatever layouts
    they carry (ORACLES §2), e.g. the original module that a rewrite must agree with.
    Modules in ``pinned`` go through the whole pipeline with their entry layouts fixed as
    written (:func:`entry_pins`): XLA chooses every other layout and fuses, so only a module
    whose ops read and write entry arrays alone (a microbenchmark) runs on exactly its
    layouts; XLA:GPU's emitter takes no unfused module, so this is how it runs ours.
    ``platform`` names the jax backend (``cpu``, ``gpu``, ...): the swap is measured on
    ``cpu`` only. ``outputs=False``: the outputs are not brought back (timing alone).
    ``sample_ms``: each timed sample runs a module back to back until the fastest module's
    sample lasts about this long (``times_ms`` stay per execution); 0 times single runs.
    ``timeout_s``: the child's time limit, by default :func:`default_timeout_s` of the modules.
    ``sessions``: the timed rounds are shared out among this many children, run one after
    another (see module doc); the outputs come from the first. A later child that dies adds
    no rounds (``Measurement.sessions`` counts those that did).
    """
    require_xla()
    if not modules:
        return Measurement((), seed=seed)
    if timeout_s is None:
        timeout_s = default_timeout_s(module for _, module in modules)
    labels = [label for label, _ in modules]
    if len(set(labels)) != len(labels):
        raise ValueError(f"module labels must be distinct: {labels}")
    reference = modules[0][1]
    whole = set(plain) | set(pinned)
    refusals = {label: (pinned_reason(module) if label in pinned else parameter_reason(module)
                        if label in plain else refusal_reason(module))
                for label, module in modules}
    signature = _signature(reference)
    for label, module in modules[1:]:
        if refusals[label] is None and _signature(module) != signature:
            refusals[label] = (f"entry parameters ({', '.join(_signature(module))}) differ from "
                               f"the reference's ({', '.join(signature)})")
    if inputs is None:
        inputs = random_arguments(reference, np.random.default_rng(seed), FLOAT_SCALE)
    with tempfile.TemporaryDirectory(prefix="hlo-layout-xla-") as tmp:
        work = Path(tmp)
        keys = {}
        for k, (label, module) in enumerate(modules):
            if refusals[label] is None:
                keys[label] = f"m{k}"
                module = undonated(module)
                runs = (pinned_form(module) if label in pinned else module if label in plain
                        else adapt_for_xla(module))
                (work / f"m{k}.hlo").write_text(print_module(runs))
                if label not in whole:
                    (work / f"m{k}.carrier.hlo").write_text(print_module(carrier(module)))
        _write_inputs(work / "inputs.npz", inputs)
        how = {"plain": [keys[label] for label in plain if label in keys],
               "pinned": {keys[label]: entry_pins(module) for label, module in modules
                          if label in pinned and label in keys},
               "platform": platform, "outputs": outputs, "sample_ms": sample_ms}
        result, done = _sessions(work, keys, inputs, _shares(reps, sessions), warmup, pin_cpu,
                                 timeout_s, refusals, how)
        executions = []
        for label, _ in modules:
            executions.append(_execution(work, label, keys.get(label), result, refusals))
        again = result.get("times_ms", {}).get(keys.get(labels[0], "") + _AGAIN, [])
    return Measurement(tuple(executions), tuple(again), module_tolerance(*(m for _, m in modules)),
                       result.get("cpu"), seed, result.get("jax", ""), result.get("device", ""),
                       int(result.get("runs_per_sample", 1)), done)


def _sessions(work, keys, inputs, shares, warmup, pin_cpu, timeout_s, refusals, how
              ) -> tuple[dict, int]:
    """The children's result, their rounds pooled, and how many children gave rounds: the
    first runs ``shares[0]`` rounds and brings back the outputs (where it dies, each module
    alone finds who killed it, :func:`_isolate`), then one child per further share."""
    if not keys:
        return {}, 1
    result, crash = _run_child(work, keys, inputs, shares[0], warmup, pin_cpu, timeout_s, how)
    if crash is not None:
        result = _isolate(work, keys, inputs, shares[0], warmup, pin_cpu, timeout_s, refusals,
                          crash, how)
    done = 1
    for share in shares[1:]:
        more, died = _run_child(work, keys, inputs, share, warmup, pin_cpu, timeout_s,
                                {**how, "outputs": False})
        if died is None:
            done += 1
            for key, times in more.get("times_ms", {}).items():
                result.setdefault("times_ms", {}).setdefault(key, []).extend(times)
    return result, done


def _shares(reps: int, sessions: int) -> list[int]:
    """The timed rounds of each child: ``reps`` shared out among ``sessions`` (one child when
    nothing is timed; never a child without a round)."""
    count = max(1, min(sessions, reps))
    return [reps // count + (1 if k < reps % count else 0) for k in range(count)]


#: The child's time limit: this much, plus :data:`TIMEOUT_PER_INSTRUCTION_S` per instruction of
#: the modules it compiles (XLA:CPU took about 50 s to compile and run once an unfused depth-5
#: GPT-2 training step of some 4,000 instructions; ten such variants passed 600 s).
TIMEOUT_BASE_S = 600.0
TIMEOUT_PER_INSTRUCTION_S = 0.05


def default_timeout_s(modules) -> float:
    """The time limit of one child that compiles, runs and times ``modules``."""
    count = sum(len(c.instructions) for m in modules for c in m.computations)
    return TIMEOUT_BASE_S + TIMEOUT_PER_INSTRUCTION_S * count


def entry_pins(module: Module) -> dict[str, list[str]]:
    """The entry layouts of ``module`` as the child pins them: one ``{1,0}`` text per
    parameter and per leaf of the result (a tiled layout is refused before:
    :func:`~service.xla.refusals.pinned_reason`)."""
    def text(shape: ArrayShape) -> str:
        return "{" + ",".join(map(str, shape.effective_layout().minor_to_major)) + "}"

    params = [text(a) for p in module.entry.parameter_instructions()
              for _, a in leaf_arrays(p.shape)]
    results = [text(a) for _, a in leaf_arrays(module.entry.root_instruction.shape)]
    return {"params": params, "results": results}


def undonated(module: Module) -> Module:
    """``module`` without ``input_output_alias`` and ``buffer_donor``: the modules compared
    share one set of input buffers, and a module that donates a parameter's buffer to its
    output deletes it for every module after it ("Buffer has been deleted or donated":
    ``tuple_outputs_aliasing``). What a module computes does not depend on them."""
    kept = tuple((k, v) for k, v in module.attributes
                 if k not in ("input_output_alias", "buffer_donor"))
    return module if len(kept) == len(module.attributes) else dataclasses.replace(
        module, attributes=kept)


def carrier(module: Module) -> Module:
    """The module XLA compiles before the swap: ``module`` with each ``bitcast`` and ``copy``
    written as a ``reshape``. XLA's layout assignment rejects a bitcast in its input
    ("unexpected bitcast"), a newer jax's StableHLO legalization a copy (jax 0.11.2), and what
    this module computes does not matter: only its name and entry layouts do, since the
    module that runs is swapped in after XLA's passes."""
    return _relabelled(module, {"bitcast", "copy"})


def pinned_form(module: Module) -> Module:
    """``module`` as the pinned path hands it to XLA: each ``copy`` written as the
    ``reshape`` to its own shape that it is, value for value (a newer jax's StableHLO
    legalization refuses ``mhlo.copy``: measured with jax 0.11.2 on XLA:GPU). The pinned
    entry layouts, not the copy, make XLA move the data."""
    return _relabelled(module, {"copy"})


def _relabelled(module: Module, opcodes: set[str]) -> Module:
    """``module`` with every instruction of ``opcodes`` written as a ``reshape``."""
    def relabel(instr):
        return dataclasses.replace(instr, opcode="reshape") if instr.opcode in opcodes else instr

    return dataclasses.replace(module, computations=tuple(
        dataclasses.replace(comp, instructions=tuple(relabel(i) for i in comp.instructions))
        for comp in module.computations))


def _signature(module: Module) -> list[str]:
    return [p.shape.dims_text() if isinstance(p.shape, ArrayShape) else str(p.shape)
            for p in module.entry.parameter_instructions()]


def _write_inputs(path: Path, inputs: Sequence[np.ndarray]) -> None:
    np.savez(path, **{f"a{i}": (a if a.dtype == np.bool_ else to_bits(np.asarray(a)))
                      for i, a in enumerate(inputs)})


def _run_child(work, keys, inputs, reps, warmup, pin_cpu, timeout_s, how=None):
    """(result, None), or ({}, why) when the child died without a result. ``how``: which keys
    are ``plain`` and ``pinned``, and the ``platform``."""
    how = how or {}
    order = _round_order(list(keys.values())) if reps > 0 else list(keys.values())
    job = {
        "mode": "run",
        "modules": {key: str(work / f"{key}.hlo") for key in keys.values()},
        "inputs": str(work / "inputs.npz"),
        "types": [element_type_of(np.asarray(a).dtype) for a in inputs],
        "out": str(work),
        "order": order if reps > 0 else [],
        "reps": reps,
        "warmup": warmup,
        "plain": list(how.get("plain", ())),
        "pinned": {k: v for k, v in how.get("pinned", {}).items() if k in keys.values()},
        "platform": how.get("platform", "cpu"),
        "outputs": how.get("outputs", True),
        "sample_ms": how.get("sample_ms", 0.0),
        "cpu": 10**6 if pin_cpu else None,  # not an allowed CPU: the child takes the last one
    }
    return call_child(work, job, timeout_s)


def _round_order(keys: list[str]) -> list[str]:
    """One round: the reference, half the candidates, the reference again, the other half.

    The child rotates this order round by round, so it is a cycle: the reference's second
    run sits halfway round it from the first, never beside it (with four candidates or more,
    not even across two rounds' junction, which joins runs two apart). A module run twice in
    a row runs faster the second time (measured: three copies of one 0.1 ms module, the
    reference with its second run appended after the last candidate, so right before its
    first one in every rotation but one: the copies 1.22x and 1.53x the reference), which
    would make the reference look faster than what it is compared with."""
    if not keys:
        return []
    half = 1 + len(keys) // 2
    return [*keys[:half], keys[0] + _AGAIN, *keys[half:]]


def call_child(work: Path, job: dict, timeout_s: float) -> tuple[dict, str | None]:
    """Run the child on ``job``: (its result, None) or ({}, why it died)."""
    job_path, result_path = work / "job.json", work / "result.json"
    result_path.unlink(missing_ok=True)
    job_path.write_text(json.dumps(job))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    try:
        proc = subprocess.run([sys.executable, str(CHILD), str(job_path), str(result_path)],
                              capture_output=True, text=True, timeout=timeout_s, env=env,
                              preexec_fn=die_with_parent)
    except subprocess.TimeoutExpired:
        return {}, f"XLA did not finish within {timeout_s:g} s"
    if proc.returncode == 0 and result_path.exists():
        return json.loads(result_path.read_text()), None
    return {}, abort_message(proc.returncode, proc.stderr)


def die_with_parent() -> None:
    """Run in a child before it executes: the kernel kills it when its parent dies (Linux's
    ``PR_SET_PDEATHSIG``), so a server worker stopped at its time limit leaves no XLA process
    running. Elsewhere the child lives until its own timeout."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return


_PR_SET_PDEATHSIG = 1


def abort_message(returncode: int, stderr: str) -> str:
    """XLA's last words: the ``Check failed`` line when there is one, else the last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    picked = next((line for line in lines if "Check failed" in line or "FATAL" in line), None)
    picked = picked or (lines[-1] if lines else "no message")
    if returncode < 0:
        try:
            how = signal.Signals(-returncode).name
        except ValueError:
            how = f"signal {-returncode}"
        return f"XLA aborted the process ({how}): {picked}"
    return f"XLA's process failed (exit {returncode}): {picked}"


def _isolate(work, keys, inputs, reps, warmup, pin_cpu, timeout_s, refusals, crash, how):
    """The joint run died: run each module alone to find who killed it, then time the rest."""
    survivors = {}
    for label, key in keys.items():
        _, died = _run_child(work, {label: key}, inputs, 0, 0, pin_cpu, timeout_s, how)
        if died is None:
            survivors[label] = key
        else:
            refusals[label] = died
    for label in [label for label in keys if label not in survivors]:
        del keys[label]
    if not survivors:
        return {}
    result, died = _run_child(work, survivors, inputs, reps, warmup, pin_cpu, timeout_s, how)
    if died is not None:
        for label in survivors:
            refusals[label] = f"{died} (while timing the modules together; {crash})"
        keys.clear()
        return {}
    return result


def _execution(work: Path, label: str, key: str | None, result: dict, refusals: dict) -> Execution:
    if key is None:
        return Execution(label, refusal=refusals.get(label) or "not run")
    entry = result.get("modules", {}).get(key)
    if entry is None:
        why = result.get("error")
        return Execution(label, refusal=f"XLA failed: {why}" if why else refusals.get(label) or "not run")
    if "error" in entry:
        return Execution(label, refusal=f"XLA refused to compile or run it: {entry['error']}")
    outputs = []
    if (work / f"{key}.npz").exists():  # not written when the outputs were not asked for
        data = np.load(work / f"{key}.npz")
        for i, t in enumerate(entry["types"]):
            raw = data[f"o{i}"]
            outputs.append(raw.astype(bool) if t == "pred" else from_bits(raw, dtype_of(t)))
    times = tuple(result.get("times_ms", {}).get(key, ()))
    return Execution(label, tuple(outputs), None, times, entry.get("temp_bytes"))
