"""Benchmark scripts: each prints a table; none is a test."""
