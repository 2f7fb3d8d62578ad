"""The run itself: the runner, what a run has done (its state), the supervisor, merging runs."""
