"""The `cloudbrain` command: one module per command group, the interactive stepper, memory seeding from runs."""
