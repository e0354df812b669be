"""Seed 004's subjects: a client's `user_id`, resolved inside the caller's tenant to an agent
of theirs. A subject id never becomes a partition key: two tenants' `customer_123` are two
subjects."""
