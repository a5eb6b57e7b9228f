"""HLO text front end, IR, layout algebra, targets, verification and passes.

This package knows nothing of CP-SAT or HTTP: ``service -> solver -> hlo``.
"""
