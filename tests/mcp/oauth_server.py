"""An MCP server with its own authorization, as the MCP authorization spec has it, written with
the official Python SDK (`mcp` on PyPI), for `[[mcp]] auth = "oauth"` (issue 27):

    python oauth_server.py PORT OAUTH_URL --secret SECRET --log FILE

Serves Streamable HTTP at http://127.0.0.1:PORT/mcp, its protected resource metadata (RFC 9728)
at /.well-known/oauth-protected-resource/mcp naming OAUTH_URL as its authorization server and
`mcp` as its scope, and answers a request without a valid token 401 with
`WWW-Authenticate: Bearer resource_metadata="…"` (the SDK's `AuthSettings`). A token is valid
when the OAuth server's introspection (RFC 7662, as the client `mcp-resource-server` with
SECRET) says it is active, for this server (its audience is http://127.0.0.1:PORT/mcp) and
grants `mcp`. Each token checked is written to --log as "SUBJECT AUDIENCE" (or "refused
AUDIENCE"). GET /test/active/SUBJECT answers {"active": …}: whether the OAuth server still
says the last token this server took for SUBJECT is active (false without one), so a test can
see a token revoked that only runway and this server hold. Tool:

  my_orders()  the orders of the token's subject
"""

import argparse
import asyncio
import base64
import json
import urllib.error
import urllib.parse
import urllib.request

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse

parser = argparse.ArgumentParser()
parser.add_argument("port", type=int)
parser.add_argument("oauth")
parser.add_argument("--secret", required=True)
parser.add_argument("--log", required=True)
args = parser.parse_args()

RESOURCE = f"http://127.0.0.1:{args.port}/mcp"
# The last token taken for each subject (memory only: never written anywhere).
last_token: dict[str, str] = {}


def note(line: str) -> None:
    with open(args.log, "a") as log:
        log.write(line + "\n")


def introspect(token: str) -> dict:
    """What the OAuth server says about `token` (RFC 7662)."""
    basic = base64.b64encode(f"mcp-resource-server:{args.secret}".encode()).decode()
    request = urllib.request.Request(
        f"{args.oauth}/token/introspection",
        data=urllib.parse.urlencode({"token": token}).encode(),
        headers={"authorization": f"Basic {basic}", "accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return json.load(r)
    except (urllib.error.URLError, ValueError):
        return {"active": False}


class IntrospectionVerifier:
    """Takes only active tokens whose audience is this server."""

    async def verify_token(self, token: str) -> AccessToken | None:
        info = await asyncio.to_thread(introspect, token)
        aud = info.get("aud")
        audiences = aud if isinstance(aud, list) else [aud]
        if not info.get("active") or RESOURCE not in audiences:
            note(f"refused {aud}")
            return None
        note(f"{info.get('sub')} {aud}")
        last_token[str(info.get("sub"))] = token
        return AccessToken(
            token=token,
            client_id=info.get("client_id", ""),
            scopes=(info.get("scope") or "").split(),
            subject=info.get("sub"),
        )


server = MCPServer(
    "runway-test-orders",
    token_verifier=IntrospectionVerifier(),
    auth=AuthSettings(issuer_url=args.oauth, resource_server_url=RESOURCE, required_scopes=["mcp"]),
)


@server.custom_route("/test/active/{sub}", methods=["GET"])
async def still_active(request: Request) -> JSONResponse:
    token = last_token.get(request.path_params["sub"])
    active = token is not None and bool((await asyncio.to_thread(introspect, token)).get("active"))
    return JSONResponse({"active": active})


@server.tool()
def my_orders() -> str:
    """The orders of the signed-in user."""
    token = get_access_token()
    sub = token.subject if token else "nobody"
    return f"Orders of {sub}: DH-1, DH-2"


server.run(transport="streamable-http", host="127.0.0.1", port=args.port)
