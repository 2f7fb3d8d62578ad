"""The build stage: every variant of a build group at each precision, the copies they build from, and how a worker
gets the same build."""
