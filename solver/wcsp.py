"""The problem without its memory rule as a weighted CSP, solved by toulbar2.

A labeling problem minus memory is exactly a weighted constraint satisfaction
problem: one variable per node (its labels the domain), one unary cost function
per node, one binary cost function per edge table, forbidden labels and pairs
as the infinite cost, ties as binary functions that allow only the tied pairs.
toulbar2 (``pytoulbar2``) searches it by hybrid best-first branch and bound with
soft arc consistency, which finds good answers to such problems quickly and
proves small ones optimal.

``extra`` adds a cost per node and label to the model (not to the problem):
a memory search can put the memory rule there as
per-node penalties on the labels that use more memory. ``hint`` sets toulbar2's
value ordering to a known answer (its first dive follows those labels where the
costs allow): with a small backtrack budget the answer is mostly that dive.

Reproducible: toulbar2 runs on one thread with a fixed seed, and its search is
cut by a count of backtracks, not by the clock; ``seconds`` (CPU time) only
guards against a run far longer than expected.

Example: two nodes with labels ``{0, 1}``, unary ``[0, 5]`` and ``[3, 0]``, an
edge ``[[0, 9], [9, 0]]``: :func:`solve_wcsp` returns labels ``(0, 0)``, cost 3,
``complete=True``; with ``extra = [[9, 0], [0, 0]]`` it returns ``(1, 1)``, cost 5
(the cost on the problem, without the extra).

pytoulbar2 keeps its options in process-wide state: one solve at a time per
process (the lock below serialises them).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pytoulbar2

from solver.errors import ProblemError
from solver.problem import FORBIDDEN, Problem, evaluate

#: Default search budget: toulbar2's backtracks (reproducible, unlike a time limit).
BACKTRACKS = 20_000
#: toulbar2's seed (its value ordering breaks ties with it).
SEED = 1

_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class WcspAnswer:
    """What toulbar2 found: ``labels`` (``None`` when it found no assignment that
    keeps the hard rules), their ``cost`` on the problem (memory ignored, ``extra``
    not counted), and ``complete``: the search ended before its budget, so the
    labels are optimal for the model (the problem's costs plus ``extra``)."""

    labels: tuple[int, ...] | None
    cost: int | None
    complete: bool
    backtracks: int


def _costs(table: np.ndarray) -> list[float]:
    """A table as toulbar2's flat cost list (last variable fastest), forbidden
    entries as the infinite cost."""
    flat = table.ravel()
    out = flat.astype(np.float64)
    out[flat >= FORBIDDEN] = np.inf
    return out.tolist()


def _tie_table(k_u: int, k_v: int, mapping: Sequence[int | None] | None) -> np.ndarray:
    table = np.full((k_u, k_v), FORBIDDEN, np.int64)
    for a in range(k_u):
        b = a if mapping is None else mapping[a]
        if b is not None:
            table[a, b] = 0
    return table


def _build(problem: Problem, extra: Sequence[np.ndarray] | None) -> pytoulbar2.CFN:
    """The toulbar2 model: data, variables (one per node), then the cost functions."""
    cfn = pytoulbar2.CFN(seed=SEED, verbose=-1)
    for node in range(problem.num_nodes):
        cfn.AddVariable(f"x{node}", range(problem.label_count(node)))
    wcsp = cfn.CFN.wcsp
    # Unary costs: the node's own, plus the caller's extra (forbidden stays forbidden).
    for node, costs in enumerate(problem.unary):
        row = costs if extra is None else np.minimum(costs + extra[node], FORBIDDEN)
        if len(row) > 1 and row.min() != row.max():
            wcsp.postUnaryConstraint(node, _costs(row), False)
        elif row.min() >= FORBIDDEN:
            wcsp.postUnaryConstraint(node, [np.inf] * len(row), False)
    # Edge tables, and ties as tables that allow only the tied pairs.
    for edge in problem.edges:
        wcsp.postBinaryConstraint(edge.u, edge.v, _costs(edge.costs), False)
    for tie in problem.ties:
        table = _tie_table(problem.label_count(tie.u), problem.label_count(tie.v), tie.mapping)
        wcsp.postBinaryConstraint(tie.u, tie.v, _costs(table), False)
    return cfn


def _check_hint(problem: Problem, hint: Sequence[int] | None) -> None:
    if hint is None:
        return
    if len(hint) != problem.num_nodes:
        raise ProblemError(f"hint: {len(hint)} labels for {problem.num_nodes} nodes")
    for node, label in enumerate(hint):
        if not 0 <= label < problem.label_count(node):
            raise ProblemError(f"hint: label {label} of node {node} is out of range")


def _check_extra(problem: Problem, extra: Sequence[np.ndarray] | None) -> None:
    if extra is None:
        return
    if len(extra) != problem.num_nodes:
        raise ProblemError(f"extra: {len(extra)} rows for {problem.num_nodes} nodes")
    for node, row in enumerate(extra):
        if np.shape(row) != (problem.label_count(node),) or np.min(row) < 0:
            raise ProblemError(f"extra: row of node {node} is not {problem.label_count(node)} "
                               "non-negative costs")


def solve_wcsp(problem: Problem, extra: Sequence[np.ndarray] | None = None, *,
               backtracks: int = BACKTRACKS, seconds: int = 0,
               hint: Sequence[int] | None = None) -> WcspAnswer:
    """The best assignment toulbar2 finds for ``problem`` without its memory rule,
    with ``extra`` (one non-negative int64 row per node) added to the unary costs,
    within ``backtracks`` backtracks (and ``seconds`` of CPU time when not 0, a
    safety net that makes the answer depend on the machine), its value ordering
    set to ``hint``'s labels when given."""
    _check_extra(problem, extra)
    _check_hint(problem, hint)
    if problem.num_nodes == 0:
        return WcspAnswer((), 0, True, 0)
    with _LOCK:
        began = time.process_time()
        cfn = None
        try:
            cfn = _build(problem, extra)
            for node, label in enumerate(hint or ()):
                cfn.CFN.wcsp.setBestValue(node, int(label))
            cfn.Option.backtrackLimit = backtracks
            found = cfn.Solve(timeLimit=seconds)
        except pytoulbar2.pytb2.Contradiction:
            # Posting the hard rules alone already emptied a domain: nothing is allowed.
            return WcspAnswer(None, None, True, 0)
        finally:
            if seconds > 0 and cfn is not None:
                # toulbar2's timer outlives its search: left running, it would cut the
                # next search in this process at once.
                cfn.CFN.timerStop()
        done = cfn.GetNbBacktracks()
        # toulbar2 does not say whether its timer cut the search: one that ran its
        # CPU seconds out is taken as cut.
        timed_out = seconds > 0 and time.process_time() - began >= seconds
    complete = done < backtracks and not timed_out
    if found is None:
        return WcspAnswer(None, None, complete, done)
    labels = tuple(int(x) for x in found[0])
    return WcspAnswer(labels, evaluate(problem, labels), complete, done)
