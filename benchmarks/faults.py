"""The fault suite: three replicas under load while Postgres restarts, a replica is SIGKILLed and the
writer goes away.

Set-up (tests/cluster.py): a standalone Postgres on a TCP port with the sample handbook ingested;
3 replicas of `candor serve`, each answering Slack (HTTP) and Teams; the fake Slack Web API and
Bot Connector; the fake OpenAI-compatible writer answering in 500 ms (`CANDOR_WRITER=openai:...`).

Load: 1,000 questions from sample/dev.yaml and sample/golden.yaml, Slack mentions and Teams
personal messages alternately, asked by 50 simulated users at once: each asks, waits for the
answer, votes 👍 on it (Slack's button, Teams' feedback invoke), and asks the next. A tenth of the
questions are delivered twice (Slack's retry, a duplicate Teams activity). The harness is the load
balancer too: a replica that refuses the connection is skipped, and Slack's retries of an event it
could not deliver are played (after 1, 5 and 15 s; Slack's own are ~immediately, 1 and 5 min).

Faults, at times from the start: Postgres restarted (`pg_ctl restart -m fast`); one replica
SIGKILLed while it answers and started again 5 s later; the writer's endpoint down for 30 s
(connections refused).

Reported: answered exactly once (count), answered twice or more, never answered; votes stored
(count in Postgres against votes cast); errors shown to users (count and wording); ack p99; time to
answer p50/p95; recovery time after each fault.

    python benchmarks/faults.py                          # the issue's run: 1000 questions, 50 users
    python benchmarks/faults.py --questions 200 --users 20 --postgres-at 10 --kill-at 25 --writer-at 40
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import CACHE, golden_questions, percentile
from bot.render.wording import FAILURE_NOTE
from tests.cluster import (
    Asked,
    Cluster,
    Deliverer,
    Voted,
    cluster,
    new_question,
    slack_answers,
    teams_answers,
)
from tests.fakes.bot_connector import Call as TeamsCall
from tests.fakes.slack_api import Call as SlackCall

COMMAND = "HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/faults.py"
ANSWER_WAIT = 240.0
"""Seconds a simulated user waits for an answer before counting it as never answered."""


@dataclass
class Fault:
    name: str
    started: float = 0.0
    ended: float = 0.0
    wall_ended: float = 0.0
    detail: str = ""


@dataclass
class Run:
    asked: list[Asked] = field(default_factory=list)
    votes: list[Voted] = field(default_factory=list)
    answered_at: dict[str, float] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    ack_ms: list[float] = field(default_factory=list)
    probes: int = 0
    """Questions asked after the load to see the writer recover (`probe_writer`)."""


class Watcher:
    """Follows the fakes' deliveries and wakes the user waiting for each answer."""

    def __init__(self, made: Cluster) -> None:
        self.made = made
        self.waiting: dict[str, asyncio.Future[SlackCall | TeamsCall]] = {}
        self.first: dict[str, float] = {}

    def expect(self, key: str) -> asyncio.Future[SlackCall | TeamsCall]:
        future: asyncio.Future[SlackCall | TeamsCall] = asyncio.get_running_loop().create_future()
        self.waiting[key] = future
        return future

    async def follow(self) -> None:
        while True:
            found: dict[str, list[SlackCall] | list[TeamsCall]] = {}
            found.update(slack_answers(self.made.slack))
            found.update(teams_answers(self.made.teams))
            for key, calls in found.items():
                future = self.waiting.get(key)
                if future is not None and not future.done():
                    self.first[key] = calls[0].at
                    future.set_result(calls[0])
            await asyncio.sleep(0.25)


def is_failure(answer: SlackCall | TeamsCall) -> bool:
    text = str(answer.params.get("text", "")) if isinstance(answer, SlackCall) else str(answer.body.get("text", ""))
    return text.startswith(FAILURE_NOTE[:40])


async def user(
    queue: asyncio.Queue[Asked], deliverer: Deliverer, watcher: Watcher, run: Run, redeliver_every: int
) -> None:
    while True:
        try:
            asked = queue.get_nowait()
        except asyncio.QueueEmpty:
            return
        run.asked.append(asked)
        waiting = watcher.expect(asked.key)
        await deliverer.ask(asked)
        if asked.acked is None:
            continue  # never delivered: the platform told the user (counted)
        if asked.n % redeliver_every == 0:
            await deliverer.redeliver(asked)
        try:
            answer = await asyncio.wait_for(waiting, ANSWER_WAIT)
        except TimeoutError:
            continue
        if is_failure(answer):
            continue  # nothing to vote on
        run.votes.append(await deliverer.vote(asked, answer))


