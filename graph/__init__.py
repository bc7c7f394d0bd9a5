"""The agent graph's wiring (builder, routers, runner, history, checkpoint, studio) and the schema its nodes share
(state.py, context.py)."""
