"""CloudBrain's tests: unit/ (one module or function at a time), integration/ (compiled graph, CLI, processes,
benchmark generation), support/ (helpers, not tests). Shared fixtures are in conftest.py."""
