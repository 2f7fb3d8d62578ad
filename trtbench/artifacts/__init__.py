"""Deployable artifacts: the accuracy-gated store with its manifest, publishing a build, and the fresh-process
verify."""
