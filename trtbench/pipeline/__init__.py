"""The run itself: the runner that loops over build groups and scenarios, what a run has done (its state), and
merging runs."""
