"""Liveness and readiness of the service and its store."""
