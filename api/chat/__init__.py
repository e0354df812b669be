"""POST /chat: seed 001's entry point, one turn addressed by agent, actor and session."""
