"""Results of runs: the result set and its schema, the crash-safe journal, comparison of two sets, recommendations."""
