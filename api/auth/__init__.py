"""Authentication: who is calling, as one dependency every router uses."""
