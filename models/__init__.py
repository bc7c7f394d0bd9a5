"""LLM backends of the agent graph: one `IRGenerator` interface (models.base), chosen by a model string
(models.factory.make_generator). Nothing is imported here, so naming a submodule loads only that one."""
