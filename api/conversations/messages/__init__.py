"""Messages of a conversation, in order."""
