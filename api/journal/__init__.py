"""Runs: each turn's events kept in the table, so that a client can resume its stream."""
