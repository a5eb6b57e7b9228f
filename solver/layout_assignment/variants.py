"""Other answers to the same layout problem, as modules: all-default, greedy, random.

For measuring the cost model against time (``bench/fidelity.py``): every variant is a
consistent assignment (no hard rule broken, every needed copy inserted) rewritten by the same
steps as :func:`~.assign.assign`'s answer, so the variants differ only in their layouts.

A random variant starts from all-default labels and, visiting nodes in a random order, moves
each with probability ``fraction`` to a random label that keeps every rule around it (its own
cost, the edges and ties at the node) allowed. Variant ``k`` of ``count`` uses
``fraction = (k + 1) / count``, from a few changes to many.

Example: ``layout_variants(module, "cpu", AssignOptions(), count=5)`` ->
``{"default": .., "greedy": .., "random-0": .., ..., "random-4": ..}``.
"""

from __future__ import annotations

import numpy as np

from hlo.ir import Module
from hlo.passes.apply_layouts import apply_layouts
from hlo.target import Target
from solver.laps import Laps
from solver.layout_assignment.assign import _baselines, _compile, _target
from solver.layout_assignment.costs import CostModel
from solver.layout_assignment.options import AssignOptions
from solver.layout_assignment.plan import plan_for
from solver.problem import FORBIDDEN, Problem

__all__ = ["layout_variants", "random_labels"]


def layout_variants(module: Module, target: str | Target, options: AssignOptions, *,
                    count: int = 5, seed: int = 0) -> dict[str, Module]:
    """``default``, ``greedy`` and ``count`` random consistent assignments of ``module``."""
    cm = CostModel(_target(target))
    compiled = _compile(module, options, cm, Laps())
    runs = _baselines(compiled, Laps())
    labelings = {"default": runs.labels["default"], "greedy": runs.labels["greedy"]}
    rng = np.random.default_rng(seed)
    for k in range(count):
        labelings[f"random-{k}"] = random_labels(compiled.problem, labelings["default"], rng,
                                                 (k + 1) / count)
    out = {}
    for name, labels in labelings.items():
        chosen = [compiled.candidates[i][int(label)] for i, label in enumerate(labels)]
        plan, _ = plan_for(compiled.graph, cm, chosen, False)
        out[name] = apply_layouts(module, plan)
    return out


def random_labels(problem: Problem, start: tuple[int, ...], rng: np.random.Generator,
                  fraction: float) -> tuple[int, ...]:
    """A random walk from ``start`` that never breaks a hard rule (see the module doc)."""
    labels = list(start)
    edges_at: list[list] = [[] for _ in range(problem.num_nodes)]
    for edge in problem.edges:
        edges_at[edge.u].append(edge)
        edges_at[edge.v].append(edge)
    tied = {t.u for t in problem.ties} | {t.v for t in problem.ties}
    for node in rng.permutation(problem.num_nodes):
        node = int(node)
        count = problem.label_count(node)
        if node in tied or count < 2 or rng.random() >= fraction:
            continue
        for label in rng.permutation(count):
            if _allowed(problem, edges_at[node], labels, node, int(label)):
                labels[node] = int(label)
                break
    return tuple(labels)


def _allowed(problem: Problem, edges: list, labels: list[int], node: int, label: int) -> bool:
    if problem.unary[node][label] >= FORBIDDEN:
        return False
    for edge in edges:
        a = label if edge.u == node else labels[edge.u]
        b = label if edge.v == node else labels[edge.v]
        if edge.costs[a, b] >= FORBIDDEN:
            return False
    return True
