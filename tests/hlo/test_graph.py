"""Dependency graphs, checked against the IR directly (not against networkx)."""

from __future__ import annotations

import dataclasses
import heapq
import random

import pytest
from conftest import shared_path
from test_verifier import CORPUS_FILES, parsed

from hlo.errors import VerifyError
from hlo.graph import module_graph
from hlo.ir import Computation, Module
from hlo.parser import parse_module
from hlo.verifier import control_predecessors


def reference_order(comp: Computation) -> list[str]:
    """Kahn's algorithm with a heap on text position: the smallest topological order."""
    index = {i.name: k for k, i in enumerate(comp.instructions)}
    preds = {i.name: set(i.operands) | set(control_predecessors(i)) for i in comp.instructions}
    users: dict[str, set[str]] = {n: set() for n in index}
    for n, ps in preds.items():
        for p in ps:
            users[p].add(n)
    waiting = {n: len(ps) for n, ps in preds.items()}
    heap = [index[n] for n, w in waiting.items() if w == 0]
    heapq.heapify(heap)
    names = [i.name for i in comp.instructions]
    out = []
    while heap:
        n = names[heapq.heappop(heap)]
        out.append(n)
        for u in users[n]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(heap, index[u])
    return out


def shuffled(comp: Computation, seed: int) -> Computation:
    instrs = list(comp.instructions)
    random.Random(seed).shuffle(instrs)
    return dataclasses.replace(comp, instructions=tuple(instrs))


# Every stage of every corpus module; of the two large GPT families only the
# after_layout stage (the others repeat the same structure at up to 63k instructions).
GRAPH_FILES = [f for f in CORPUS_FILES if "/gpt_train_" not in f or ".after_layout." in f]


@pytest.mark.parametrize("path", GRAPH_FILES, ids=lambda p: p.rsplit("/", 1)[-1])
def test_topological_orders_respect_def_use(path):
    (module,) = parsed(path)
    graph = module_graph(module)
    for comp in module.computations:
        order = graph.computation(comp.name).topological_order()
        assert sorted(order) == sorted(i.name for i in comp.instructions)
        position = {n: k for k, n in enumerate(order)}
        for instr in comp.instructions:
            for p in (*instr.operands, *control_predecessors(instr)):
                assert position[p] < position[instr.name]
        # The text is in definition order, so ties broken by text order give it back.
        assert list(order) == [i.name for i in comp.instructions]


def test_topological_order_of_shuffled_computations_is_the_smallest_one():
    (module,) = parsed(str(shared_path("corpus", "transformer_block_train.after_layout.hlo")))
    for seed in range(3):
        comp = shuffled(module.entry, seed)
        g = module_graph(dataclasses.replace(module, computations=tuple(
            comp if c.is_entry else c for c in module.computations)))
        assert list(g.computation(comp.name).topological_order()) == reference_order(comp)


def test_users_operands_and_reachability_match_the_ir():
    (module,) = parsed(str(shared_path("corpus", "mlp_train.after_layout.hlo")))
    graph = module_graph(module)
    for comp in module.computations:
        cg = graph.computation(comp.name)
        text = [i.name for i in comp.instructions]
        for instr in comp.instructions:
            expected_users = [u.name for u in comp.instructions if instr.name in u.operands]
            assert list(cg.users(instr.name)) == expected_users
            assert list(cg.operands(instr.name)) == sorted(set(instr.operands), key=text.index)
        # Reachability = transitive closure of operands, computed by hand.
        root = comp.root
        closure, stack = set(), [root]
        while stack:
            n = stack.pop()
            for p in comp.instruction(n).operands:
                if p not in closure:
                    closure.add(p)
                    stack.append(p)
        assert set(cg.ancestors(root)) == closure
        for name in text:
            assert cg.reaches(name, root) == (name in closure or name == root)


def test_control_predecessors_are_edges():
    text = """HloModule m
ENTRY main {
  a = f32[] constant(1)
  b = f32[] constant(2)
  c = f32[] add(a, a), control-predecessors={b}
  ROOT d = f32[] add(c, b)
}
"""
    g = module_graph(parse_module(text, "m")).computation("main")
    assert g.control_predecessors("c") == ("b",)
    assert g.control_successors("b") == ("c",)
    assert g.users("b") == ("d",)
    assert g.reaches("b", "c")


def test_a_cycle_is_reported_with_its_instructions():
    text = """HloModule m
ENTRY main {
  a = f32[] constant(1)
  b = f32[] add(a, a), control-predecessors={c}
  ROOT c = f32[] add(b, b)
}
"""
    with pytest.raises(VerifyError, match="cycle: b -> c"):
        module_graph(parse_module(text, "m")).computation("main").topological_order()


def call_sites_from_ir(module: Module) -> list[tuple[str, str, str]]:
    out = []
    for comp in module.computations:
        for instr in comp.instructions:
            for callee in instr.called_computations():
                out.append((comp.name, instr.name, callee))
    return out


@pytest.mark.parametrize("name", ["cond_branches", "rnn_scan_fwd", "lstm_train",
                                  "rng_dropout_init", "linalg_custom_calls"])
def test_call_graph_of_control_flow_modules(name):
    suffix = ".after_layout.hlo"
    (module,) = parsed(str(shared_path("corpus", name + suffix)))
    calls = module_graph(module).calls
    sites = call_sites_from_ir(module)
    assert [(s.caller, s.instruction, s.callee) for s in calls.call_sites()] == sites
    order = calls.post_order()
    assert sorted(order) == sorted(c.name for c in module.computations)
    for caller, _, callee in sites:
        assert order.index(callee) < order.index(caller)
        assert callee in calls.callees(caller) and caller in calls.callers(callee)
        assert calls.calls_transitively(caller, callee)
    kinds = {s.attribute for s in calls.call_sites()}
    opcodes = {i.opcode for c in module.computations for i in c.instructions}
    if "while" in opcodes:
        assert {"body", "condition"} <= kinds
    if "conditional" in opcodes:
        assert kinds & {"branch_computations", "true_computation", "false_computation"}
    # Everything the entry reaches is live; the rest is reported as unreachable.
    live = set(calls.reachable_from(calls.entry)) | {calls.entry}
    assert set(calls.unreachable()) == {c.name for c in module.computations} - live


def test_deterministic_answers():
    path = str(shared_path("corpus", "cond_branches.after_layout.hlo"))
    (module,) = parsed(path)
    a, b = module_graph(module), module_graph(module)
    assert a.calls.post_order() == b.calls.post_order()
    for comp in module.computations:
        ga, gb = a.computation(comp.name), b.computation(comp.name)
        assert ga.topological_order() == gb.topological_order()
        for n in ga.instructions():
            assert ga.users(n) == gb.users(n) and ga.descendants(n) == gb.descendants(n)
