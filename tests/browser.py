"""Headless Chromium (Debian's `chromium`, which `make test` installs) driven over the DevTools protocol,
for tests of pages a person uses with the keyboard. No driver package: the protocol is JSON over a
websocket, spoken here with aiohttp, the same client the rest of the tests use.

    async with Chromium.start(tmp_path) as browser:
        await browser.goto(url)
        await browser.wait_for("document.querySelector('.item') !== null")
        await browser.press("s")
"""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
import subprocess
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp

STARTUP_SECONDS = 30.0


class Chromium:
    def __init__(self, process: subprocess.Popen[bytes], session: aiohttp.ClientSession) -> None:
        self.process = process
        self.session = session
        self.socket: aiohttp.ClientWebSocketResponse | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._events: list[dict[str, Any]] = []
        self._reader: asyncio.Task[None] | None = None

    @classmethod
    async def start(cls, folder: Path) -> Chromium:
        binary = shutil.which("chromium")
        if binary is None:
            raise RuntimeError(
                "chromium is not installed, and this test needs it: "
                "apt-get install -y --no-install-recommends chromium (make test does this: scripts/ensure_chromium.sh)"
            )
        profile = folder / "chromium-profile"
        profile.mkdir(parents=True, exist_ok=True)
        process = subprocess.Popen(  # noqa: ASYNC220 (starting it is quick; it then runs on its own)
            [
                binary,
                "--headless=new",
                "--no-sandbox",  # tests run as root here
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        browser = cls(process, aiohttp.ClientSession())
        try:
            port = await _port(profile, process)
            async with browser.session.get(f"http://127.0.0.1:{port}/json/list") as response:
                pages = [t for t in await response.json() if t.get("type") == "page"]
            browser.socket = await browser.session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0)
            browser._reader = asyncio.create_task(browser._read())
            await browser.send("Page.enable")
            await browser.send("Runtime.enable")
        except BaseException:
            await browser.close()
            raise
        return browser

    async def __aenter__(self) -> Chromium:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self.socket is not None:
            await self.socket.close()
        await self.session.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    async def _read(self) -> None:
        assert self.socket is not None
        async for message in self.socket:
            data = json.loads(message.data)
            waiting = self._waiting.pop(data.get("id", -1), None)
            if waiting is not None and not waiting.done():
                if "error" in data:
                    waiting.set_exception(RuntimeError(f"DevTools: {data['error']}"))
                else:
                    waiting.set_result(data.get("result") or {})
            elif "method" in data:
                self._events.append(data)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        assert self.socket is not None
        call = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[call] = future
        await self.socket.send_json({"id": call, "method": method, "params": params})
        return dict(await asyncio.wait_for(future, 30))

    async def goto(self, url: str) -> None:
        self._events.clear()
        await self.send("Page.navigate", url=url)
        await self.wait_until_loaded()

    async def wait_until_loaded(self, timeout: float = 30.0) -> None:  # noqa: ASYNC109 (a polling deadline)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not any(e["method"] == "Page.loadEventFired" for e in self._events):
            if loop.time() > deadline:
                raise AssertionError(f"the page did not load within {timeout}s")
            await asyncio.sleep(0.05)
        self._events.clear()

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (a promise is awaited)."""
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"page script failed: {result['exceptionDetails']}")
        return (result.get("result") or {}).get("value")

    async def wait_for(self, expression: str, timeout: float = 30.0) -> Any:  # noqa: ASYNC109 (a polling deadline)
        """Poll `expression` until it is truthy; its value."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            value = await self.evaluate(expression)
            if value:
                return value
            if loop.time() > deadline:
                raise AssertionError(f"still false after {timeout}s: {expression}")
            await asyncio.sleep(0.05)

    async def press(self, key: str) -> None:
        """A key pressed and released, as a keyboard sends it (a printable key types its character)."""
        text = key if len(key) == 1 else ""
        await self.send("Input.dispatchKeyEvent", type="keyDown", key=key, text=text)
        await self.send("Input.dispatchKeyEvent", type="keyUp", key=key)

    async def type(self, text: str) -> None:
        await self.send("Input.insertText", text=text)


async def _port(profile: Path, process: subprocess.Popen[bytes]) -> int:
    """The DevTools port Chromium chose (it writes it to DevToolsActivePort in its profile)."""
    marker = profile / "DevToolsActivePort"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STARTUP_SECONDS
    while loop.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"chromium exited with {process.returncode} before it listened")
        if marker.exists() and marker.read_text().strip():
            return int(marker.read_text().splitlines()[0])
        await asyncio.sleep(0.05)
    raise RuntimeError(f"chromium did not listen within {STARTUP_SECONDS}s")
