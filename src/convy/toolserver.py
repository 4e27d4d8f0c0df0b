"""A scenario's tools served over MCP, for an agent that reaches its tools as an MCP client.

``served`` starts an MCP server for one attempt's ``tools.Toolbox`` on 127.0.0.1, on a port the
system picks, with the official ``mcp`` SDK's server and its Streamable HTTP transport (JSON
answers, no session kept between requests), run by uvicorn in the attempt's own event loop: each
call it gets is answered by the toolbox, as a call from the agent's Python code is, and kept there.
The toolbox starts it the first time an agent asks for its address (``Toolbox.url``) and stops it
at the attempt's end, so an attempt whose agent never asks starts nothing. The SDK is convy's
``mcp`` extra (docs/decisions/0011-mcp.md), imported only here and only when a server starts.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from typing import Any

from convy.agent import Reported
from convy.pauses import Asking
from convy.tools import Toolbox

_CLOSING = 10.0  # seconds the connections open at the attempt's end have to close
PATH = "/mcp"  # where the server answers, as the SDK's clients and most agents' configs expect
_NAME = "convy-scenario-tools"


class MissingExtra(RuntimeError):
    """The ``mcp`` extra is not installed: what to install, said."""


class ToolServer:
    """One attempt's MCP server: its address, and the uvicorn server and socket that run it."""

    def __init__(self, url: str, server: Any, listening: socket.socket) -> None:
        self.url = url
        self._server = server
        self._listening = listening

    async def stop(self) -> None:
        """Stop serving: no more connections taken, those open closed once their answer is out
        (the agent's turns are over), its lifespan ended. As uvicorn's own ``shutdown``, less the
        tenth of a second it sleeps whatever is open: each attempt that served its tools waited it
        (bench/tools.py)."""
        server = self._server
        for listening in server.servers:
            listening.close()
        self._listening.close()
        for connection in list(server.server_state.connections):
            connection.shutdown()
        try:
            async with asyncio.timeout(_CLOSING):
                for listening in server.servers:
                    await listening.wait_closed()
        except TimeoutError:  # a call still under way (a fixture's delay) when the attempt ended: left to end alone
            pass
        await server.lifespan.shutdown()


async def served(box: Toolbox, asking: Asking | None = None) -> ToolServer:
    """An MCP server of ``box``'s tools on 127.0.0.1, started and answering (its address in
    ``ToolServer.url``); a ``MissingExtra`` where the ``mcp`` extra is not installed.

    A call of a tool the scenario's ``approvals:`` name waits for the answer of the person
    (``asking``), as an MCP host asks its user before it runs a tool: denied, it is not run and
    the agent gets an error saying the user declined."""
    try:
        import mcp_types as types
        import uvicorn
        from mcp.server.lowlevel import Server
    except ImportError as error:
        raise MissingExtra(
            f"the scenario's tools over MCP need convy's mcp extra ({error.name} is not installed): pip install 'convy[mcp]'"
        ) from None

    async def listed(context: Any, params: Any) -> Any:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=tool.name, description=tool.description, input_schema=tool.function()["function"]["parameters"])
                for tool in box.tools.values()
            ]
        )

    async def called(context: Any, params: Any) -> Any:
        name, arguments = params.name, dict(params.arguments or {})
        if asking is not None and name in asking.approvals.decisions and name in box.tools:
            approved = await asking.approve(name, arguments)
            call = await box.served(name, arguments, "approved") if approved else box.denied(name, arguments)
        else:
            call = await box.served(name, arguments)
        if call.error:
            return types.CallToolResult(content=[types.TextContent(type="text", text=call.error)], is_error=True)
        value = call.result.value if isinstance(call.result, Reported) else None
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        structured = value if isinstance(value, dict) else None
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured, is_error=False)

    _quiet()
    server = Server(_NAME, on_list_tools=listed, on_call_tool=called)
    app = server.streamable_http_app(streamable_http_path=PATH, json_response=True, stateless_http=True)
    # Made with its protocol named: asyncio sets TCP_NODELAY only on a connection whose socket says
    # it is TCP, and a socket made without (proto 0) left each answer's body waiting for the
    # client's delayed acknowledgement of its head, 44 ms a call where 1.3 (bench/tools.py).
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listening.bind(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on")
    config.load()
    runner = uvicorn.Server(config)
    runner.lifespan = config.lifespan_class(config)
    # uvicorn's own loop (``Server.serve``) only ticks the date header and waits to be told to
    # stop, a tenth of a second at a time: its start and its end, called here, are the server.
    try:
        await runner.startup(sockets=[listening])
    except SystemExit:  # uvicorn's word for a lifespan that failed to start
        listening.close()
        raise RuntimeError("the MCP server of the scenario's tools did not start") from None
    return ToolServer(f"http://127.0.0.1:{port}{PATH}", runner, listening)


def _quiet() -> None:
    """uvicorn's and the SDK's loggers given a handler that drops what they log, once: convy never
    prints, and with no handler Python's last resort wrote their errors to stderr (a call cut off
    when the agent's turn ran out of time: "Exception in ASGI application" and its traceback). A
    team that configures logging still gets them, through the root logger."""
    for name in ("uvicorn.error", "mcp"):
        logger = logging.getLogger(name)
        if not any(isinstance(handler, logging.NullHandler) for handler in logger.handlers):
            logger.addHandler(logging.NullHandler())
