"""The MCP server at /mcp: the memory tools over the Model Context Protocol (streamable
HTTP), for the caller's agents only. `endpoint` is what the app mounts; it imports the SDK
(`server`, `tools`) on the first request, since importing it takes seconds (docs/mcp.md)."""
