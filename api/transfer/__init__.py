"""Export and import of one agent with all its memory (docs/export-import.md)."""
