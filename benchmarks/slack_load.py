"""Slack under load: signed events at a fixed concurrency against a local `candor serve`.

`candor serve` runs as its own process over the cached handbook home (benchmarks/handbook_kb.py,
offline pipeline), in HTTP mode against a fake Slack Web API (tests/fakes/slack_api.py) that runs
in this process on its own thread. Each run posts N signed `app_mention` events (questions from
sample/dev.yaml and sample/golden.yaml, each a new message) at concurrency C, plus a retry
(`X-Slack-Retry-Num: 1`) of every tenth event, and measures:

- ack latency: from sending the HTTP request to its 200 (Slack wants it within 3 s; target p99 < 100 ms);
- time to answer: from sending the event to the answer's `chat.postMessage` reaching the fake;
- exactly once: answers per event (must be 1 for every event, retries included).

A warm-up of 10 events precedes the runs; the figures are per run and the median over runs.

    python benchmarks/slack_load.py                       # 3 runs x 200 events at concurrency 20
    python benchmarks/slack_load.py --events 100 --runs 1
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import handbook_kb
from benchmarks.common import (
    access_policy,
    candor_serve,
    golden_questions,
    in_own_process,
    median_of_runs,
    percentile,
    prepare_handbook,
)
from tests.fakes.slack_api import ThreadedFakeSlack
from tests.fakes.slack_events import app_mention, event_callback, json_body, signed_headers

SECRET = "load-test-secret"
COMMAND = "HF_HUB_OFFLINE=1 python benchmarks/slack_load.py"


@dataclass
class Sent:
    ts: str
    started: float
    acked: float
    status: int


def server_env(
    home: Path,
    fake: ThreadedFakeSlack,
    concurrency: int | None,
    answer_process: bool | None,
    db_pool_size: int | None = None,
) -> dict[str, str]:
    env = {
        "SLACK_BOT_TOKEN": "xoxb-load",
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": fake.api_url,
        "CANDOR_ACCESS_POLICY": str(access_policy(home.parent / "slack-load-access.yaml", "slack", [handbook_kb.KB])),
    }
    if concurrency is not None:
        env["CANDOR_ANSWER_CONCURRENCY"] = str(concurrency)
    if answer_process is not None:
        env["CANDOR_SLACK_ANSWER_PROCESS"] = "true" if answer_process else "false"
    if db_pool_size is not None:
        env["CANDOR_DB_POOL_SIZE"] = str(db_pool_size)
    return env


_clock = itertools.count()


def fresh_ts() -> str:
    """A message ts never used before, in this run or an earlier one (the ledger remembers them all)."""
    micros = time.time_ns() // 1000 + next(_clock)
    return f"{micros // 1_000_000}.{micros % 1_000_000:06d}"


async def send(session: aiohttp.ClientSession, url: str, text: str, *, retry_of: str | None = None) -> Sent:
    event = app_mention(text, channel="C1", ts=retry_of or fresh_ts())
    body = json_body(event_callback(event, event_id=f"Ev{event['ts']}"))
    headers = signed_headers(SECRET, body)
    if retry_of is not None:
        headers["X-Slack-Retry-Num"] = "1"
    started = time.monotonic()
    async with session.post(url, data=body, headers=headers) as response:
        await response.read()
        return Sent(str(event["ts"]), started, time.monotonic(), response.status)


async def generate(url: str, texts: list[str], events: int, concurrency: int) -> list[Sent]:
    """The load itself: events at a fixed concurrency, every tenth sent again as Slack's retry."""
    gate = asyncio.Semaphore(concurrency)
    sent: list[Sent] = []

    async def one(i: int, session: aiohttp.ClientSession) -> None:
        async with gate:
            first = await send(session, url, texts[i % len(texts)])
            sent.append(first)
            if i % 10 == 0:
                sent.append(await send(session, url, texts[i % len(texts)], retry_of=first.ts))

    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(one(i, session) for i in range(events)))
    return sent


def generate_in_process(url: str, texts: list[str], events: int, concurrency: int) -> list[Sent]:
    return asyncio.run(generate(url, texts, events, concurrency))


