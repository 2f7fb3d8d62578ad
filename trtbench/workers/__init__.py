"""Worker processes that time a variant alone (each in its own process): spawning, the request loop, the checked
call."""
