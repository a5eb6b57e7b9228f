"""Each value of a computation in the forms the rewritten computation holds it.

While ``normalize-layouts`` rebuilds a computation, an original value (an
instruction result, or an element of a tuple result) may exist in the new
instruction list under several shapes that all describe *the same bytes*: its
original shape, its physical-order shape (see
:mod:`hlo.passes.physical_shapes`), or, for a reduce result, the natural order
of the rewritten reduce. Any form is a bitcast of any other (a transpose that
moves no bytes), so a missing form is made on demand by one bitcast from the
first form that exists. Nothing else may be registered as a form: that is the
invariant that keeps every inserted bitcast honest.

A value is named by a *key*: the original instruction's name and a tuple index
path (``("reduce.1", (0,))`` is element 0 of a variadic reduce).
"""

from __future__ import annotations

from collections.abc import Sequence

from hlo.errors import LayoutError
from hlo.ir import Computation, Instruction, Module
from hlo.passes.instruction_sequence import InstructionSequence, NameTable
from hlo.passes.physical_shapes import (
    inverse_permutation,
    permute_dims,
    physical_order,
    physical_shape,
)
from hlo.shape import ArrayShape, Shape, TupleShape, subshape

Key = tuple[str, tuple[int, ...]]


class ValueForms:
    """The rewritten computation under construction and the forms of every original value."""

    def __init__(self, module: Module, comp: Computation, names: NameTable) -> None:
        self.module = module
        self.comp = comp
        self.seq = InstructionSequence(names)
        self.names = names
        self.original: dict[str, Shape] = {i.name: i.shape for i in comp.instructions}
        self._forms: dict[Key, dict[Shape, str]] = {}
        self._alias: dict[Key, Key] = {}
        #: element key -> (new tuple instruction, index): fetched with a get-tuple-element on demand
        self._sources: dict[Key, tuple[str, int]] = {}
        self._claimed: set[str] = set()
        #: (value, order) -> a transposed copy made by :meth:`view` (not a form: other bytes)
        self._views: dict[tuple[Key, tuple[int, ...]], str] = {}
        #: original instruction name -> the new name that carries its value (for control edges)
        self.carrier: dict[str, str] = {}

    # -- names ----------------------------------------------------------------

    def claim(self, name: str) -> str:
        """The original name for the instruction that replaces it (fresh if already used)."""
        if name in self._claimed:
            return self.names.fresh(name)
        self._claimed.add(name)
        return name

    # -- keys -----------------------------------------------------------------

    def resolve(self, key: Key) -> Key:
        while True:
            name, path = key
            for k in range(len(path) + 1):
                target = self._alias.get((name, path[:k]))
                if target is not None:
                    key = (target[0], target[1] + path[k:])
                    break
            else:
                return key

    def original_shape(self, key: Key) -> Shape:
        return subshape(self.original[key[0]], key[1])

    def alias(self, key: Key, target: Key) -> None:
        self._alias[key] = target

    def define(self, key: Key, name: str) -> None:
        """``name`` (already emitted) holds the value ``key`` in its own shape."""
        key = self.resolve(key)
        self._forms.setdefault(key, {})[self.seq.shapes[name]] = name
        if not key[1]:
            self.carrier.setdefault(key[0], name)

    def define_source(self, key: Key, tuple_name: str, index: int) -> None:
        self._sources[self.resolve(key)] = (tuple_name, index)

    # -- forms ----------------------------------------------------------------

    def get(self, key: Key, shape: Shape) -> str:
        """A new instruction holding value ``key`` with exactly ``shape``."""
        key = self.resolve(key)
        forms = self._forms.setdefault(key, {})
        if shape in forms:
            return forms[shape]
        name, path = key
        if isinstance(shape, TupleShape):
            original = _tuple_shape(self.original_shape(key))
            elements = [(name, (*path, i)) for i in range(len(original.elements))]
            if path and not any(self.has_forms(e) for e in elements):
                made = self._element(key, shape)  # nothing rewritten inside: fetch it whole
            else:
                parts = [self.get(e, s) for e, s in zip(elements, original.elements)]
                made = self.seq.new(f"{name}.tuple", "tuple", shape, parts)
        elif not isinstance(shape, ArrayShape):
            made = self._element(key, shape)
        else:
            arrays = [n for s, n in forms.items() if isinstance(s, ArrayShape)]
            if arrays:
                made = self.seq.bitcast(
                    arrays[0],
                    shape,
                    f"{name}.{'physical' if shape == self.physical(key) else 'bitcast'}",
                )
            else:
                made = self._element(key, self.original_shape(key))
                if self.seq.shapes[made] != shape:
                    made = self.seq.bitcast(made, shape, f"{name}.bitcast")
        forms[shape] = made
        return made

    def _element(self, key: Key, shape: Shape, name_as: str | None = None) -> str:
        """Fetch an element of a tuple value with a get-tuple-element (named ``name_as``
        when given)."""
        name, path = key
        source = self._sources.get(key)
        if source is not None:
            tuple_name, index = source
            tuple_shape = self.seq.shapes[tuple_name]
            tuple_shape = _tuple_shape(tuple_shape)
            element = tuple_shape.elements[index]
            made = self.seq.emit(
                Instruction(
                    name_as or self.names.fresh(f"{tuple_name}.{index}"),
                    "get-tuple-element",
                    element,
                    (tuple_name,),
                    (("index", index),),
                )
            )
        else:
            if not path:
                raise KeyError(f"value '{name}' has no form yet")
            parent = self.orig((name, path[:-1]))
            made = self.seq.new(
                f"{name}.{path[-1]}", "get-tuple-element", shape, (parent,), (("index", path[-1]),)
            )
        self._forms.setdefault(key, {})[self.seq.shapes[made]] = made
        return made

    def has_forms(self, key: Key) -> bool:
        key = self.resolve(key)
        return bool(self._forms.get(key)) or key in self._sources

    def materialize(self, key: Key, name: str) -> bool:
        """Fetch a tuple element that has a source but no form yet, naming the
        get-tuple-element ``name``; False when there is nothing to fetch."""
        key = self.resolve(key)
        if self._forms.get(key) or key not in self._sources:
            return False
        self._element(key, self.original_shape(key), name_as=name)
        return True

    def orig(self, key: Key) -> str:
        """The value in its original shape."""
        return self.get(key, self.original_shape(key))

    def physical(self, key: Key) -> ArrayShape:
        shape = self.original_shape(key)
        shape = _array_shape(shape)
        return physical_shape(shape)

    def norm(self, key: Key) -> str:
        """The value in its physical-order shape."""
        return self.get(key, self.physical(key))

    def view(self, key: Key, order: Sequence[int], base: str) -> str:
        """The array value with its dims listed in ``order``, descending layout.

        This is the normalized value itself when ``order`` is its physical order
        (a bitcast when they differ only in size-1 dims, else a real transpose).
        """
        shape = self.original_shape(key)
        shape = _array_shape(shape)
        order = tuple(order)
        source = self.norm(key)
        if order == physical_order(shape):
            return source
        resolved = self.resolve(key)
        if (resolved, order) in self._views:
            return self._views[(resolved, order)]
        # A view is another logical array (a transpose of the value), never one of
        # its forms, even when its shape happens to equal a form's (square dims).
        position = inverse_permutation(physical_order(shape))
        made = self.seq.permute(
            source,
            tuple(position[d] for d in order),
            permute_dims(shape, order),
            self.names.fresh(base),
        )
        self._views[(resolved, order)] = made
        return made

    def emit(self, instr: Instruction) -> str:
        return self.seq.emit(instr)


def _tuple_shape(shape: Shape) -> TupleShape:
    if not isinstance(shape, TupleShape):
        raise LayoutError(f"expected a tuple shape, got {shape}")
    return shape


def _array_shape(shape: Shape) -> ArrayShape:
    if not isinstance(shape, ArrayShape):
        raise LayoutError(f"expected an array shape, got {shape}")
    return shape
