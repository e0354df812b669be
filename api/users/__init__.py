"""Users: the tenants."""
