"""Collectives: one participant (XLA's single-device results) and simulated groups.

Every expectation is written here with numpy from the op's definition (sums,
concatenations, chunk exchanges), never taken from the interpreter.
"""

from __future__ import annotations

import numpy as np
import pytest

from hlo.interpreter import InterpretError, evaluate, evaluate_participants
from hlo.interpreter.participants import parse_groups
from hlo.ir import Instruction, Verbatim
from hlo.parser import parse_attribute, parse_module

ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"
SUB = "sub {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] subtract(a, b)\n}\n"
#: 2a + b: neither commutative nor associative, so the fold order shows.
LIN = ("lin {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  two = f32[] constant(2)\n"
       "  d = f32[] multiply(a, two)\n  ROOT c = f32[] add(d, b)\n}\n")


def module(body: str, header: str = "", comps: str = ADD + SUB + LIN):
    text = f"HloModule t{header}\n\n{comps}\nENTRY e {{\n{body}\n}}\n"
    return parse_module(text, "t.hlo")


def rng_args(count: int, shape: tuple[int, ...], seed: int = 0) -> list[np.ndarray]:
    gen = np.random.default_rng(seed)
    # Small integers in f32: sums and differences are exact in any order.
    return [gen.integers(-8, 8, shape).astype(np.float32) for _ in range(count)]


# ---------------------------------------------------------------------------
# One participant
# ---------------------------------------------------------------------------


def test_single_participant_collectives_are_identity_shaped():
    m = module(
        "  x = f32[2,4] parameter(0)\n"
        "  ar = f32[2,4] all-reduce(x), replica_groups={}, to_apply=sub\n"
        "  ag = f32[2,4] all-gather(x), replica_groups={{0}}, dimensions={1}\n"
        "  rs = f32[2,4] reduce-scatter(x), replica_groups={}, dimensions={0}, to_apply=add\n"
        "  a2a = f32[2,4] all-to-all(x), replica_groups={{0}}, dimensions={1}\n"
        "  cb = f32[2,4] collective-broadcast(x), replica_groups={}\n"
        "  cp = f32[2,4] collective-permute(x), source_target_pairs={{0,0}}\n"
        "  ROOT t = (f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4], f32[2,4]) tuple(ar, ag, rs, a2a, cb, cp)"
    )
    x = np.arange(8, dtype=np.float32).reshape(2, 4) - 3
    for got in evaluate(m, [x]):
        # One contribution: the subtract reducer is never applied (x - x would be 0).
        np.testing.assert_array_equal(got, x)


def test_single_participant_variadic_and_tuple_forms():
    m = module(
        "  x = f32[3] parameter(0)\n  y = f32[2] parameter(1)\n"
        "  ar = (f32[3], f32[2]) all-reduce(x, y), replica_groups={}, to_apply=add\n"
        "  ag = (f32[3], f32[2]) all-gather(x, y), replica_groups={}, dimensions={0}\n"
        "  a2a = (f32[3]) all-to-all(x), replica_groups={{0}}\n"
        "  ROOT t = ((f32[3], f32[2]), (f32[3], f32[2]), (f32[3])) tuple(ar, ag, a2a)"
    )
    x, y = np.array([1, 2, 3], np.float32), np.array([4, 5], np.float32)
    (ar, ag, a2a) = evaluate(m, [x, y])
    for got in (ar, ag):
        np.testing.assert_array_equal(got[0], x)
        np.testing.assert_array_equal(got[1], y)
    np.testing.assert_array_equal(a2a[0], x)


def test_collective_permute_without_source_gives_zeros():
    m = module("  x = s32[3] parameter(0)\n  ROOT cp = s32[3] collective-permute(x), source_target_pairs={}")
    assert evaluate(m, [np.array([5, 6, 7], np.int32)]).tolist() == [0, 0, 0]


def test_ids_of_a_lone_participant_are_zero():
    m = module("  r = u32[] replica-id()\n  p = u32[] partition-id()\n  ROOT t = (u32[], u32[]) tuple(r, p)")
    r, p = evaluate(m, [])
    assert (r.dtype, int(r), p.dtype, int(p)) == (np.dtype(np.uint32), 0, np.dtype(np.uint32), 0)


