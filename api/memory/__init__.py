"""An agent's memory: core blocks, archival memories, capacity warnings."""
