"""The review queue's own cost to a reviewer: how many keys a sample of 50 answers takes, and how
long the page makes them wait, in headless Chromium over the DevTools protocol (tests/browser.py).

Set-up: a fresh home with the sample handbook; every question of sample/golden.yaml and
sample/dev.yaml answered through the default offline pipeline (the sample: answers and refusals);
`candor serve`'s app with the dashboard on 127.0.0.1; a browser that logs in and labels the whole
queue by key, as fast as the page takes keys: `s` per delivered sentence, `c` per refusal.

Reported: items and keys (what a reviewer presses), the time from opening the page to the first item
(the queue's sample and its relaxed re-checks of the refusals), and the time from a key to "Saved"
(p50 / p95 / max): the page's share of a reviewer's time; reading is the rest.

    python benchmarks/review_queue.py [--sample 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiohttp import web

from bot.server import app_runner, build_app
from rag.config import load_settings
from rag.model.answers import Question
from rag.model.types import AccessScope
from rag.runtime import open_candor
from tests.browser import Chromium

REPO = Path(__file__).resolve().parents[1]
TOKEN = "benchmark-review-queue-token"


async def main(sample: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        async with open_candor(load_settings(home=home, database_url=None)) as candor:
            assert (await candor.ingest([REPO / "sample" / "handbook"], kb="handbook")).ok
            questions = [
                item["question"]
                for name in ("golden.yaml", "dev.yaml")
                for item in yaml.safe_load((REPO / "sample" / name).read_text())
            ]
            scope = AccessScope(frozenset(), frozenset({"handbook"}))
            routes: dict[str, int] = {}
            for text in questions:
                answer = await candor.answer(Question(text, scope=scope))
                routes[answer.route] = routes.get(answer.route, 0) + 1
            runner = app_runner(build_app(candor, reports=candor, admin_token=TOKEN), shutdown_timeout=1)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            port = runner.addresses[0][1]
            try:
                await label_everything(f"http://127.0.0.1:{port}", home, sample, len(questions), routes)
            finally:
                await runner.cleanup()


async def label_everything(base: str, home: Path, sample: int, asked: int, routes: dict[str, int]) -> None:
    async with await Chromium.start(home) as browser:
        await browser.goto(f"{base}/dashboard/review?since=1h&sample={sample}")
        await browser.evaluate(f"document.getElementById('token').value = {json.dumps(TOKEN)}")
        opened = time.perf_counter()
        await browser.evaluate("document.querySelector('form').submit()")
        await browser.wait_until_loaded()
        await browser.wait_for("document.querySelector('.item') !== null", timeout=300)
        first_item = time.perf_counter() - opened
        await browser.evaluate("localStorage.setItem('candor-labeller', 'benchmark')")
        await browser.evaluate("document.getElementById('labeller').value = 'benchmark'")
        progress = "document.getElementById('progress').textContent"
        items = await browser.evaluate(f"Number({progress}.split(' of ')[1].split(' ')[0])")
        waits: list[float] = []
        keys = refusals = 0
        while True:
            progress = await browser.evaluate("document.getElementById('progress').textContent")
            if f"{items} done" in progress:
                break
            kind = await browser.evaluate("document.querySelector('.item').classList[1]")
            key = "c" if kind == "abstention" else "s"
            before = keys
            started = time.perf_counter()
            await browser.press(key)
            keys += 1
            await browser.wait_for(f"document.getElementById('progress').textContent.includes('{before + 1} labels')")
            waits.append(time.perf_counter() - started)
            refusals += kind == "abstention"
    waits.sort()
    print(f"asked {asked} questions ({', '.join(f'{n} {r}' for r, n in sorted(routes.items()))}); sample {sample}")
    print(f"queue: {items} items ({items - refusals} answers, {refusals} refusals or unanswered parts), {keys} keys")
    print(f"first item shown {first_item:.2f} s after logging in (the sample and the refusals' re-checks)")
    p95 = waits[int(0.95 * (len(waits) - 1))]
    print(
        f"key to saved: p50 {statistics.median(waits) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, "
        f"max {waits[-1] * 1000:.0f} ms; all {keys} labels in {sum(waits):.1f} s of waiting"
    )
    print(f"keys per answer: {(keys - refusals) / max(1, items - refusals):.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=50)
    asyncio.run(main(parser.parse_args().sample))
