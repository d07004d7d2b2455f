"""Teams under load: Bot Framework activities at a fixed concurrency against a local `candor serve`.

`candor serve` runs as its own process over the cached handbook home (benchmarks/handbook_kb.py,
offline pipeline) with `CANDOR_TEAMS=true` and no `MICROSOFT_APP_ID` (anonymous mode: no token
checked either way), answering through a fake Bot Connector (tests/fakes/bot_connector.py) that runs
in this process on its own thread: every activity carries the fake's `serviceUrl`. Each run posts N
personal-message activities (questions from sample/dev.yaml and sample/golden.yaml; each one a new
activity in a new 1:1 conversation of its own, ids never used before, since the event ledger
remembers them all) at concurrency C, plus a redelivery (the same activity posted again) of every
tenth, and measures:

- HTTP response latency: from sending the activity to its response status (the turn only claims the
  question in the ledger; the answer goes out afterwards);
- time to reply: from sending the activity to the answer (a "message" activity, not "typing")
  reaching the fake in that activity's conversation;
- exactly once: replies per activity (must be 1 for every activity, redelivered ones included),
  counted once every activity has a reply and no message has arrived for 5 s.

A warm-up of 10 activities precedes the runs; the figures are per run and the median over runs.

    python benchmarks/teams_load.py                       # 3 runs x 200 activities at concurrency 20
    python benchmarks/teams_load.py --events 100 --runs 1
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import sys
import time
import uuid
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
from bot.teams.cards import failure_activity
from tests.fakes.bot_connector import Call, ThreadedFakeConnector
from tests.fakes.teams_activities import personal_message

COMMAND = "HF_HUB_OFFLINE=1 python benchmarks/teams_load.py"
SETTLE_SECONDS = 5.0
"""After the last first reply, how long no message may arrive before the replies are counted."""
FAILURE_REPLIES = (failure_activity()["text"], "I couldn't take that question")
"""How the adapter's replies that are not answers begin (bot/teams/app.py, `TeamsAdapter.run`)."""


@dataclass
class Sent:
    conversation: str
    activity_id: str
    started: float
    responded: float
    status: int
    redelivery: bool


_clock = itertools.count()


def fresh_activity_id() -> str:
    """A Teams-style numeric activity id never used before (epoch microseconds, kept apart by a counter)."""
    return str(time.time_ns() // 1000 + next(_clock))


async def send(session: aiohttp.ClientSession, url: str, activity: dict[str, object], *, redelivery: bool) -> Sent:
    conversation = activity["conversation"]
    assert isinstance(conversation, dict)
    started = time.monotonic()
    async with session.post(url, json=activity) as response:
        await response.read()
        return Sent(
            str(conversation["id"]), str(activity["id"]), started, time.monotonic(), response.status, redelivery
        )


async def generate(url: str, service_url: str, texts: list[str], events: int, concurrency: int) -> list[Sent]:
    """The load itself: activities at a fixed concurrency, every tenth posted again as a redelivery."""
    gate = asyncio.Semaphore(concurrency)
    sent: list[Sent] = []

    async def one(i: int, session: aiohttp.ClientSession) -> None:
        who = uuid.uuid4().hex
        activity = personal_message(
            texts[i % len(texts)],
            conversation_id=f"a:load-{who}",
            user_id=f"29:load-{who}",
            activity_id=fresh_activity_id(),
            service_url=service_url,
        )
        async with gate:
            sent.append(await send(session, url, activity, redelivery=False))
            if i % 10 == 0:
                sent.append(await send(session, url, activity, redelivery=True))

    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(one(i, session) for i in range(events)))
    return sent


def generate_in_process(url: str, service_url: str, texts: list[str], events: int, concurrency: int) -> list[Sent]:
    return asyncio.run(generate(url, service_url, texts, events, concurrency))


def replies(fake: ThreadedFakeConnector) -> list[Call]:
    """The answer messages delivered to the fake (typing indicators left out), in arrival order."""
    return sorted((c for c in fake.calls if c.delivered and c.body.get("type") == "message"), key=lambda c: c.at)


