"""Agent memory platform: agents with long-term memory over REST and SSE."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("agent-memory")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"
