"""The types every stage shares (docs/architecture.md, "Layers")."""
