"""Run one piece of work in a forked process beside the caller's own, on another core.

``pending = beside(work)`` forks; the child runs ``work()`` (a function of what the
parent holds now: nothing is copied up front, the pages are shared until written) and
sends its result back pickled through a pipe; ``pending.result()`` waits for it. The
result is what ``work()`` returns in the parent too, so the answer does not depend on
the scheduling; only the wall clock does.

Where it cannot fork (no ``os.fork``), ``beside`` runs ``work()`` at once. When the child
dies or its result does not come back, ``result()`` raises :class:`NotBeside`: the caller
runs the work itself. An exception that ``work()`` raises in the child is raised again
by ``result()``.

Example::

    pending = beside(lambda: solve(first))
    other = solve(second)           # meanwhile, here
    answer = pending.result()
"""

from __future__ import annotations

import os
import pickle
import signal
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Beside", "NotBeside", "beside", "core_free"]

T = TypeVar("T")

#: ``prctl`` option: the signal a child gets when its parent dies.
_PR_SET_PDEATHSIG = 1


class NotBeside(Exception):
    """The work's result did not come back from the child process."""


class Beside(Generic[T]):
    """Work started by :func:`beside`: its result, once (``result()``)."""

    __slots__ = ("_pid", "_read", "_done")

    def __init__(self, pid: int | None, read: int | None, done: tuple[bool, object] | None
                 ) -> None:
        self._pid, self._read, self._done = pid, read, done

    def result(self) -> T:
        """Wait for the work and return its result (raise what it raised)."""
        if self._done is None:
            self._done = self._collect()
        ok, value = self._done
        if not ok:
            assert isinstance(value, BaseException)
            raise value
        return value  # type: ignore[return-value]

    def _collect(self) -> tuple[bool, object]:
        assert self._pid is not None and self._read is not None
        with os.fdopen(self._read, "rb") as pipe:
            data = pipe.read()
        os.waitpid(self._pid, 0)
        try:
            return pickle.loads(data)
        except Exception as err:  # an empty or cut pipe: the child died
            return False, NotBeside(f"no result from the child process ({err})")


def beside(work: Callable[[], T]) -> Beside[T]:
    """Start ``work()`` in a forked child (see the module docstring)."""
    if not hasattr(os, "fork"):
        return _done(work)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            os.close(read)
            _die_with_parent()
            done = _done(work)._done
            try:
                data = pickle.dumps(done, pickle.HIGHEST_PROTOCOL)
            except Exception as err:
                data = pickle.dumps((False, NotBeside(f"result not picklable ({err})")))
            with os.fdopen(write, "wb") as pipe:
                pipe.write(data)
        finally:
            os._exit(0)
    os.close(write)
    return Beside(pid, read, None)


def core_free() -> bool:
    """Whether a core is idle now: the one-minute load average (this process included)
    is below the number of cores by half a core or more. A child beside the caller on a
    machine with no idle core only splits the caller's share of it: on a shared 2-core
    machine (load 6-9) a 96-layer assignment took 62 s with its seeds beside, 36 s
    without (its time-bounded reductions ran out of time)."""
    try:
        return os.getloadavg()[0] <= (os.cpu_count() or 1) - 0.5
    except (OSError, AttributeError):
        return False


def _done(work: Callable[[], T]) -> Beside[T]:
    try:
        return Beside(None, None, (True, work()))
    except Exception as err:
        return Beside(None, None, (False, err))


def _die_with_parent() -> None:
    """Linux: the child is killed when the parent dies (a worker stopped at its time limit
    takes its child with it); elsewhere nothing."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
