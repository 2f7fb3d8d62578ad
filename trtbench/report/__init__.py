"""Presentations of a run's results: tables (Markdown, CSV, terminal) and plots."""
