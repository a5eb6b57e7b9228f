"""XLA's own layouts for a module: XLA:CPU's ``layout-assignment`` pass alone (ORACLES §4).

``xla_layout_assignment(text)`` compiles ``text`` in a child process with only that pass
enabled and returns the module XLA dumps right after it: the baseline our layouts are measured
against. The module goes through XLA's MLIR import on the way in, so the answer is equivalent
to the input, not identical (constants may be duplicated per use, tuples split); its entry
parameters keep the input's order and shapes.

Example::

    after = xla_layout_assignment(Path("m.before_layout.hlo").read_text())
    parse_module(after)   # every array laid out, a copy per transposed use
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from service.xla.availability import require_xla
from service.xla.errors import XlaError
from service.xla.execution import call_child


def xla_layout_assignment(text: str, *, timeout_s: float = 300.0, platform: str = "cpu") -> str:
    """The module after XLA's layout assignment for ``platform`` (XLA:CPU's by default);
    raises :class:`XlaError` when XLA fails."""
    require_xla()
    with tempfile.TemporaryDirectory(prefix="hlo-layout-xla-") as tmp:
        work = Path(tmp)
        (work / "module.hlo").write_text(text)
        (work / "dump").mkdir()
        job = {"mode": "layouts", "module": str(work / "module.hlo"), "out": str(work / "dump"),
               "platform": platform}
        result, died = call_child(work, job, timeout_s)
    if died is not None:
        raise XlaError(f"XLA's layout assignment failed: {died}")
    if "error" in result:
        raise XlaError(f"XLA's layout assignment failed: {result['error']}")
    return result["module"]
