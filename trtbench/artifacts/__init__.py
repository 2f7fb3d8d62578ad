"""Deployable artifacts: the accuracy-gated store and its manifest, publishing, the fresh-process verify."""
