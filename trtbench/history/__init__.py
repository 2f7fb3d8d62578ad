"""The history: every run's figures in a database (``store``, ``figures``, ``ingest``), series with their steps
(``series``) and the gate (``gate``). Runs are read only through ``ResultSet.load``."""
