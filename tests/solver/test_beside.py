"""Work beside the caller in a forked child: its result comes back, its exceptions are
raised again, a child that dies says so, and the caller works meanwhile."""

from __future__ import annotations

import os
import select

import pytest

from solver.beside import NotBeside, beside, core_free
from solver.errors import AssignmentError


def test_the_result_comes_back_from_another_process() -> None:
    parent = os.getpid()
    data = list(range(100_000))  # the child sees what the parent holds, unpickled
    pending = beside(lambda: (os.getpid(), sum(data)))
    pid, total = pending.result()
    assert pid != parent and total == sum(range(100_000))
    assert pending.result() == (pid, total)  # once collected, kept


def test_the_caller_works_meanwhile() -> None:
    # The child waits for what the caller writes after beside() returned: run one after
    # the other, it would wait in vain and return nothing.
    read, write = os.pipe()

    def waiting() -> bytes:
        ready, _, _ = select.select([read], [], [], 20.0)
        return os.read(read, 2) if ready else b""

    try:
        pending = beside(waiting)
        os.write(write, b"go")
        assert pending.result() == b"go"
    finally:
        os.close(read)
        os.close(write)


def test_an_exception_in_the_child_is_raised_again() -> None:
    def failing() -> None:
        raise AssignmentError("no layout assignment meets the hard rules: x")

    with pytest.raises(AssignmentError, match="hard rules: x"):
        beside(failing).result()


def test_a_child_that_dies_says_so() -> None:
    with pytest.raises(NotBeside):
        beside(lambda: os._exit(3)).result()


def test_a_result_that_cannot_be_pickled_says_so() -> None:
    with pytest.raises(NotBeside, match="not picklable"):
        beside(lambda: (lambda: 0)).result()


def test_a_core_is_free_only_below_the_core_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.4, 0.0, 0.0))
    assert core_free()
    monkeypatch.setattr(os, "getloadavg", lambda: (1.6, 0.0, 0.0))
    assert not core_free()
