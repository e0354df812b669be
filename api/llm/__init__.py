"""PORT: streamed chat with tool calls, one adapter per provider's wire format."""
