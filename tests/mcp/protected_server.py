"""An MCP server that acts for the person whose bearer token it is sent, written with the
official Python SDK (`mcp` on PyPI), for the connected-account tests (issue 27):

    python protected_server.py PORT OAUTH_URL --log FILE --deny FILE

Serves Streamable HTTP at http://127.0.0.1:PORT/mcp. Every request needs a bearer token the
OAuth server at OAUTH_URL still honours (its userinfo endpoint, /me, names the user: the
token's subject); anything else is answered 401 by the SDK's bearer middleware, and the SDK
binds each session to the subject that opened it. Each token checked is written to --log as
its subject (or "refused"); a subject listed in --deny (one a line) is refused, as an API
that no longer takes a user's tokens. Each DELETE of a session (a client ending it) is written
as "ended SESSION STATUS", with the SDK's answer (200: terminated). Tool:

  my_orders()  the orders of the token's subject, and the session they were asked in
"""

import argparse
import asyncio
import json
import urllib.error
import urllib.request
from pathlib import Path

import uvicorn

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer

parser = argparse.ArgumentParser()
parser.add_argument("port", type=int)
parser.add_argument("oauth")
parser.add_argument("--log", required=True)
parser.add_argument("--deny", required=True)
args = parser.parse_args()


def note(line: str) -> None:
    with open(args.log, "a") as log:
        log.write(line + "\n")


def subject(token: str) -> str | None:
    """The subject the OAuth server's userinfo endpoint names for `token`, if it honours it."""
    request = urllib.request.Request(f"{args.oauth}/me", headers={"authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return json.load(r).get("sub")
    except (urllib.error.URLError, ValueError):
        return None


class UserinfoVerifier:
    """Checks a token at the OAuth server's userinfo endpoint."""

    async def verify_token(self, token: str) -> AccessToken | None:
        sub = await asyncio.to_thread(subject, token)
        deny = Path(args.deny)
        denied = deny.exists() and sub in deny.read_text().split()
        if sub is None or denied:
            note("refused")
            return None
        note(sub)
        return AccessToken(token=token, client_id="runway", scopes=[], subject=sub)


server = MCPServer(
    "runway-test-acme",
    token_verifier=UserinfoVerifier(),
    auth=AuthSettings(issuer_url=args.oauth, resource_server_url=None),
)


@server.tool()
def my_orders(ctx: Context) -> str:
    """The orders of the signed-in user."""
    token = get_access_token()
    sub = token.subject if token else "nobody"
    session = (ctx.headers or {}).get("mcp-session-id", "none")
    return f"Orders of {sub}: DH-1, DH-2 (session {session})"


async def app(scope, receive, send):
    """The SDK's app, noting each DELETE (a client ending its session) as "ended SESSION STATUS":
    the SDK answers 200 once it has terminated the session (404: it knew no such session)."""
    if scope["type"] != "http" or scope["method"] != "DELETE":
        return await sdk_app(scope, receive, send)
    session = dict(scope["headers"]).get(b"mcp-session-id", b"").decode()

    async def noted(message):
        if message["type"] == "http.response.start":
            note(f"ended {session} {message['status']}")
        await send(message)

    await sdk_app(scope, receive, noted)


sdk_app = server.streamable_http_app(host="127.0.0.1")
uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")
