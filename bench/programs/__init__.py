"""JAX programs that produce HLO modules for tests and benchmarks.

Each builder returns a jitted function with example arguments, so that its HLO stages can be taken
from XLA (``jax.jit(f).lower(*args)``) instead of being checked into the repository.
"""
