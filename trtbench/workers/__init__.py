"""Worker processes that time a variant alone: spawning, the request loop, the checked call."""
