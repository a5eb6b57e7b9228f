"""``hlo-layout calibrate``: microbenchmarks run through the XLA execution path, a fit of the
cost model's coefficients, and the target file that records them.

:mod:`.microbenchmarks` writes the modules (copies and transposes by permutation class, reduces
along the minor and the major dims, elementwise ops with operands in other layouts, dots with
each operand layout, slice/concatenate/pad/broadcast, bitcast-reshape against copy);
:mod:`.fit` turns their times into coefficients; :mod:`.target_file` writes the TOML.
"""
