"""Seed 002's REST API (the local memory server's), as thin routes over our services."""