def test_async_collective_pairs():
    m = module(
        "  x = f32[2] parameter(0)\n"
        "  ars = f32[2] all-reduce-start(x), replica_groups={}, to_apply=add\n"
        "  ard = f32[2] all-reduce-done(ars)\n"
        "  ags = (f32[2], f32[2]) all-gather-start(x), replica_groups={}, dimensions={0}\n"
        "  agd = f32[2] all-gather-done(ags)\n"
        "  cps = (f32[2], f32[2], u32[], u32[]) collective-permute-start(x), source_target_pairs={{0,0}}\n"
        "  cpd = f32[2] collective-permute-done(cps)\n"
        "  ROOT t = (f32[2], f32[2], (f32[2], f32[2], u32[], u32[]), f32[2]) tuple(ard, agd, cps, cpd)"
    )
    x = np.array([1.5, -2], np.float32)
    ard, agd, cps, cpd = evaluate(m, [x])
    for got in (ard, agd, cps[0], cps[1], cpd):
        np.testing.assert_array_equal(got, x)
    assert cps[2] == 0 and cps[3] == 0


def test_alone_a_larger_group_is_a_clear_error():
    m = module(
        "  x = f32[2] parameter(0)\n  ROOT r = f32[2] all-reduce(x), replica_groups={}, to_apply=add",
        header=", replica_count=4",
    )
    with pytest.raises(InterpretError, match=r"needs 4 participants.*evaluate_participants"):
        evaluate(m, [np.zeros(2, np.float32)])
    # The shapes of an all-gather imply 8 participants although the header declares one.
    m = module("  a = f32[4,2] parameter(0)\n  ROOT b = f32[32,2] all-gather(a), dimensions={0}")
    with pytest.raises(InterpretError, match=r"imply 8 participants"):
        evaluate(m, [np.zeros((4, 2), np.float32)])
    # Groups naming ids the header does not declare.
    m = module("  x = f32[8] parameter(0)\n  ROOT r = f32[8] all-to-all(x), channel_id=1, "
               "replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}")
    with pytest.raises(InterpretError, match=r"partition ids up to 7.*num_partitions=1"):
        evaluate(m, [np.zeros(8, np.float32)])


# ---------------------------------------------------------------------------
# Replica groups
# ---------------------------------------------------------------------------


def _groups(text: str):
    instr = Instruction("x", "all-reduce", None)  # type: ignore[arg-type]
    return parse_groups(instr, parse_attribute("replica_groups", text))


def test_replica_group_forms():
    assert _groups("{}") == ()
    assert _groups("{{0,2},{1,3}}") == ((0, 2), (1, 3))
    assert _groups("[2,4]<=[8]") == ((0, 1, 2, 3), (4, 5, 6, 7))
    # iota(6) as [2,3], transposed -> [[0,3],[1,4],[2,5]], read as 3 groups of 2.
    assert _groups("[3,2]<=[2,3]T(1,0)") == ((0, 3), (1, 4), (2, 5))
    # A 2x2 mesh grouped along its minor axis, then along its major axis.
    assert parse_groups(Instruction("x", "all-reduce", None),  # type: ignore[arg-type]
                        Verbatim("mesh['a'=2,'b'=2] {'b'}")) == ((0, 1), (2, 3))
    assert parse_groups(Instruction("x", "all-reduce", None),  # type: ignore[arg-type]
                        Verbatim("mesh['a'=2,'b'=2] {'a'}")) == ((0, 2), (1, 3))


# ---------------------------------------------------------------------------
# Several participants, simulated
# ---------------------------------------------------------------------------


def test_all_reduce_over_replica_groups():
    m = module(
        "  x = f32[3] parameter(0)\n"
        "  s = f32[3] all-reduce(x), replica_groups={{0,2},{1,3}}, to_apply=add\n"
        "  d = f32[3] all-reduce(x), replica_groups={}, to_apply=lin\n"
        "  ROOT t = (f32[3], f32[3]) tuple(s, d)",
        header=", replica_count=4",
    )
    xs = rng_args(4, (3,))
    outs = evaluate_participants(m, [[x] for x in xs])
    for r, (s, d) in enumerate(outs):
        partner = {0: 2, 2: 0, 1: 3, 3: 1}[r]
        np.testing.assert_array_equal(s, xs[r] + xs[partner])
        # Non-commutative reducer: a left fold in rank order.
        np.testing.assert_array_equal(d, 2 * (2 * (2 * xs[0] + xs[1]) + xs[2]) + xs[3])


