"""Tools the agent's model can call. `native/` holds the ones implemented in this service."""
