"""The history: every run's figures in a database, series with their steps, and the gate.

``store`` (SQLite or PostgreSQL), ``figures`` (what a result set gives it), ``ingest`` (append, ingest,
rebuild), ``series`` (series, steps, what changed; :func:`~trtbench.history.series.read_history` is the plain
data a page of the history draws) and ``gate`` (``trtbench gate``). Runs are read only through
``ResultSet.load``.
"""
