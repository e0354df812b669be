"""OpenAI's Chat Completions API over our agents: `model` names an agent of the caller's,
and a completion is one turn of it (docs/openai-compatible.md)."""
