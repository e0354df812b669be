"""One turn asked for: by a person (or a client) in a conversation they own, or by an
orchestrator's turn of one of its specialists (`via`)."""

from dataclasses import dataclass

from api.conversations.models import Conversation


@dataclass(frozen=True)
class Via:
    """How a specialist's nested turn was asked for: by a turn `depth - 1` levels below
    the person's, whose agents (the top first) are `ancestors`; it must end by `deadline`
    (the event loop's clock), within the turn that asked."""

    depth: int
    ancestors: tuple[str, ...]
    deadline: float


@dataclass(frozen=True)
class TurnRequest:
    """One turn asked for: who asks, in which conversation, as which actor and session.

    Made only from what the caller was found to own (`in_conversation` from an owned
    conversation, `chat.service.open_turn` from the caller's agent and session
    lookup): the runtime reads the agent's and the conversation's partitions by these ids."""

    user_email: str
    agent_id: str
    conversation_id: str
    actor_id: str
    session_id: str
    prompt: str
    via: Via | None = None  # a specialist's turn, asked by its orchestrator's

    @classmethod
    def in_conversation(
        cls, conversation: Conversation, prompt: str, actor_id: str | None
    ) -> "TurnRequest":
        """A turn in an owned conversation, as seed 001 names it: the user speaks unless an
        actor is given; the session is the conversation's."""
        return cls(
            user_email=conversation.created_by,
            agent_id=conversation.agent_id,
            conversation_id=conversation.conversation_id,
            actor_id=actor_id or conversation.created_by,
            session_id=conversation.session_id or conversation.conversation_id,
            prompt=prompt,
        )
