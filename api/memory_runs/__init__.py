"""Seed 004's memory runs: new messages of a subject processed by an agent loop with the core
memory tools, as durable items in the table, worked through the queue port (api/queue/)."""
