"""An HTTPS proxy (HTTP CONNECT) on 127.0.0.1 that tunnels chosen host names to local fakes.

For clients that talk to a fixed public host and let the environment choose their proxy (`requests`
reads HTTPS_PROXY / NO_PROXY): the client still opens TLS to, say, `login.microsoftonline.com`,
checks its certificate for that name (a `tests.fakes.tls.LocalCA` one, trusted through
REQUESTS_CA_BUNDLE), and speaks to the fake instead. Every other target is refused with 403, so
nothing leaves the machine.

    with TunnelProxy({"login.microsoftonline.com:443": ("127.0.0.1", fake_tls_port)}) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        ...
        assert proxy.connects == ["login.microsoftonline.com:443"]

Runs on its own event loop in a daemon thread (a client may block its own loop while it waits).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Mapping

from tests.fakes.background import BackgroundLoop

_HEAD_LIMIT = 16 * 1024
_CHUNK = 64 * 1024


class TunnelProxy:
    """`routes` maps "host:port" (as a client sends it in CONNECT) to the local (host, port) to tunnel to."""

    def __init__(self, routes: Mapping[str, tuple[str, int]]) -> None:
        self.routes = {target.lower(): address for target, address in routes.items()}
        self.connects: list[str] = []
        """Every CONNECT target asked for, tunnelled or not, in order."""
        self.refused: list[str] = []
        """The requests refused: "CONNECT evil.example.com:443", "GET http://...", ..."""
        self._lock = threading.Lock()
        self._background = BackgroundLoop("tunnel-proxy")
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the tunnel proxy is not running")
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    def start(self) -> str:
        self._background.start(self._start())
        return self.url

    def stop(self) -> None:
        self._background.stop(self._stop())

    def __enter__(self) -> TunnelProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._client, "127.0.0.1", 0, limit=_HEAD_LIMIT)

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            await self._server.wait_closed()
        self._server = None

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            await self._tunnel(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self._writers.discard(writer)
            with contextlib.suppress(Exception):
                writer.close()

    async def _tunnel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        method, _, rest = request_line.partition(" ")
        target = rest.rpartition(" ")[0].lower()
        if method == "CONNECT":
            with self._lock:
                self.connects.append(target)
        address = self.routes.get(target) if method == "CONNECT" else None
        if address is None:
            with self._lock:
                self.refused.append(f"{method} {target}")
            writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
            return
        upstream_reader, upstream_writer = await asyncio.open_connection(*address)
        self._writers.add(upstream_writer)
        try:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
        finally:
            self._writers.discard(upstream_writer)
            with contextlib.suppress(Exception):
                upstream_writer.close()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Copy until end of file, then half-close the other side."""
    try:
        while chunk := await source.read(_CHUNK):
            sink.write(chunk)
            await sink.drain()
    except ConnectionError:
        pass
    finally:
        with contextlib.suppress(Exception):
            if sink.can_write_eof():
                sink.write_eof()
