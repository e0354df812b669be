"""Seed 004's memory layer API (`/memory/*`), as thin routes over our services."""
