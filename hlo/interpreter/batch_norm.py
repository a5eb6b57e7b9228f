"""``batch-norm-training``, ``batch-norm-inference``, ``batch-norm-grad`` (XLA's definitions).

``feature_index`` names the feature dim ``f``; every other dim is reduced
(``m`` elements per feature). With ``mean = sum(x) / m`` and the *biased*
variance ``var = sum((x - mean)^2) / m``, per feature:

* training ``(x, scale, offset)`` -> ``(y, mean, var)`` with
  ``y = scale * (x - mean) / sqrt(var + epsilon) + offset``;
* inference ``(x, scale, offset, mean, var)`` -> ``y`` by the same formula with
  the given statistics;
* grad ``(x, scale, mean, var, dy)`` -> ``(dx, dscale, doffset)`` with
  ``doffset = sum(dy)``, ``dscale = sum(dy * (x - mean)) / sqrt(var + epsilon)``,
  ``dx = scale / sqrt(var + epsilon) * (dy - doffset / m - (x - mean) * sum(dy * (x - mean)) / (m * (var + epsilon)))``.

Arithmetic runs in f64 and each result is rounded once to the element type
(XLA expands these ops into f32/bf16 arithmetic, so low-precision results
differ from it by rounding only).
"""

from __future__ import annotations

import numpy as np

from hlo.interpreter.machine import Machine, error_at, register
from hlo.interpreter.values import Value
from hlo.ir import Instruction


def _setup(instr: Instruction, x: np.ndarray) -> tuple[int, tuple[int, ...], float]:
    feature = instr.attr("feature_index")
    if not isinstance(feature, int) or not 0 <= feature < x.ndim:
        raise error_at(instr, f"feature_index must name a dim of the rank-{x.ndim} operand")
    epsilon = float(instr.attr("epsilon", 0.0))
    axes = tuple(d for d in range(x.ndim) if d != feature)
    return feature, axes, epsilon


def _per_feature(v: np.ndarray, feature: int, rank: int) -> np.ndarray:
    """A feature vector shaped to broadcast against the operand."""
    shape = [1] * rank
    shape[feature] = v.shape[0]
    return v.astype(np.float64).reshape(shape)


@register("batch-norm-training")
def _training(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    x, scale, offset = ops
    feature, axes, epsilon = _setup(instr, x)
    wide = x.astype(np.float64)
    mean = wide.mean(axis=axes, keepdims=True)
    var = ((wide - mean) ** 2).mean(axis=axes, keepdims=True)
    y = _per_feature(scale, feature, x.ndim) * (wide - mean) / np.sqrt(var + epsilon)
    y = y + _per_feature(offset, feature, x.ndim)
    return (y.astype(x.dtype), mean.reshape(-1).astype(x.dtype), var.reshape(-1).astype(x.dtype))


@register("batch-norm-inference")
def _inference(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    x, scale, offset, mean, var = ops
    feature, _, epsilon = _setup(instr, x)
    r = x.ndim
    y = _per_feature(scale, feature, r) * (x.astype(np.float64) - _per_feature(mean, feature, r))
    y = y / np.sqrt(_per_feature(var, feature, r) + epsilon) + _per_feature(offset, feature, r)
    return y.astype(x.dtype)


@register("batch-norm-grad")
def _grad(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    x, scale, mean, var, dy = ops
    feature, axes, epsilon = _setup(instr, x)
    r = x.ndim
    count = x.size // max(x.shape[feature], 1) if x.shape[feature] else 0
    centered = x.astype(np.float64) - _per_feature(mean, feature, r)
    dyw = dy.astype(np.float64)
    var_eps = _per_feature(var, feature, r) + epsilon
    doffset = dyw.sum(axis=axes, keepdims=True)
    dot = (dyw * centered).sum(axis=axes, keepdims=True)
    dscale = dot / np.sqrt(var_eps)
    with np.errstate(all="ignore"):
        dx = _per_feature(scale, feature, r) / np.sqrt(var_eps) * (
            dyw - doffset / count - centered * dot / (count * var_eps)
        )
    return (dx.astype(x.dtype), dscale.reshape(-1).astype(x.dtype), doffset.reshape(-1).astype(x.dtype))