async def run_once(
    url: str, fake: ThreadedFakeSlack, texts: list[str], events: int, concurrency: int
) -> dict[str, float]:
    """One run. The load comes from a process of its own, so that the fake Slack (a thread of this
    process, busy with every answer's Web API calls) does not slow the client that measures the
    acknowledgements; both read the same system-wide monotonic clock."""
    fake.reset()
    sent = await in_own_process(generate_in_process, url, texts, events, concurrency)
    originals = {s.ts: s for s in sent}
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        answered = {c.params.get("thread_ts") for c in fake.calls_to("chat.postMessage") if c.status == 200}
        if set(originals) <= answered:
            break
        await asyncio.sleep(0.2)
    posts = [c for c in fake.calls_to("chat.postMessage") if c.status == 200]
    per_event = Counter(str(c.params.get("thread_ts")) for c in posts)
    first_post = {}
    for c in sorted(posts, key=lambda c: c.at):
        first_post.setdefault(str(c.params.get("thread_ts")), c.at)
    acks = [1000 * (s.acked - s.started) for s in sent]
    answers = [1000 * (first_post[ts] - s.started) for ts, s in originals.items() if ts in first_post]
    return {
        "requests": len(sent),
        "non_200": sum(s.status != 200 for s in sent),
        "ack_p50": percentile(acks, 50),
        "ack_p90": percentile(acks, 90),
        "ack_p99": percentile(acks, 99),
        "ack_max": max(acks),
        "answer_p50": percentile(answers, 50) if answers else float("nan"),
        "answer_p95": percentile(answers, 95) if answers else float("nan"),
        "events": len(originals),
        "answered_once": sum(per_event.get(ts, 0) == 1 for ts in originals),
        "unanswered": sum(per_event.get(ts, 0) == 0 for ts in originals),
        "answered_twice": sum(per_event.get(ts, 0) > 1 for ts in originals),
    }


def line(label: str, r: dict[str, float]) -> str:
    return (
        f"{label:<8} ack p50 {r['ack_p50']:.1f} ms, p90 {r['ack_p90']:.1f}, p99 {r['ack_p99']:.1f}, "
        f"max {r['ack_max']:.1f} ms | answer p50 {r['answer_p50']:.0f} ms, "
        f"p95 {r['answer_p95']:.0f} ms | {int(r['requests'])} requests ({int(r['non_200'])} not 200) | "
        f"answered exactly once {int(r['answered_once'])}/{int(r['events'])}, "
        f"never {int(r['unanswered'])}, twice or more {int(r['answered_twice'])}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--answer-concurrency", type=int, default=None, help="CANDOR_ANSWER_CONCURRENCY")
    parser.add_argument(
        "--answer-process",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="CANDOR_SLACK_ANSWER_PROCESS (default: the setting's default)",
    )
    parser.add_argument("--db-pool-size", type=int, default=None, help="CANDOR_DB_POOL_SIZE")
    args = parser.parse_args()

    home = asyncio.run(prepare_handbook())
    texts = golden_questions()
    with ThreadedFakeSlack() as fake:
        env = server_env(home, fake, args.answer_concurrency, args.answer_process, args.db_pool_size)
        with candor_serve(home, env, home.parent / "slack-load-serve.log") as base:
            url = f"{base}/slack/events"
            asyncio.run(run_once(url, fake, texts, 10, 5))  # warm-up
            results = []
            for i in range(args.runs):
                result = asyncio.run(run_once(url, fake, texts, args.events, args.concurrency))
                print(line(f"run {i + 1}", result), flush=True)
                results.append(result)
    print(line("median", median_of_runs(results)))
    answering = f"{args.answer_concurrency or f'{os.cpu_count()} (CPU count)'}" + (
        "" if args.answer_process is None else f", in a child process: {args.answer_process}"
    )
    print(
        f"\n{args.events} events (+ a retry of every tenth) at concurrency {args.concurrency}, {args.runs} runs; "
        f"answers made at once: {answering}"
    )
    print(f"reproduce: {COMMAND}")


if __name__ == "__main__":
    main()
