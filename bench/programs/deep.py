"""Deep models: the layer stacks that make layout problems large.

Each builder returns ``(f, args)``: a function and example arguments, so that the HLO of
``jax.jit(f).lower(*args)`` can be taken (:func:`hlo_text`). Hidden sizes are small (layout
problems depend on the graph's structure and the shapes' ratios, not their size), the depth is
what the caller asks:

- :func:`llama_train_step`: a decoder-only transformer training step (RMSNorm, rotary
  embeddings, grouped-query attention, SwiGLU), the layers unrolled by a Python loop,
  rematerialized, clipped AdamW;
- :func:`resnet_train_step`: a deep ResNet training step (NHWC convolutions, bottleneck-free
  basic blocks, batch statistics normalization);
- :func:`gpt2_train_step`: a GPT-2-style training step (LayerNorm, GELU, multi-head
  attention, learned positions), kept for measuring on a model not used while tuning;
- :func:`scan_train_step`: the transformer layer of the first builder under ``lax.scan`` over
  stacked weights (one loop body, however deep).

jax is imported by the builders, not at import time, so this module can be named without it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class LlamaShape:
    """A small Llama-style configuration (ratios of the real ones: 4 query heads per key/value
    head, head dimension 16, feed-forward 8/3 of the model width rounded to 16)."""

    layers: int = 12
    vocab: int = 256
    width: int = 128
    heads: int = 8
    kv_heads: int = 2
    ffn: int = 352
    batch: int = 2
    sequence: int = 64

    @property
    def head_dim(self) -> int:
        return self.width // self.heads


def _spec(dims: tuple[int, ...], dtype):
    """An abstract argument: lowering needs shapes, not values (and compiles nothing else)."""
    import jax
    return jax.ShapeDtypeStruct(dims, dtype)


def _llama_layer(jnp, x, w, shape: LlamaShape, cos, sin):
    """One decoder layer on ``x`` (batch, sequence, width)."""
    import jax

    def rms_norm(v, scale):
        v32 = v.astype(jnp.float32)
        inv = jax.lax.rsqrt(jnp.mean(v32 * v32, axis=-1, keepdims=True) + 1e-6)
        return (v32 * inv).astype(v.dtype) * scale

    def rotary(t):
        half = t.shape[-1] // 2
        t1, t2 = t[..., :half], t[..., half:]
        return jnp.concatenate([t1 * cos - t2 * sin, t2 * cos + t1 * sin], axis=-1)

    b, s, d, hd = shape.batch, shape.sequence, shape.width, shape.head_dim
    group = shape.heads // shape.kv_heads
    h = rms_norm(x, w["attn_norm"])
    q = (h @ w["wq"]).reshape(b, s, shape.kv_heads, group, hd)
    k = (h @ w["wk"]).reshape(b, s, shape.kv_heads, hd)
    v = (h @ w["wv"]).reshape(b, s, shape.kv_heads, hd)
    q, k = rotary(q.transpose(0, 2, 3, 1, 4)), rotary(k.transpose(0, 2, 1, 3))
    scores = jnp.einsum("bkgsh,bkth->bkgst", q, k) / jnp.sqrt(float(hd)).astype(x.dtype)
    mask = jnp.tril(jnp.ones((s, s), bool))
    scores = jnp.where(mask, scores, jnp.finfo(scores.dtype).min)
    probs = jax.nn.softmax(scores.astype(jnp.float32), axis=-1).astype(x.dtype)
    att = jnp.einsum("bkgst,bkth->bsgkh", probs, v.transpose(0, 2, 1, 3)).reshape(b, s, d)
    x = x + att @ w["wo"]
    h = rms_norm(x, w["ffn_norm"])
    gate = jax.nn.silu(h @ w["w_gate"]) * (h @ w["w_up"])
    return x + gate @ w["w_down"]


def _llama_params(jnp, shape: LlamaShape, stacked: int | None):
    """Weights of every layer (a list, or one dict of arrays with a leading ``stacked`` axis)."""
    d, hd, f = shape.width, shape.head_dim, shape.ffn

    def layer_shapes():
        return {"attn_norm": (d,), "ffn_norm": (d,), "wq": (d, shape.heads * hd),
                "wk": (d, shape.kv_heads * hd), "wv": (d, shape.kv_heads * hd),
                "wo": (d, d), "w_gate": (d, f), "w_up": (d, f), "w_down": (f, d)}

    def make(dims, lead=()):
        return _spec(lead + dims, jnp.float32)

    embed = make((shape.vocab, d))
    if stacked is None:
        layers = [{k: make(v) for k, v in layer_shapes().items()} for _ in range(shape.layers)]
    else:
        layers = {k: make(v, (stacked,)) for k, v in layer_shapes().items()}
    return {"embed": embed, "layers": layers, "final_norm": make((d,))}


def _llama_loss(jnp, params, tokens, shape: LlamaShape, run_layers):
    import jax
    hd, s = shape.head_dim, shape.sequence
    freq = 1.0 / (10000.0 ** (jnp.arange(0, hd // 2, dtype=jnp.float32) / (hd // 2)))
    angles = jnp.arange(s, dtype=jnp.float32)[:, None] * freq[None, :]
    cos, sin = jnp.cos(angles), jnp.sin(angles)
    x = params["embed"][tokens[:, :-1]]
    x = run_layers(x, params["layers"], cos, sin)
    v32 = x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6)
    logits = (v32 * params["final_norm"]) @ params["embed"].T
    logp = jax.nn.log_softmax(logits, axis=-1)
    picked = jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1)
    return -jnp.mean(picked)


def _sgd_step(jax, loss):
    def step(params, *data):
        value, grads = jax.value_and_grad(loss)(params, *data)
        return value, jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)
    return step


def _adamw_step(jax, loss, b1=0.9, b2=0.95, eps=1e-8, decay=0.1, clip=1.0):
    """A training step as large models are trained: gradients clipped to a global norm,
    then AdamW (bias-corrected moments, decoupled weight decay, a warmup learning rate);
    the state is ``(params, m, v, step)``."""
    import jax.numpy as jnp
    tree = jax.tree_util

    def step(state, *data):
        params, m, v, count = state
        value, grads = jax.value_and_grad(loss)(params, *data)
        norm = jnp.sqrt(sum(jnp.sum(g * g) for g in tree.tree_leaves(grads)))
        scale = jnp.minimum(1.0, clip / (norm + 1e-6))
        grads = tree.tree_map(lambda g: g * scale, grads)
        count = count + 1
        t = count.astype(jnp.float32)
        lr = 3e-4 * jnp.minimum(1.0, t / 100.0)
        m = tree.tree_map(lambda a, g: b1 * a + (1 - b1) * g, m, grads)
        v = tree.tree_map(lambda a, g: b2 * a + (1 - b2) * g * g, v, grads)

        def update(p, a, b):
            a_hat = a / (1 - b1 ** t)
            b_hat = b / (1 - b2 ** t)
            return p - lr * (a_hat / (jnp.sqrt(b_hat) + eps) + decay * p)
        return value, (tree.tree_map(update, params, m, v), m, v, count)
    return step


def llama_train_step(layers: int, shape: LlamaShape | None = None):
    """A Llama-style training step with ``layers`` decoder layers unrolled, as large models
    are trained: each layer rematerialized in the backward pass (``jax.checkpoint``), the
    gradients clipped to a global norm, then AdamW (:func:`_adamw_step`). At 48 layers it
    has about 30,000 instructions as it enters layout assignment."""
    import jax
    import jax.numpy as jnp
    shape = LlamaShape(layers=layers) if shape is None else shape
    layer = jax.checkpoint(lambda x, w, cos, sin: _llama_layer(jnp, x, w, shape, cos, sin))

    def run_layers(x, weights, cos, sin):
        for w in weights:
            x = layer(x, w, cos, sin)
        return x

    def loss(params, tokens):
        return _llama_loss(jnp, params, tokens, shape, run_layers)

    params = _llama_params(jnp, shape, None)
    tokens = _spec((shape.batch, shape.sequence + 1), jnp.int32)
    state = (params, params, params, _spec((), jnp.int32))
    return _adamw_step(jax, loss), (state, tokens)


def scan_train_step(layers: int, shape: LlamaShape | None = None):
    """The same training step with the layers under ``lax.scan`` over stacked weights."""
    import jax
    import jax.numpy as jnp
    shape = LlamaShape(layers=layers) if shape is None else shape

    def run_layers(x, weights, cos, sin):
        def body(carry, w):
            return _llama_layer(jnp, carry, w, shape, cos, sin), None
        return jax.lax.scan(body, x, weights)[0]

    def loss(params, tokens):
        return _llama_loss(jnp, params, tokens, shape, run_layers)

    tokens = _spec((shape.batch, shape.sequence + 1), jnp.int32)
    return _sgd_step(jax, loss), (_llama_params(jnp, shape, layers), tokens)


def gpt2_train_step(layers: int, width: int = 128, heads: int = 8, vocab: int = 256,
                    batch: int = 2, sequence: int = 64):
    """A GPT-2-style training step, another architecture than :func:`llama_train_step`:
    learned position embeddings, pre-LayerNorm with bias, multi-head attention (as many
    key/value heads as query heads, fused QKV projection), a GELU MLP of 4x width, biases on
    every projection, the layers unrolled; the same clipped AdamW step."""
    import jax
    import jax.numpy as jnp
    hd = width // heads

    def layer_norm(x, g, b):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5) * g + b

    def block(x, w):
        h = layer_norm(x, w["ln1_g"], w["ln1_b"])
        qkv = (h @ w["w_qkv"] + w["b_qkv"]).reshape(batch, sequence, 3, heads, hd)
        q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
        scores = q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(float(hd))
        mask = jnp.tril(jnp.ones((sequence, sequence), bool))
        probs = jax.nn.softmax(jnp.where(mask, scores, -1e9), axis=-1)
        att = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, sequence, width)
        x = x + att @ w["w_proj"] + w["b_proj"]
        h = layer_norm(x, w["ln2_g"], w["ln2_b"])
        h = jax.nn.gelu(h @ w["w_fc"] + w["b_fc"], approximate=True)
        return x + h @ w["w_out"] + w["b_out"]

    def loss(params, tokens):
        x = params["wte"][tokens[:, :-1]] + params["wpe"][None, :, :]
        for w in params["layers"]:
            x = block(x, w)
        x = layer_norm(x, params["lnf_g"], params["lnf_b"])
        logp = jax.nn.log_softmax(x @ params["wte"].T, axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1))

    def full(*dims):
        return _spec(dims, jnp.float32)

    one = {"ln1_g": full(width), "ln1_b": full(width), "w_qkv": full(width, 3 * width),
           "b_qkv": full(3 * width), "w_proj": full(width, width), "b_proj": full(width),
           "ln2_g": full(width), "ln2_b": full(width), "w_fc": full(width, 4 * width),
           "b_fc": full(4 * width), "w_out": full(4 * width, width), "b_out": full(width)}
    params = {"wte": full(vocab, width), "wpe": full(sequence, width), "lnf_g": full(width),
              "lnf_b": full(width), "layers": [dict(one) for _ in range(layers)]}
    tokens = _spec((batch, sequence + 1), jnp.int32)
    state = (params, params, params, _spec((), jnp.int32))
    return _adamw_step(jax, loss), (state, tokens)


def resnet_train_step(blocks: int, width: int = 32, batch: int = 4, image: int = 16,
                      classes: int = 10):
    """A ResNet training step: a stem convolution, ``blocks`` basic residual blocks (two 3x3
    NHWC convolutions, batch statistics normalization, ReLU), pooling and a classifier."""
    import jax
    import jax.numpy as jnp

    def conv(x, k):
        return jax.lax.conv_general_dilated(x, k, (1, 1), "SAME",
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def norm(x, scale, bias):
        mean = jnp.mean(x, axis=(0, 1, 2), keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=(0, 1, 2), keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5) * scale + bias

    def loss(params, images, labels):
        x = jax.nn.relu(conv(images, params["stem"]))
        for b in params["blocks"]:
            h = jax.nn.relu(norm(conv(x, b["k1"]), b["s1"], b["b1"]))
            x = jax.nn.relu(x + norm(conv(h, b["k2"]), b["s2"], b["b2"]))
        logits = jnp.mean(x, axis=(1, 2)) @ params["head"]
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=-1))

    def full(*dims):
        return _spec(dims, jnp.float32)

    params = {"stem": full(3, 3, 3, width), "head": full(width, classes),
              "blocks": [{"k1": full(3, 3, width, width), "k2": full(3, 3, width, width),
                          "s1": full(width), "b1": full(width), "s2": full(width),
                          "b2": full(width)} for _ in range(blocks)]}
    images = _spec((batch, image, image, 3), jnp.float32)
    labels = _spec((batch,), jnp.int32)
    return _sgd_step(jax, loss), (params, images, labels)


#: Builders by family name: ``(depth) -> (f, args)``.
FAMILIES = {"llama": llama_train_step, "resnet": resnet_train_step, "scan": scan_train_step,
            "gpt2": gpt2_train_step}


#: Part of the cached files' names: raised whenever a builder changes what it generates.
GENERATION = 2

#: The stages :func:`hlo_text` produces: ``pre`` as JAX lowers it, ``before_layout`` as it
#: enters XLA:CPU's ``layout-assignment`` pass (XLA's own dump, taken in a subprocess).
STAGES = ("pre", "before_layout")

_DUMP = r"""
import sys, jax
sys.path.insert(0, sys.argv[3])
from bench.programs.deep import FAMILIES
f, args = FAMILIES[sys.argv[1]](int(sys.argv[2]))
jax.jit(f).lower(*args).compile()
"""


def hlo_text(family: str, depth: int, stage: str = "pre") -> str:
    """The HLO text of ``family`` at ``depth`` at ``stage`` (one of :data:`STAGES`)."""
    if stage == "pre":
        import jax
        f, args = FAMILIES[family](depth)
        return jax.jit(f).lower(*args).as_text(dialect="hlo")
    if stage != "before_layout":
        raise ValueError(f"unknown stage {stage!r}; expected one of {', '.join(STAGES)}")
    with tempfile.TemporaryDirectory() as dump:
        env = {**os.environ, "JAX_PLATFORMS": "cpu",
               "XLA_FLAGS": f"--xla_dump_to={dump} --xla_dump_hlo_pass_re=^layout-assignment$"}
        child = subprocess.Popen([sys.executable, "-c", _DUMP, family, str(depth),
                                  str(Path(__file__).resolve().parents[2])],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # The module after layout assignment is dumped once the one before it is written
        # whole; the rest of the compile (fusion, code generation: minutes and many GB on a
        # deep unrolled step) is not needed.
        while child.poll() is None and not list(Path(dump).glob("*after_layout-assignment*")):
            time.sleep(0.5)
        if child.poll() is None:
            child.kill()
        _, err = child.communicate()
        found = sorted(Path(dump).glob("*jit_step*before_layout-assignment.txt"))
        if len(found) != 1:
            raise RuntimeError(f"expected one layout-assignment dump of jit_step, got {found}: "
                               f"{err.decode(errors='replace')[-2000:]}")
        return found[0].read_text()


def cached_hlo(family: str, depth: int, folder: Path, stage: str = "before_layout") -> Path:
    """The path of ``family`` at ``depth`` and ``stage`` under ``folder``, made on first use."""
    path = folder / f"{family}-v{GENERATION}_{depth}.{stage}.hlo"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(hlo_text(family, depth, stage))
        tmp.replace(path)
    return path
