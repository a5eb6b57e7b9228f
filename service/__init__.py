"""The front doors: command line, HTTP API and batch optimization over one pipeline."""
