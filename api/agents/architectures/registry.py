"""The architectures an agent can have, by name. Adding one is one registration line."""

from dataclasses import dataclass

DEFAULT = "krishna-memgpt"


@dataclass(frozen=True)
class ArchitectureInfo:
    name: str
    description: str


ARCHITECTURES: dict[str, ArchitectureInfo] = {
    info.name: info
    for info in [
        ArchitectureInfo(
            DEFAULT,
            "MemGPT-style memory: core memory blocks in the prompt, edited with 5 tools, and "
            "archival memory searched with 2 more.",
        ),
    ]
}
