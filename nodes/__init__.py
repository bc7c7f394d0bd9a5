"""The graph's nodes, one module each, and their small shared helpers."""
