"""The agent graph's wiring: builder (which nodes, which edges), routers (failure type -> next node), settings
(RunSettings: every setting a run has, stored and migrated), session (Session: start, step, edit, fork, replay; the
graph's input and state edits built in one place), runner (a headless run), history (the checkpoint store's reader),
checkpoint (savers) and studio. The nodes and the state and context they share are in
`nodes/`; nothing here is imported from below."""
