"""A synthetic ML-shaped module of about N instructions (layer stacks with transposes,
reshapes, broadcasts, reductions and dots), to measure layout assignment at scale.

    python3 bench/synthetic.py 100000 > /tmp/synthetic.hlo
"""

from __future__ import annotations

import sys


def synthetic_module(instructions: int, width: int = 64) -> str:
    """Text of a module with roughly ``instructions`` instructions (deterministic)."""
    lines = ["HloModule synthetic", "", "add {", "  a = f32[] parameter(0)",
             "  b = f32[] parameter(1)", "  ROOT s = f32[] add(a, b)", "}", "",
             "ENTRY main {", f"  x0 = f32[{width},{width * 2}] parameter(0)",
             f"  w = f32[{width * 2},{width * 2}] parameter(1)", "  zero = f32[] constant(0)"]
    count, layer, cur = 4, 0, "x0"
    while count < instructions - 12:
        k = layer
        lines += [
            f"  d{k} = f32[{width},{width * 2}] dot({cur}, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}",
            f"  t{k} = f32[{width * 2},{width}] transpose(d{k}), dimensions={{1,0}}",
            f"  e{k} = f32[{width * 2},{width}] exponential(t{k})",
            f"  r{k} = f32[{width * 2}] reduce(e{k}, zero), dimensions={{1}}, to_apply=add",
            f"  b{k} = f32[{width * 2},{width}] broadcast(r{k}), dimensions={{0}}",
            f"  q{k} = f32[{width * 2},{width}] divide(e{k}, b{k})",
            f"  u{k} = f32[{width},{width * 2}] transpose(q{k}), dimensions={{1,0}}",
            f"  v{k} = f32[{width // 2},2,{width * 2}] reshape(u{k})",
            f"  n{k} = f32[{width // 2},2,{width * 2}] negate(v{k})",
            f"  y{k} = f32[{width},{width * 2}] reshape(n{k})",
            f"  x{k + 1} = f32[{width},{width * 2}] add(y{k}, {cur})",
        ]
        cur = f"x{k + 1}"
        count += 11
        layer += 1
    lines += [f"  ROOT out = f32[{width},{width * 2}] copy({cur})", "}", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(synthetic_module(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000))
