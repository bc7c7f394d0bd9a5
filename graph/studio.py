"""The graph as `langgraph dev` / LangGraph Studio loads it (langgraph.json); the server brings its own
checkpointer, and the run context (model, ablations...) comes from the Studio's context form."""

from graph.builder import build_graph

graph = build_graph()
