"""A small MCP server written with the official Python SDK (`mcp` on PyPI), for the model agent's
end-to-end tests: the cases the reference "everything" server does not cover.

    python orders_server.py PORT [--json] [--cancel-log FILE]

Serves Streamable HTTP at http://127.0.0.1:PORT/mcp (stateful sessions: a restart forgets them).
With --json it answers with JSON bodies instead of event streams. Tools:

  lookup_order(order)  text, and the X-Token header the request carried (to check headers)
  delete_order(order)  text (the tests gate it behind approval)
  slow(seconds)        sleeps; a call cancelled by the client is written to --cancel-log
  broken()             fails (a ToolError, whose message reaches the client): an isError result
"""

import argparse
import asyncio

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

parser = argparse.ArgumentParser()
parser.add_argument("port", type=int)
parser.add_argument("--json", action="store_true")
parser.add_argument("--cancel-log")
args = parser.parse_args()

server = MCPServer("runway-test-orders")


@server.tool()
def lookup_order(order: str, ctx: Context) -> str:
    """Where an order is."""
    token = (ctx.headers or {}).get("x-token", "none")
    return f"Order {order} left the warehouse in Hanoi. token={token}"


@server.tool()
def delete_order(order: str) -> str:
    """Delete an order for good."""
    return f"Order {order} deleted."


@server.tool()
async def slow(seconds: float) -> str:
    """Takes its time."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        if args.cancel_log:
            with open(args.cancel_log, "a") as log:
                log.write(f"cancelled slow({seconds})\n")
        raise
    return f"done after {seconds}s"


@server.tool()
def broken() -> str:
    """Always fails."""
    raise ToolError("the warehouse database is offline")


server.run(transport="streamable-http", host="127.0.0.1", port=args.port, json_response=args.json)
