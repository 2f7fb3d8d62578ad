"""The types every stage shares: cases and records, statuses and errors, precisions, statistics, input specs, the
environment, the output folder."""
