"""Buffer analysis: forwarding ops share buffers, call boundaries do not."""

from hlo.buffers import analyze_buffers
from hlo.parser import parse_module

TEXT = """HloModule m
body {
  bp = (s32[], f32[4,8]) parameter(0)
  i = s32[] get-tuple-element(bp), index=0
  x = f32[4,8] get-tuple-element(bp), index=1
  y = f32[4,8] exponential(x)
  ROOT r = (s32[], f32[4,8]) tuple(i, y)
}
cond {
  cp = (s32[], f32[4,8]) parameter(0)
  ROOT t = pred[] constant(true)
}
ENTRY e {
  p = f32[4,8] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[4,8]) tuple(z, p)
  w = (s32[], f32[4,8]) while(init), condition=cond, body=body
  ROOT out = f32[4,8] get-tuple-element(w), index=1
}"""


def test_forwarding_and_loop_buffers():
    a = analyze_buffers(parse_module(TEXT))
    same = a.position_buffer
    assert same[("e", "init", (1,))] == same[("e", "p", ())]
    loop = same[("e", "w", (1,))]
    assert same[("body", "bp", (1,))] == loop == same[("cond", "cp", (1,))] == same[("e", "out", ())]
    assert same[("body", "x", ())] == loop
    # The init and the body root write into the loop buffer; they are not members.
    assert same[("e", "p", ())] != loop and same[("body", "y", ())] != loop
    assert same[("body", "r", (1,))] == same[("body", "y", ())]
    y = a.buffers[a.position_buffer[("body", "y", ())]]
    assert y.writes == 1 and y.reads == 0
    assert a.buffers[a.position_buffer[("body", "x", ())]].reads == 1
