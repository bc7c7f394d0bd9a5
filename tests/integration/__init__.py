"""Integration tests: the compiled graph end to end, the CLI, subprocesses and benchmark split generation."""
