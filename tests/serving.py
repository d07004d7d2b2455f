"""`candor serve`'s app for integration tests: the real app (`bot.server.build_app`) with a chat adapter
mounted, on 127.0.0.1 and a free port, as `candor serve` mounts Slack and Teams."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Protocol

from aiohttp import web

from bot.server import PLATFORM_BODY_BYTES, build_app
from rag.runtime import Candor


class Mountable(Protocol):
    def mount(self, app: web.Application) -> None: ...


@asynccontextmanager
async def serve_adapter(core: Candor, adapter: Mountable) -> AsyncIterator[str]:
    """Serve the app with `adapter` mounted; its base URL ("http://127.0.0.1:<port>")."""
    app = build_app(core, max_body_bytes=PLATFORM_BODY_BYTES)
    adapter.mount(app)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()
