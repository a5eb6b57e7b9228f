"""Layout assignment as a labeling problem, solved with CP-SAT.

Depends on ``hlo`` only; never parses text or prints (``service -> solver -> hlo``).
"""
