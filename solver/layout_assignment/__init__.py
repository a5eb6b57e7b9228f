"""Layout assignment on HLO: compile to the labeling problem, solve, rewrite, report."""
