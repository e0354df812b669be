"""Agents: a user's agents, their architecture, provider and persona."""
