"""Per-user LLM provider settings, credentials encrypted at rest."""
