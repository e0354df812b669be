"""A turn: the runtime reads what the turn needs, injects hooks and state into the agent's
architecture, runs it, and turns what happens into events for the client."""
