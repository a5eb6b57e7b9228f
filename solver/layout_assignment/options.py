"""Assignment options: one frozen value shared unchanged by the CLI and the service."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["AssignOptions"]


@dataclass(frozen=True, slots=True)
class AssignOptions:
    """How to assign layouts.

    ``target``: a built-in target name or a path to a target file.
    ``entry_layout``: ``"fixed"`` keeps ``entry_computation_layout`` (entries it leaves
    without a layout are AUTO and free); ``"auto"`` frees every entry array and
    the report lists the layouts to feed. ``time_limit``: seconds for all solves
    together (the per-use model, then the exact shared-copy problem, then, when
    that one is not proven, the relaxed bound), each taking a share of what is left.
    ``max_candidates``: layouts considered per buffer. ``emit_bitcasts``: write
    transposes/reshapes that became free as ``bitcast``. ``normalize``: the
    normalization passes run on the result (``hlo.passes`` names or their short
    aliases, in order); ``None`` runs what the target asks for
    (:func:`hlo.passes.passes_for_target`: the GPU family normalizes and groups
    reductions), ``()`` runs none.
    """

    target: str = "cpu"
    entry_layout: Literal["fixed", "auto"] = "fixed"
    time_limit: float = 10.0
    seed: int = 0
    num_workers: int = 2
    emit_bitcasts: bool = False
    max_candidates: int = 6
    verify: bool = True
    normalize: tuple[str, ...] | None = None
