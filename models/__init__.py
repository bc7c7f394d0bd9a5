"""LLM backends of the agent graph: one `IRGenerator` interface (models.base), made from a model string by the one
model factory (models.factory: `init_ir_writer`, and `init_chat_model` for the baselines). Nothing is imported here,
so naming a submodule loads only that one."""
