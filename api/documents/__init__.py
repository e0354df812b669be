"""An agent's documents: files uploaded to it, split into passages its search finds."""
