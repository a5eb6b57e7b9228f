"""The stages of a JAX function as XLA:CPU compiles it, as the shared corpus has them.

``dump_stages(f, *args)`` compiles ``jax.jit(f)`` for ``args`` with XLA's dump switched on for
the ``layout-assignment`` pass and returns three texts: ``pre`` (the module as the compiler
received it, XLA's ``before_optimizations``), ``before_layout`` (as it entered layout
assignment) and ``after_layout`` (XLA's answer). It runs in the calling process (compiling a
jitted function does not abort) and needs jax, like the function it is given.

Example::

    stages = dump_stages(lambda x: (x @ x.T).sum(0), np.ones((64, 32), np.float32))
    stages.before_layout   # input for ``hlo-layout assign``
    stages.after_layout    # XLA's layouts for it
"""

from __future__ import annotations

import glob
import os
import tempfile
from dataclasses import dataclass
from typing import Any, Callable

from service.xla.availability import require_xla
from service.xla.errors import XlaError


@dataclass(frozen=True, slots=True)
class Stages:
    name: str
    pre: str
    before_layout: str
    after_layout: str


def dump_stages(function: Callable[..., Any], *args: Any, name: str | None = None) -> Stages:
    """Compile ``function`` (jitted here if it is not) for ``args`` and read XLA's dumps."""
    require_xla()
    import jax

    jitted = function if hasattr(function, "lower") else jax.jit(function)
    with tempfile.TemporaryDirectory(prefix="hlo-layout-stages-") as tmp:
        jitted.lower(*args).compile(compiler_options={
            "xla_dump_to": tmp, "xla_dump_hlo_pass_re": "layout-assignment",
        })
        pre = read_dump(tmp, "*.before_optimizations.txt")
        before = read_dump(tmp, "*.before_layout-assignment.txt")
        after = read_dump(tmp, "*.after_layout-assignment.*txt")
    module_name = name or pre.split(",", 1)[0].split()[1]
    return Stages(module_name, pre, before, after)


def read_dump(folder: str, pattern: str) -> str:
    """The text of XLA's dump matching ``pattern`` in ``folder``; of several, the last one
    (XLA may compile helpers, e.g. argument conversions, before the module: name the module
    in ``pattern`` where one may come after it). Raises :class:`XlaError` when there is none."""
    found = sorted(glob.glob(os.path.join(folder, pattern)))
    if not found:
        raise XlaError(f"XLA wrote no {pattern} dump")
    with open(found[-1]) as f:
        return f.read()
