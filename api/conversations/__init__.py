"""Conversations (sessions) between a user and an agent."""
