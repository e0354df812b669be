"""The MCP tools, registered on the SDK's server: the memory tools of seeds 000 and 003
(`native_tools`), and seed 004's context, search and add with the caller's agents
(`layer_tools`)."""

from typing import Any

from mcp.server.mcpserver import MCPServer

from api.http.mcp import layer_tools, native_tools
from api.http.mcp.caller import READ_ONLY, WRITES


def register(server: MCPServer[Any]) -> None:
    for tool, annotations in native_tools.NATIVE:
        server.add_tool(
            tool,
            description=native_tools.description(tool.__name__),
            annotations=annotations,
            structured_output=False,  # the text the agent reads, as it is
        )
    server.add_tool(layer_tools.memory_context, annotations=READ_ONLY)
    server.add_tool(layer_tools.memory_search, annotations=READ_ONLY)
    server.add_tool(layer_tools.memory_add, annotations=WRITES)
    server.add_tool(layer_tools.list_agents, annotations=READ_ONLY)