def test_all_gather_reduce_scatter_all_to_all():
    m = module(
        "  x = f32[4,2] parameter(0)\n"
        "  ag = f32[4,6] all-gather(x), replica_groups={}, dimensions={1}\n"
        "  rs = f32[4,2] reduce-scatter(ag), replica_groups={}, dimensions={1}, to_apply=add\n"
        "  a2a = f32[4,2] all-to-all(x), replica_groups={{0,1}, {2}}, dimensions={0}\n"
        "  ROOT t = (f32[4,6], f32[4,2], f32[4,2]) tuple(ag, rs, a2a)",
        header=", replica_count=3",
    )
    # replica 2 alone in its all-to-all group: it needs its own dim 0 to split in 1.
    xs = rng_args(3, (4, 2), seed=1)
    outs = evaluate_participants(m, [[x] for x in xs])
    gathered = np.concatenate(xs, axis=1)
    total = 3 * gathered  # every participant contributes the same gathered array
    for r, (ag, rs, a2a) in enumerate(outs):
        np.testing.assert_array_equal(ag, gathered)
        np.testing.assert_array_equal(rs, total[:, 2 * r: 2 * r + 2])
        if r == 2:
            np.testing.assert_array_equal(a2a, xs[2])
        else:
            # rows [2r, 2r+2) of each sender, in sender order
            np.testing.assert_array_equal(a2a, np.concatenate([xs[0][2 * r:2 * r + 2], xs[1][2 * r:2 * r + 2]]))


def test_tuple_all_to_all_and_broadcast_and_permute():
    m = module(
        "  x = s32[2] parameter(0)\n  y = s32[2] parameter(1)\n"
        "  a2a = (s32[2], s32[2]) all-to-all(x, y), replica_groups={{1,0}}\n"
        "  cb = s32[2] collective-broadcast(x), replica_groups={{1,0}}\n"
        "  cp = s32[2] collective-permute(x), source_target_pairs={{0,1}}\n"
        "  ROOT t = ((s32[2], s32[2]), s32[2], s32[2]) tuple(a2a, cb, cp)",
        header=", replica_count=2",
    )
    args = [[np.array([1, 2], np.int32), np.array([3, 4], np.int32)],
            [np.array([5, 6], np.int32), np.array([7, 8], np.int32)]]
    (a2a0, cb0, cp0), (a2a1, cb1, cp1) = evaluate_participants(m, args)
    # Group {1,0}: rank 0 is replica 1. Operand j goes to rank j; element i came from rank i.
    assert [v.tolist() for v in a2a1] == [[5, 6], [1, 2]]  # rank 0 receives operand 0 of each
    assert [v.tolist() for v in a2a0] == [[7, 8], [3, 4]]
    # The broadcast's source is the group's first member (replica 1).
    assert cb0.tolist() == cb1.tolist() == [5, 6]
    # 0 -> 1; nothing targets 0.
    assert cp1.tolist() == [1, 2] and cp0.tolist() == [0, 0]


