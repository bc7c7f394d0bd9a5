"""The agent graph's wiring: builder (which nodes, which edges), routers (failure type -> next node), runner,
history (replay, fork), checkpoint (savers) and studio. The nodes and the state and context they share are in
`nodes/`; nothing here is imported from below."""