async def run_once(
    url: str, fake: ThreadedFakeConnector, texts: list[str], events: int, concurrency: int
) -> dict[str, float]:
    """One run. The load comes from a process of its own, so that the fake Bot Connector (a thread of this
    process, busy with every reply and typing indicator) does not slow the client that measures the
    HTTP responses; both read the same system-wide monotonic clock."""
    fake.reset()
    sent = await in_own_process(generate_in_process, url, fake.service_url, texts, events, concurrency)
    originals = {s.conversation: s for s in sent if not s.redelivery}
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        calls = replies(fake)
        answered = {c.conversation_id for c in calls}
        if calls and set(originals) <= answered and time.monotonic() - calls[-1].at > SETTLE_SECONDS:
            break
        await asyncio.sleep(0.2)
    calls = replies(fake)
    per_activity = Counter(str(c.conversation_id) for c in calls)
    first_reply: dict[str, float] = {}
    for c in calls:
        first_reply.setdefault(str(c.conversation_id), c.at)
    responses = [1000 * (s.responded - s.started) for s in sent]
    to_reply = [1000 * (first_reply[conv] - s.started) for conv, s in originals.items() if conv in first_reply]
    redelivered = [s.conversation for s in sent if s.redelivery]
    start = min(s.started for s in sent)
    return {
        "requests": len(sent),
        "not_2xx": sum(not 200 <= s.status < 300 for s in sent),
        "response_p50": percentile(responses, 50),
        "response_p90": percentile(responses, 90),
        "response_p99": percentile(responses, 99),
        "response_max": max(responses),
        "reply_p50": percentile(to_reply, 50),
        "reply_p95": percentile(to_reply, 95),
        "reply_max": max(to_reply, default=float("nan")),
        "last_reply_s": max((first_reply[conv] for conv in originals if conv in first_reply), default=start) - start,
        "activities": len(originals),
        "replied_once": sum(per_activity[conv] == 1 for conv in originals),
        "unreplied": sum(per_activity[conv] == 0 for conv in originals),
        "replied_twice": sum(per_activity[conv] > 1 for conv in originals),
        "redelivered": len(redelivered),
        "redelivered_once": sum(per_activity[conv] == 1 for conv in redelivered),
        "stray": sum(n for conv, n in per_activity.items() if conv not in originals),
        "failure_replies": sum(str(c.body.get("text", "")).startswith(FAILURE_REPLIES) for c in calls),
        "typing": sum(1 for c in fake.calls if c.delivered and c.body.get("type") == "typing"),
    }


HEADER = (
    f"{'':<8}{'HTTP response, ms':^30}  {'time to reply, ms':^23}  {'last':>6}  {'requests':^13}  "
    f"{'replies per activity':^37}  {'other replies':^13}\n"
    f"{'':<8}{'p50':>7}{'p90':>7}{'p99':>8}{'max':>8}  {'p50':>7}{'p95':>8}{'max':>8}  {'reply':>6}  "
    f"{'sent':>5}{'not 2xx':>8}  {'exactly 1':>13}{'none':>6}{'2+':>4}{'redelivered 1':>14}"
    f"  {'failure':>7}{'stray':>6}  {'typing':>6}"
)


def row(label: str, r: dict[str, float]) -> str:
    def n(key: str) -> int:
        return int(r[key])

    once = f"{n('replied_once')}/{n('activities')}"
    redelivered_once = f"{n('redelivered_once')}/{n('redelivered')}"
    return (
        f"{label:<8}{r['response_p50']:>7.1f}{r['response_p90']:>7.1f}{r['response_p99']:>8.1f}"
        f"{r['response_max']:>8.1f}  {r['reply_p50']:>7.0f}{r['reply_p95']:>8.0f}{r['reply_max']:>8.0f}  "
        f"{r['last_reply_s']:>5.1f}s  {n('requests'):>5}{n('not_2xx'):>8}  "
        f"{once:>13}{n('unreplied'):>6}{n('replied_twice'):>4}{redelivered_once:>14}"
        f"  {n('failure_replies'):>7}{n('stray'):>6}  {n('typing'):>6}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200, help="activities per run")
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    load = os.getloadavg()[0]  # anything else busy on the machine skews every figure
    home = asyncio.run(prepare_handbook())
    texts = golden_questions()
    with ThreadedFakeConnector() as fake:
        env = {
            "CANDOR_TEAMS": "true",
            "CANDOR_ACCESS_POLICY": str(
                access_policy(home.parent / "teams-load-access.yaml", "teams", [handbook_kb.KB])
            ),
        }
        log = home.parent / "teams-load-serve.log"
        with candor_serve(home, env, log) as base:
            url = f"{base}/api/messages"
            asyncio.run(run_once(url, fake, texts, 10, 5))  # warm-up
            results = []
            print(HEADER, flush=True)
            for i in range(args.runs):
                result = asyncio.run(run_once(url, fake, texts, args.events, args.concurrency))
                print(row(f"run {i + 1}", result), flush=True)
                results.append(result)
    print(row("median", median_of_runs(results)))
    print(
        f"\n{args.events} personal-message activities (+ a redelivery of every tenth) at concurrency "
        f"{args.concurrency}, {args.runs} runs; answers made at once: {os.cpu_count()} "
        "(the worker's default, the CPU count). "
        f"Time to reply from sending the activity to its first answer message; 'last reply': from the run's "
        f"first request to its last first reply. Load average (1 min) at the start: {load:.2f}. "
        f"Server log: {log}"
    )
    print(f"reproduce: {COMMAND}")


if __name__ == "__main__":
    main()