def test_ids_and_group_modes_with_partitions():
    # 2 replicas x 2 partitions; flat id = 2 * replica + partition.
    m = module(
        "  x = s32[1] parameter(0)\n"
        "  r = u32[] replica-id()\n  p = u32[] partition-id()\n"
        "  cross_replica = s32[2] all-gather(x), replica_groups={}, dimensions={0}\n"
        "  cross_partition = s32[2] all-to-all(cross_replica), channel_id=1, replica_groups={{0,1}}, dimensions={0}\n"
        "  both = s32[4] all-gather(x), channel_id=2, replica_groups={{0,1}}, use_global_device_ids=false, dimensions={0}\n"
        "  flat = s32[2] all-gather(x), channel_id=3, replica_groups={{0,3},{1,2}}, use_global_device_ids=true, dimensions={0}\n"
        "  perm = s32[1] collective-permute(x), channel_id=4, source_target_pairs={{0,1},{1,0}}\n"
        "  ROOT t = (u32[], u32[], s32[2], s32[2], s32[4], s32[2], s32[1]) tuple(r, p, cross_replica, cross_partition, both, flat, perm)",
        header=", replica_count=2, num_partitions=2",
    )
    vals = [10, 11, 20, 21]  # flat id f holds vals[f]
    outs = evaluate_participants(m, [[np.array([v], np.int32)] for v in vals])
    for f, (r, p, cross_replica, cross_partition, both, flat, perm) in enumerate(outs):
        rep, part = divmod(f, 2)
        assert (int(r), int(p)) == (rep, part)
        # no channel: replicas of my partition
        assert cross_replica.tolist() == [vals[part], vals[2 + part]]
        # channel, no flag on all-to-all: partitions of my replica; chunk `part` of each sender
        # sender q (partition q of my replica) gathered [vals[q], vals[2 + q]]; I get its chunk `part`
        expect = [[vals[q], vals[2 + q]][part] for q in (0, 1)]
        assert cross_partition.tolist() == expect
        # channel, use_global_device_ids=false: replicas {0,1} with all their partitions
        assert both.tolist() == [10, 11, 20, 21]
        # flattened ids
        assert flat.tolist() == ([10, 21] if f in (0, 3) else [11, 20])
        # channel: partition ids within my replica swap
        assert perm.tolist() == [vals[2 * rep + (1 - part)]]


def test_collective_inside_a_loop_meets_the_same_iteration():
    body = (
        "body {\n  s = (s32[], f32[2]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
        "  v = f32[2] get-tuple-element(s), index=1\n"
        "  r = f32[2] all-reduce(v), replica_groups={}, to_apply=add\n"
        "  one = s32[] constant(1)\n  j = s32[] add(i, one)\n"
        "  ROOT t = (s32[], f32[2]) tuple(j, r)\n}\n"
        "cond {\n  s = (s32[], f32[2]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
        "  n = s32[] constant(3)\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\n"
    )
    m = module(
        "  x = f32[2] parameter(0)\n  z = s32[] constant(0)\n  t = (s32[], f32[2]) tuple(z, x)\n"
        "  w = (s32[], f32[2]) while(t), condition=cond, body=body\n"
        "  ROOT v = f32[2] get-tuple-element(w), index=1",
        header=", replica_count=2", comps=ADD + body,
    )
    xs = rng_args(2, (2,), seed=3)
    for out in evaluate_participants(m, [[x] for x in xs]):
        # each step doubles the common sum: 3 steps -> 4 * (x0 + x1)
        np.testing.assert_array_equal(out, 4 * (xs[0] + xs[1]))


def test_divergent_participants_fail_without_hanging():
    branches = (
        "yes {\n  p = f32[2] parameter(0)\n  ROOT r = f32[2] all-reduce(p), replica_groups={}, to_apply=add\n}\n"
        "no {\n  ROOT p = f32[2] parameter(0)\n}\n"
    )
    m = module(
        "  x = f32[2] parameter(0)\n  id = u32[] replica-id()\n  zero = u32[] constant(0)\n"
        "  first = pred[] compare(id, zero), direction=EQ\n"
        "  ROOT c = f32[2] conditional(first, x, x), true_computation=yes, false_computation=no",
        header=", replica_count=2", comps=ADD + branches,
    )
    with pytest.raises(InterpretError, match="finished without reaching"):
        evaluate_participants(m, [[np.zeros(2, np.float32)], [np.zeros(2, np.float32)]])
    with pytest.raises(InterpretError, match="has 2 participants"):
        evaluate_participants(m, [[np.zeros(2, np.float32)]])


def test_combined_collective_permute_moves_every_operand():
    m = module(
        "  x = s32[2] parameter(0)\n  y = f32[1] parameter(1)\n"
        "  ROOT cp = (s32[2], f32[1]) collective-permute(x, y), source_target_pairs={{0,1},{1,2},{2,0}}",
        header=", replica_count=3",
    )
    args = [[np.array([r, 10 * r], np.int32), np.array([r + 0.5], np.float32)] for r in range(3)]
    for r, (x, y) in enumerate(evaluate_participants(m, args)):
        source = (r - 1) % 3
        assert x.tolist() == [source, 10 * source] and y.tolist() == [source + 0.5]
