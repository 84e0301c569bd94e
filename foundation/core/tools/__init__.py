"""One registry of tool operations, served over REST (``rest.py``) and MCP (``mcp.py``)."""

from foundation.core.tools.registry import Tool, ToolContext, call_tool, get_tool, register, tools

__all__ = ["Tool", "ToolContext", "call_tool", "get_tool", "register", "tools"]
