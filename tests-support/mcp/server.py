"""An MCP server written with the official Python SDK (PyPI `mcp` 2.3), for
plugins/mcp's tests: the Python peer beside server.mjs (TypeScript SDK).

`python server.py stdio` serves one client on stdin/stdout;
`python server.py http` serves Streamable HTTP on a free 127.0.0.1 port and
prints its endpoint URL as the first line of stdout.

It offers the same tools as server.mjs where the host's tests need them:
`add` (succeeds), `fail` (an isError result), `count` (reports progress),
`picture` (an image and an embedded resource), `hang` (never answers); a
prompt (`greet`), a resource (`test://readme`) and a resource template
(`test://greeting/{name}`).
"""

import asyncio
import base64
import socket
import sys

import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import EmbeddedResource, ImageContent, TextContent, TextResourceContents

# A 1x1 red PNG (the same as server.mjs's).
RED_PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
assert base64.b64decode(RED_PIXEL)[:4] == b"\x89PNG"

mcp = MCPServer("genkit-rs-python-peer", version="1.0.0")


# The tools return content blocks rather than plain values, so that the SDK
# adds no `structuredContent` and the results read as server.mjs's do.
@mcp.tool(structured_output=False)
def add(a: float, b: float) -> list[TextContent]:
    """Adds two numbers."""
    total = a + b
    text = str(int(total)) if total.is_integer() else str(total)
    return [TextContent(text=text)]


@mcp.tool(structured_output=False)
def fail(reason: str) -> str:
    """Always fails."""
    raise ToolError(f"refused: {reason}")


@mcp.tool(structured_output=False)
async def count(to: int, ctx: Context) -> list[TextContent]:
    """Counts to `to`, reporting progress at each step."""
    for i in range(1, to + 1):
        await ctx.report_progress(i, to, f"step {i}")
    # The Rust client handles notifications on separate tasks: give the last
    # report time to arrive before the answer (server.mjs pauses too).
    await asyncio.sleep(0.1)
    return [TextContent(text=f"counted to {to}")]


@mcp.tool(structured_output=False)
def picture() -> list[TextContent | ImageContent | EmbeddedResource]:
    """Returns a picture and its caption file."""
    return [
        TextContent(text="a red pixel"),
        ImageContent(data=RED_PIXEL, mime_type="image/png"),
        EmbeddedResource(
            resource=TextResourceContents(uri="test://caption.txt", mime_type="text/plain", text="red")
        ),
    ]


@mcp.tool(structured_output=False)
async def hang() -> str:
    """Never answers."""
    await asyncio.Event().wait()
    return "unreachable"


@mcp.prompt(description="Greets someone.")
def greet(name: str) -> str:
    return f"Say hello to {name}."


@mcp.resource("test://readme", name="readme", description="A short text", mime_type="text/plain")
def readme() -> str:
    return "This is the readme."


@mcp.resource("test://greeting/{name}", name="greeting", description="A greeting for `name`", mime_type="text/plain")
def greeting(name: str) -> str:
    return f"Hello, {name}!"


async def serve_http() -> None:
    # Listen first, so the URL printed is served (connections made before
    # uvicorn is up wait in the backlog).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    app = mcp.streamable_http_app(host="127.0.0.1")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    print(f"http://127.0.0.1:{port}/mcp", flush=True)
    await server.serve(sockets=[sock])


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "stdio":
        mcp.run("stdio")
    elif mode == "http":
        asyncio.run(serve_http())
    else:
        print("usage: python server.py stdio|http", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
