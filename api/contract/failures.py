"""Errors several routes share, named once for their `errors(...)`."""

from api.agents import service as agents
from api.kit.netguard import UrlRefused
from api.llm import errors as llm
from api.runtime.lease import ConversationBusy
from api.runtime.runner import ArchitectureUnavailable
from api.settings import service as settings

# What calling a user's LLM provider can end with.
PROVIDER_FAILURES = (
    llm.ProviderAuthFailed,
    llm.ProviderRejected,
    llm.ProviderRateLimited,
    llm.ProviderUnavailable,
    llm.ProviderTimeout,
)
# Getting a user's provider ready: not configured, stored settings unreadable, a URL refused.
PROVIDER_SETUP = (
    settings.UnknownProvider,
    settings.ProviderNotConfigured,
    settings.StoredSettingsInvalid,
    settings.ServerIdentityRefused,
    UrlRefused,
)
# What a turn's request can answer before its stream begins, or instead of its JSON answer
# when it fails: the agent (unknown), its provider, its architecture, another turn running
# in the conversation.
TURN_FAILURES = (
    agents.AgentNotFound,
    agents.ProviderNotConfigured,
    *PROVIDER_SETUP[1:],
    ArchitectureUnavailable,
    ConversationBusy,
    *PROVIDER_FAILURES,
)
