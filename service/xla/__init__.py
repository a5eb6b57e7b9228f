"""Run laid-out modules in XLA:CPU, and ask XLA for its own layouts (needs the ``xla`` extra).

Three doors, each in its own module, each running XLA where it cannot take the caller down:

- :func:`service.xla.execution.run_modules` runs fully laid-out modules with exactly their
  layouts (XLA's ``PRE_SCHEDULER`` swap) in a child process, on seeded or given inputs, and
  returns a :class:`~service.xla.execution.Measurement`: each module's outputs or the reason it
  could not run, and with ``reps > 0`` paired, interleaved times on one pinned CPU (A/B/A).
- :func:`service.xla.layout_pass.xla_layout_assignment` returns XLA:CPU's own layouts for a
  module (its ``layout-assignment`` pass alone): the baseline to measure against.
- :func:`service.xla.stages.dump_stages` compiles a JAX function and returns its ``pre``,
  ``before_layout`` and ``after_layout`` modules, as the shared corpus has them.

:func:`service.xla.refusals.refusal_reason` says, before running, why a module cannot run on
this path (scatter outside a fusion, while loops, arrays without layouts, tuple parameters).
Every door calls :func:`service.xla.availability.require_xla` first, which raises
:class:`~service.xla.errors.XlaUnavailable` with the install hint when jax is missing; the CLI
turns it into exit 2. Nothing here imports jax at import time.
"""
