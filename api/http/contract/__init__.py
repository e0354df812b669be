"""The OpenAPI contract: the error bodies every operation documents, the statuses each can
answer, and the event streams of turns (docs/api-contract.md)."""