async def faults(made: Cluster, run: Run, at: dict[str, float], started: float, writer_outage: float) -> None:
    async def wait_until(offset: float) -> None:
        await asyncio.sleep(max(0.0, started + offset - time.monotonic()))

    plan = sorted(at.items(), key=lambda item: item[1])
    for name, offset in plan:
        await wait_until(offset)
        fault = Fault(name, started=time.monotonic())
        if name == "postgres":
            away = await asyncio.to_thread(made.restart_postgres)
            fault.detail = f"stopped and started in {away:.1f} s"
        elif name == "kill":
            victim = random.Random(7).choice(made.replicas)
            await asyncio.to_thread(victim.kill)
            fault.detail = f"{victim.name} SIGKILLed"
            await asyncio.sleep(5)
            await asyncio.to_thread(victim.start)
            fault.detail += ", started again 5 s later"
        elif name == "writer":
            made.writer.down()
            await asyncio.sleep(writer_outage)
            made.writer.up()
            fault.detail = f"connections refused for {writer_outage:.0f} s"
        fault.ended, fault.wall_ended = time.monotonic(), time.time()
        run.faults.append(fault)
        print(
            f"  fault {name}: {fault.detail} (t={fault.started - started:.0f}-{fault.ended - started:.0f} s)",
            flush=True,
        )


async def drive(made: Cluster, args: argparse.Namespace) -> Run:
    texts = golden_questions()
    queue: asyncio.Queue[Asked] = asyncio.Queue()
    for n in range(args.questions):
        queue.put_nowait(new_question(n, "slack" if n % 2 == 0 else "teams", texts[n % len(texts)]))
    run = Run()
    watcher = Watcher(made)
    following = asyncio.create_task(watcher.follow())
    started = time.monotonic()
    at = {"postgres": args.postgres_at, "kill": args.kill_at, "writer": args.writer_at}
    injecting = asyncio.create_task(
        faults(made, run, {k: v for k, v in at.items() if v >= 0}, started, args.writer_outage)
    )
    async with Deliverer(made.replicas, made.teams.service_url) as deliverer:
        await asyncio.gather(*(user(queue, deliverer, watcher, run, args.redeliver_every) for _ in range(args.users)))
        run.ack_ms = deliverer.durations_ms
        if not injecting.done():
            print("  the questions ran out before the last fault was over: waiting for it", flush=True)
        await injecting
        print(f"  all {len(run.asked)} questions asked in {time.monotonic() - started:.0f} s", flush=True)
        if any(f.name == "writer" for f in run.faults):
            await probe_writer(made, deliverer, watcher, run, texts)
    print("  settling", flush=True)
    await settle(made, args.settle)
    following.cancel()
    run.answered_at = watcher.first
    return run


async def probe_writer(made: Cluster, deliverer: Deliverer, watcher: Watcher, run: Run, texts: list[str]) -> None:
    """After the load: one more question every 2 s (not counted with the others) until the model
    writes an answer again, so that the writer's recovery is measured even when the load ended
    first. Each replica's circuit breaker waits 30 s before it tries the endpoint again."""
    writer = next(f for f in run.faults if f.name == "writer")
    deadline = time.monotonic() + 120
    n = len(run.asked)
    while time.monotonic() < deadline and not model_wrote_since(made, writer.wall_ended):
        probe = new_question(n, "slack", texts[n % len(texts)])
        n += 1
        waiting = watcher.expect(probe.key)
        await deliverer.ask(probe)
        run.probes += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(waiting, 30)
        await asyncio.sleep(2)


def model_wrote_since(made: Cluster, wall: float) -> bool:
    return bool(
        made.count(
            "SELECT count(*) FROM traces t JOIN gate_outcomes g ON g.trace_id = t.id AND g.gate = 'writer' "
            f"WHERE g.passed AND t.created_at > to_timestamp({wall})"
        )
    )


async def settle(made: Cluster, quiet: float) -> None:
    """Until nothing has been delivered for `quiet` seconds (a late duplicate would show meanwhile)."""
    last = -1
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < quiet:
        now = len(made.slack.calls) + len(made.teams.calls)
        if now != last:
            last, quiet_since = now, time.monotonic()
        await asyncio.sleep(0.5)


