"""The README's picture: a real answer on the chat page, with its citations and a dated conflict.

    python scripts/screenshot.py            # writes docs/img/answer.png

In a fresh, temporary CANDOR_HOME (no other CANDOR_* variable is passed on; models offline), it
ingests the sample handbook with `candor ingest`, starts `candor serve` on 127.0.0.1 and a free
port, asks the chat page a question the handbook answers twice (24 days of annual leave in the
policy, 20 in the 2024 FAQ) in headless Chromium, waits for the answer with its sources and
conflict note, and saves the page from its header to the end of the answer as a PNG. Two touches
keep the picture the same on every machine: the 👍/👎 row is left out (its emoji need a font a
server may lack) and source paths are shown relative to the repository.

Chromium is driven over the DevTools protocol (JSON over a websocket, with aiohttp) as
`tests/browser.py` does; `make test` installs it (`scripts/ensure_chromium.sh`).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp

REPO = Path(__file__).resolve().parents[1]
HANDBOOK = REPO / "sample" / "handbook"
OUT = REPO / "docs" / "img" / "answer.png"
QUESTION = "How many days of annual leave do full-time employees get?"
CANDOR = Path(sys.executable).with_name("candor")
WIDTH = 1000
WAIT_SECONDS = 180.0
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
]
LOADED = "document.readyState === 'complete' && document.getElementById('ask-form') !== null"
ANSWERED = (
    "(() => { const a = document.querySelector('.message.from-bot:not(.pending) .answer');"
    " return a !== null && a.querySelector('.sources') !== null && a.querySelector('.conflict') !== null; })()"
)
FAILED = "document.querySelector('.message.error')?.textContent ?? ''"
PRESENT = (
    "document.activeElement?.blur(); scrollTo(0, 0);"  # no focus ring
    " document.querySelectorAll('.feedback').forEach((row) => row.remove());"  # its emoji need a font CI may lack
    " document.querySelectorAll('.source-document').forEach((path) =>"
    " path.textContent = path.textContent.replace({prefix}, ''));"  # the repository's place on this machine
)
CROP = (
    "(() => { const top = document.querySelector('header').getBoundingClientRect().top + scrollY;"
    " const reply = document.querySelector('.message.from-bot').getBoundingClientRect();"
    " return {top, bottom: reply.bottom + scrollY + 16}; })()"
)


class ScreenshotError(Exception):
    """A step did not happen; the message says which."""


def candor_env(home: Path) -> dict[str, str]:
    """The environment the commands run in: this one without CANDOR_*, with a fresh home, offline."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("CANDOR_")}
    return {**env, "CANDOR_HOME": str(home), "HF_HUB_OFFLINE": "1"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def ingest(env: dict[str, str]) -> None:
    done = subprocess.run(
        [str(CANDOR), "ingest", str(HANDBOOK), "--kb", "handbook"], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise ScreenshotError(f"candor ingest failed:\n{done.stdout}{done.stderr}")


@contextmanager
def serving(env: dict[str, str], log: Path) -> Iterator[str]:
    """`candor serve` on a free loopback port, until the block ends; its base URL once healthy."""
    url = f"http://127.0.0.1:{free_port()}"
    with log.open("wb") as output:
        server = subprocess.Popen(
            [str(CANDOR), "serve", "--host", "127.0.0.1", "--port", url.rsplit(":", 1)[1]],
            env=env,
            stdout=output,
            stderr=output,
        )
        try:
            deadline = time.monotonic() + WAIT_SECONDS
            while not healthy(url):
                if server.poll() is not None:
                    raise ScreenshotError(f"candor serve exited with {server.returncode}:\n{log.read_text()[-2000:]}")
                if time.monotonic() > deadline:
                    raise ScreenshotError(f"candor serve was not healthy within {WAIT_SECONDS:.0f}s")
                time.sleep(0.2)
            yield url
        finally:
            server.terminate()
            server.wait(30)


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=5) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def chromium(profile: Path) -> Iterator[int]:
    """Headless Chromium with a fresh profile, until the block ends; its DevTools port."""
    binary = shutil.which("chromium")
    if binary is None:
        raise ScreenshotError("chromium is not installed: scripts/ensure_chromium.sh installs it")
    profile.mkdir(parents=True)
    flags = [*CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"]
    browser = subprocess.Popen([binary, *flags], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        marker = profile / "DevToolsActivePort"  # Chromium writes the port it chose here
        deadline = time.monotonic() + 30
        while not (marker.exists() and marker.read_text().strip()):
            if browser.poll() is not None:
                raise ScreenshotError(f"chromium exited with {browser.returncode} before it listened")
            if time.monotonic() > deadline:
                raise ScreenshotError("chromium did not listen within 30s")
            time.sleep(0.05)
        yield int(marker.read_text().splitlines()[0])
    finally:
        browser.terminate()
        browser.wait(10)


class Page:
    """One Chromium tab over the DevTools protocol: commands answered in order, events ignored."""

    def __init__(self, socket_: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket_
        self.ids = itertools.count(1)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        call = next(self.ids)
        await self.socket.send_json({"id": call, "method": method, "params": params})
        async for message in self.socket:
            data = json.loads(message.data)
            if data.get("id") == call:
                if "error" in data:
                    raise ScreenshotError(f"DevTools {method}: {data['error']}")
                return dict(data.get("result") or {})
        raise ScreenshotError("Chromium closed the DevTools connection")

    async def evaluate(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise ScreenshotError(f"page script failed: {result['exceptionDetails']}")
        return (result.get("result") or {}).get("value")

    async def wait_for(self, expression: str, *, failed: str = "''") -> None:
        deadline = asyncio.get_running_loop().time() + WAIT_SECONDS
        while not await self.evaluate(expression):
            problem = await self.evaluate(failed)
            if problem:
                raise ScreenshotError(f"the page says: {problem}")
            if asyncio.get_running_loop().time() > deadline:
                raise ScreenshotError(f"still false after {WAIT_SECONDS:.0f}s: {expression}")
            await asyncio.sleep(0.2)


async def shoot(devtools: int, url: str, question: str) -> bytes:
    """The chat page after `question` is answered, as PNG bytes cropped to the header and the answer."""
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{devtools}/json/list") as response:
            tab = next(t for t in await response.json() if t.get("type") == "page")
        async with session.ws_connect(tab["webSocketDebuggerUrl"], max_msg_size=0) as socket_:
            page = Page(socket_)
            await page.send(
                "Emulation.setDeviceMetricsOverride", width=WIDTH, height=1400, deviceScaleFactor=1, mobile=False
            )
            await page.send("Emulation.setEmulatedMedia", features=[{"name": "prefers-color-scheme", "value": "light"}])
            await page.send("Page.navigate", url=url + "/")
            await page.wait_for(LOADED)
            await page.evaluate(
                f"document.getElementById('question').value = {json.dumps(question)};"
                " document.getElementById('ask-form').requestSubmit();"
            )
            await page.wait_for(ANSWERED, failed=FAILED)
            await page.evaluate(PRESENT.replace("{prefix}", json.dumps(f"{REPO}/")))
            await asyncio.sleep(0.5)  # the reply's smooth scroll, settled
            crop = await page.evaluate(CROP)
            clip = {"x": 0, "y": crop["top"], "width": WIDTH, "height": crop["bottom"] - crop["top"], "scale": 1}
            shot = await page.send("Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=True)
    return base64.b64decode(shot["data"])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="where to write the PNG (default: docs/img/answer.png)")
    parser.add_argument("--question", default=QUESTION, help="what to ask the sample handbook")
    args = parser.parse_args(argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="candor-screenshot-") as scratch:
        env = candor_env(Path(scratch) / "home")
        print(f"ingesting {HANDBOOK.relative_to(REPO)} into a fresh CANDOR_HOME ({env['CANDOR_HOME']})", flush=True)
        ingest(env)
        with serving(env, Path(scratch) / "serve.log") as url, chromium(Path(scratch) / "chromium") as devtools:
            print(f"candor serve on {url}; asking: {args.question}", flush=True)
            png = asyncio.run(shoot(devtools, url, args.question))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(png)
    print(f"wrote {args.out} ({len(png) // 1024} KB) in {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except ScreenshotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
