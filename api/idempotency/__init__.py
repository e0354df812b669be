"""Idempotency-Key: a retried POST, PUT, PATCH or DELETE gets the first answer again."""
