"""The offline web inspector of runs, checkpoints, repair trajectories and bench results (`cloudbrain ui`)."""
