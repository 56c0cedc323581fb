"""What a run records and spends: a task's record and its trials, the run's events, agent failures,
costs and statistics."""
