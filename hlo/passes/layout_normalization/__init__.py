"""The pieces of ``normalize-layouts``: value forms and per-opcode handlers."""
