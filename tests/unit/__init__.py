"""Unit tests: tools, ir, models, memory, routers and nodes, each called directly (no compiled graph, no CLI)."""
