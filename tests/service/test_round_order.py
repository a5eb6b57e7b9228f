"""The order of one timing round: the reference's two runs far apart in the rotated cycle."""

from __future__ import annotations

import pytest

from service.xla.execution import _round_order


def _gap(order: list[str]) -> int:
    """Cyclic distance between the reference's two runs."""
    a, b = order.index("m0"), order.index("m0#again")
    return min(abs(a - b), len(order) - abs(a - b))


@pytest.mark.parametrize("candidates", range(1, 10))
def test_every_module_runs_once_and_the_reference_twice(candidates):
    keys = [f"m{i}" for i in range(candidates + 1)]
    order = _round_order(keys)
    assert sorted(order) == sorted([*keys, "m0#again"])
    # Rotations of this cycle never run the reference twice in a row...
    assert _gap(order) >= (2 if candidates >= 2 else 1)
    # ...and, from four candidates on, not across two rounds' junction (runs two apart).
    if candidates >= 4:
        assert _gap(order) >= 3


def test_the_reference_runs_its_second_time_through_an_executable_of_its_own(tmp_path, monkeypatch):
    """Run twice per round through one executable, the reference kept its code and buffers
    warmer than any candidate; each of its two runs gets an executable compiled apart."""
    from service.xla import child

    compiled, ran = [], []

    class FakeCompiler:
        def __init__(self, platform="cpu"):
            pass

        def compile_swapped(self, text, carrier):
            compiled.append(text)
            return object()

        compile_plain = compile_swapped

    class FakeInputs:
        def __init__(self, compiler, arrays):
            pass

        def for_executable(self, exe):
            return ()

    def execute(exe, buffers):
        ran.append(exe)
        return []

    monkeypatch.setattr(child, "Compiler", FakeCompiler)
    monkeypatch.setattr(child, "Inputs", FakeInputs)
    monkeypatch.setattr(child, "_execute", execute)
    monkeypatch.setattr(child, "_save_outputs", lambda leaves, path: [])
    monkeypatch.setattr(child, "_load_inputs", lambda job: [])
    monkeypatch.setattr(child, "_pin", lambda cpu: None)
    modules = {}
    for key in ("m0", "m1"):
        (tmp_path / f"{key}.hlo").write_text(f"module {key}")
        (tmp_path / f"{key}.carrier.hlo").write_text(f"carrier {key}")
        modules[key] = str(tmp_path / f"{key}.hlo")
    order = _round_order(["m0", "m1"])
    result = child.run({"modules": modules, "order": order, "reps": 3, "warmup": 0,
                        "out": str(tmp_path)})
    assert sorted(compiled) == ["module m0", "module m0", "module m1"]
    assert {key: len(times) for key, times in result["times_ms"].items()} == {
        "m0": 3, "m1": 3, "m0#again": 3}
    # Every round runs three distinct executables, each once.
    timed = ran[2:]  # the first two runs are the outputs' runs after compiling m0 and m1
    assert len(timed) == 9
    for r in range(3):
        assert len({id(exe) for exe in timed[3 * r: 3 * r + 3]}) == 3
