"""PLUG-IN POINT: agent architectures."""