def report(made: Cluster, run: Run) -> dict[str, object]:
    slack = slack_answers(made.slack)
    teams = teams_answers(made.teams)
    messages: dict[str, list[SlackCall] | list[TeamsCall]] = {**slack, **teams}
    per_question = Counter({a.key: len(messages.get(a.key, [])) for a in run.asked})
    undelivered = [a for a in run.asked if a.acked is None]
    failures = [a for a in run.asked if messages.get(a.key) and any(is_failure(m) for m in messages[a.key])]
    to_answer = [1000 * (run.answered_at[a.key] - a.sent) for a in run.asked if a.key in run.answered_at]
    cast = [v for v in run.votes if v.status == 200]
    vote_failures = [v for v in run.votes if v.status != 200]
    stored = made.count("SELECT count(*) FROM feedback WHERE rating = 1")
    whispers = Counter(str(c.params.get("text")) for c in made.slack.calls_to("chat.postEphemeral") if c.status == 200)
    recovery = recovery_times(made, run)
    return {
        "questions": len(run.asked),
        "answered_once": sum(n == 1 for n in per_question.values()),
        "answered_twice_or_more": sum(n > 1 for n in per_question.values()),
        "never_answered": sum(n == 0 for n in per_question.values()),
        "redelivered": sum(a.redelivered for a in run.asked),
        "redelivered_answered_once": sum(a.redelivered and per_question[a.key] == 1 for a in run.asked),
        "undelivered": len(undelivered),
        "failure_messages": len(failures),
        "votes_cast": len(cast),
        "votes_refused": len(vote_failures),
        "refused_vote_statuses": dict(Counter(f"{v.platform} {v.status}" for v in vote_failures)),
        "votes_stored": stored,
        "vote_whispers": dict(whispers),
        "ack_p50": percentile(run.ack_ms, 50),
        "ack_p99": percentile(run.ack_ms, 99),
        "answer_p50": percentile(to_answer, 50),
        "answer_p95": percentile(to_answer, 95),
        "delivery_statuses": dict(Counter(str(s) for a in run.asked for s in a.statuses)),
        "recovery": recovery,
        "traces": made.count("SELECT count(*) FROM traces"),
        "writer_probes_after_the_load": run.probes,
        "written_by_the_fallback": made.count(
            "SELECT count(*) FROM gate_outcomes WHERE gate = 'writer' AND NOT passed"
        ),
    }


def recovery_times(made: Cluster, run: Run) -> dict[str, str]:
    """Per fault, how long until things were normal again (see the docstring of each)."""
    out: dict[str, str] = {}
    for fault in run.faults:
        if fault.name == "postgres":
            # the first answer delivered, after the server was back, to a question asked after it was back
            after = [
                run.answered_at[a.key] - fault.ended
                for a in run.asked
                if a.sent >= fault.ended and a.key in run.answered_at
            ]
            out["postgres"] = (
                f"first answer to a new question {min(after):.1f} s after Postgres was back" if after else "none"
            )
        elif fault.name == "kill":
            # the questions asked before the kill and taken over from a replica: when the last was settled
            killed_at = fault.wall_ended - (fault.ended - fault.started)
            rows = made.sql(
                "SELECT count(*), extract(epoch FROM max(updated_at)) FROM platform_events "
                f"WHERE attempt > 1 AND created_at < to_timestamp({killed_at}) "
                f"AND updated_at > to_timestamp({killed_at})"
            )
            taken, last = int(rows[0][0]), float(rows[0][1]) if rows[0][1] else None
            out["kill"] = (
                f"{taken} questions taken over, the last settled {last - killed_at:.1f} s after the kill"
                if last
                else "no question taken over"
            )
        elif fault.name == "writer":
            rows = made.sql(
                "SELECT extract(epoch FROM min(t.created_at)) FROM traces t "
                "JOIN gate_outcomes g ON g.trace_id = t.id AND g.gate = 'writer' "
                f"WHERE g.passed AND t.created_at > to_timestamp({fault.wall_ended})"
            )
            first = float(rows[0][0]) if rows and rows[0][0] else None
            out["writer"] = (
                f"first answer written by the model {first - fault.wall_ended:.1f} s after the endpoint was back"
                if first
                else "no model-written answer after the endpoint came back"
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--users", type=int, default=50, help="questions in flight at once")
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--redeliver-every", type=int, default=10)
    parser.add_argument("--writer-delay", type=float, default=0.5)
    parser.add_argument("--writer-outage", type=float, default=30.0)
    parser.add_argument("--postgres-at", type=float, default=10.0, help="seconds from the start; -1: not at all")
    parser.add_argument("--kill-at", type=float, default=25.0)
    parser.add_argument("--writer-at", type=float, default=40.0)
    parser.add_argument("--lease", type=float, default=10.0, help="CANDOR_EVENT_LEASE_SECONDS")
    parser.add_argument("--settle", type=float, default=25.0, help="quiet seconds before counting")
    args = parser.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    folder = CACHE / "faults-last"  # kept until the next run, to read the replicas' logs
    shutil.rmtree(folder, ignore_errors=True)
    print(f"starting Postgres, the fakes and {args.replicas} replicas in {folder}", flush=True)
    with cluster(folder, replicas=args.replicas, writer_delay=args.writer_delay, lease_seconds=args.lease) as made:
        run = asyncio.run(drive(made, args))
        result = report(made, run)
        errors = [line for r in made.replicas for line in r.errors()]
    for key, value in result.items():
        print(f"{key}: {value}")
    print(f"ERROR lines in the replicas' logs: {len(errors)}")
    for line, n in Counter(e.split(" - ")[-1][:160] for e in errors).most_common(12):
        print(f"  {n} x {line}")
    print(f"reproduce: {COMMAND}")


if __name__ == "__main__":
    main()
