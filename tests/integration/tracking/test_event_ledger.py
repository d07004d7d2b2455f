"""The event ledger on the real embedded Postgres: one claim per question across replicas, leases, takeovers.

Two replicas are two `EventLedger` objects with different owners over the session's engine; each
test works on a platform name of its own, so that `expired()` polls see only that test's rows.
Leases are short (0.3 s) and the tests sleep past them; the database's clock decides.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from rag.errors import ConfigError, StoreError
from rag.runtime import Candor
from rag.store.migrate import MIGRATIONS_DIR, upgrade_to_head
from rag.tracking.claims import Claim
from rag.tracking.events import EventLedger
from rag.tracking.metrics import Metrics

SHORT = 0.3
PAST_SHORT = 0.6
PAYLOAD = {"channel": "C1", "ts": "1700000000.000100", "text": "How many days of leave do I get?", "n": 1}


@pytest.fixture
def platform() -> str:
    return f"test-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def engine(candor: Candor) -> AsyncEngine:
    return candor.store.engine


@pytest.fixture
async def unreachable() -> AsyncIterator[AsyncEngine]:
    """An engine for a Postgres that is not there: port 1 on the loopback refuses at once."""
    engine = create_async_engine("postgresql+psycopg://x@127.0.0.1:1/none", connect_args={"connect_timeout": 2})
    yield engine
    await engine.dispose()


def new_key() -> str:
    return f"T1/C1/{uuid.uuid4().hex}"


def replicas(engine: AsyncEngine, lease: float = 60.0) -> tuple[EventLedger, EventLedger]:
    return EventLedger(engine, owner="replica-a", lease_seconds=lease), EventLedger(
        engine, owner="replica-b", lease_seconds=lease
    )


# --- claiming ------------------------------------------------------------------------------------


async def test_the_first_claim_wins_and_duplicates_are_recorded(engine: AsyncEngine, platform: str) -> None:
    a, b = replicas(engine)
    key = new_key()

    claim = await a.claim(
        platform, key, PAYLOAD, event_id="Ev1", question="Leave?", team="T1", conversation="C1", thread="t1", asker="U1"
    )

    assert claim is not None
    assert (claim.platform, claim.key, claim.owner, claim.attempt, claim.taken_over) == (
        platform,
        key,
        "replica-a",
        1,
        False,
    )
    assert claim.payload == PAYLOAD
    assert (claim.question, claim.team, claim.conversation, claim.thread, claim.asker) == (
        "Leave?",
        "T1",
        "C1",
        "t1",
        "U1",
    )
    assert claim.lease_until.tzinfo is not None
    assert await a.claim(platform, key, PAYLOAD, event_id="Ev1") is None, "a retry of the same event"
    assert await b.claim(platform, key, PAYLOAD, event_id="Ev2") is None, "another event for the same message"
    assert await b.claim(platform, key, PAYLOAD) is None, "an event without an id"
    assert await a.claim(platform, key, PAYLOAD, event_id="Ev2") is None

    row = await a.get(platform, key)
    assert row is not None
    assert row["event_ids"] == ["Ev1", "Ev2"]
    assert (row["status"], row["owner"], row["attempt"]) == ("claimed", "replica-a", 1)
    assert row["payload"] == PAYLOAD and row["reply"] == {} and row["trace_id"] is None
    assert datetime.fromisoformat(row["lease_until"]).tzinfo is not None


async def test_a_question_postgres_cannot_store_verbatim_is_claimed_cleaned(engine: AsyncEngine, platform: str) -> None:
    """A NUL or a lone surrogate (a malformed escape in a chat event) must not lose the event."""
    ledger, _ = replicas(engine)
    key = new_key()
    claim = await ledger.claim(platform, key, {"text": "Leave?\x00 \ud800"}, question="Leave?\x00 \ud800")
    assert claim is not None and claim.question == "Leave? \ufffd"
    assert await ledger.update_reply(platform, key, {"ts": "1"}, question="Edited\x00?")
    row = await ledger.get(platform, key)
    assert row is not None and row["question"] == "Edited?"


async def test_concurrent_claims_from_two_replicas_give_exactly_one_claim(engine: AsyncEngine, platform: str) -> None:
    a, b = replicas(engine)
    for _ in range(20):
        key = new_key()
        results = await asyncio.gather(
            a.claim(platform, key, PAYLOAD, event_id="Ev-mention"),
            b.claim(platform, key, PAYLOAD, event_id="Ev-message"),
        )
        winners = [claim for claim in results if claim is not None]
        assert len(winners) == 1, results
        assert winners[0].attempt == 1 and not winners[0].taken_over
        row = await a.get(platform, key)
        assert row is not None and row["owner"] == winners[0].owner
        assert sorted(row["event_ids"]) == ["Ev-mention", "Ev-message"]


async def test_concurrent_claims_from_one_replica_give_exactly_one_claim(engine: AsyncEngine, platform: str) -> None:
    """Slack's app_mention and message events for one post can reach the same replica at once."""
    a, _ = replicas(engine)
    for _ in range(20):
        key = new_key()
        results = await asyncio.gather(*(a.claim(platform, key, PAYLOAD, event_id=f"Ev{n}") for n in range(3)))
        assert len([claim for claim in results if claim is not None]) == 1, results


async def test_a_live_lease_is_not_taken_over(engine: AsyncEngine, platform: str) -> None:
    a, b = replicas(engine)
    key = new_key()
    assert await a.claim(platform, key, PAYLOAD) is not None

    assert await b.claim(platform, key, PAYLOAD, event_id="retry") is None
    assert await b.expired(platform) == []
    row = await b.get(platform, key)
    assert row is not None and (row["owner"], row["attempt"]) == ("replica-a", 1)


async def test_an_expired_lease_is_taken_over_by_the_next_claim(engine: AsyncEngine, platform: str) -> None:
    a, b = replicas(engine, lease=SHORT)
    takeovers: list[str] = []
    b.on_takeover = takeovers.append  # what /metrics counts (candor_ledger_takeovers_total)
    key = new_key()
    first = await a.claim(platform, key, PAYLOAD, event_id="Ev1", question="Leave?")
    assert first is not None
    await asyncio.sleep(PAST_SHORT)

    second = await b.claim(platform, key, {"ignored": True}, event_id="Ev1-retry")

    assert second is not None
    assert (second.owner, second.attempt, second.taken_over) == ("replica-b", 2, True)
    assert takeovers == [platform]
    assert second.payload == PAYLOAD, "the stored payload, not the retry's"
    assert second.question == "Leave?"
    assert second.lease_until > first.lease_until
    assert await a.claim(platform, key, PAYLOAD) is None, "the new lease is live"
    row = await a.get(platform, key)
    assert row is not None and row["event_ids"] == ["Ev1", "Ev1-retry"] and row["owner"] == "replica-b"


async def test_expired_takes_over_claims_whose_lease_ran_out(engine: AsyncEngine, platform: str) -> None:
    a, b = replicas(engine, lease=SHORT)
    keys = [new_key() for _ in range(3)]
    for key in keys:
        assert await a.claim(platform, key, PAYLOAD, question=key) is not None
    live = new_key()
    assert await EventLedger(engine, owner="replica-c").claim(platform, live, PAYLOAD) is not None
    await asyncio.sleep(PAST_SHORT)

    taken = await b.expired(platform, limit=2)
    rest = await b.expired(platform, limit=10)

    assert len(taken) == 2 and len(rest) == 1
    assert sorted(claim.key for claim in taken + rest) == sorted(keys)
    for claim in taken + rest:
        assert (claim.owner, claim.attempt, claim.taken_over) == ("replica-b", 2, True)
        assert claim.payload == PAYLOAD and claim.question == claim.key
    assert await b.expired(platform) == []
    assert await b.expired(f"other-{platform}") == []
    assert await b.expired(platform, limit=0) == []


async def test_two_replicas_polling_at_once_never_take_the_same_claim(engine: AsyncEngine, platform: str) -> None:
    a, b = replicas(engine, lease=SHORT)
    c = EventLedger(engine, owner="replica-c", lease_seconds=SHORT)
    for _ in range(5):
        keys = {new_key() for _ in range(10)}
        for key in keys:
            assert await c.claim(platform, key, PAYLOAD) is not None
        await asyncio.sleep(PAST_SHORT)

        by_a, by_b = await asyncio.gather(a.expired(platform, limit=6), b.expired(platform, limit=6))

        taken_a, taken_b = {claim.key for claim in by_a}, {claim.key for claim in by_b}
        assert not taken_a & taken_b
        assert taken_a | taken_b == keys
        for claim in by_a + by_b:
            assert await (a if claim.owner == "replica-a" else b).complete(claim)


# --- holding a claim ----------------------------------------------------------------------------


async def test_renew_extends_the_lease_and_fails_after_a_takeover(engine: AsyncEngine, platform: str) -> None:
    a, b = replicas(engine, lease=SHORT)
    key = new_key()
    claim = await a.claim(platform, key, PAYLOAD)
    assert claim is not None

    for _ in range(3):  # renewed past the first lease: nobody can take it over
        await asyncio.sleep(SHORT / 2)
        assert await a.renew(claim)
    assert await b.claim(platform, key, PAYLOAD) is None
    row = await a.get(platform, key)
    assert row is not None
    assert datetime.fromisoformat(row["lease_until"]) > claim.lease_until + timedelta(seconds=SHORT / 2)

    await asyncio.sleep(PAST_SHORT)
    assert await b.claim(platform, key, PAYLOAD) is not None
    assert not await a.renew(claim)


async def test_complete_by_the_old_owner_after_a_takeover_is_refused(engine: AsyncEngine, platform: str) -> None:
    a, b = replicas(engine, lease=SHORT)
    key = new_key()
    old = await a.claim(platform, key, PAYLOAD)
    assert old is not None
    await asyncio.sleep(PAST_SHORT)
    new = await b.claim(platform, key, PAYLOAD)
    assert new is not None

    assert not await a.complete(old, reply={"ts": "late"}, trace_id=str(uuid.uuid4()))

    row = await a.get(platform, key)
    assert row is not None
    assert (row["status"], row["owner"], row["attempt"], row["reply"]) == ("claimed", "replica-b", 2, {})
    trace_id = str(uuid.uuid4())
    assert await b.complete(new, trace_id=trace_id, reply={"channel": "C1", "ts": "1.2", "answer_text": "24 days."})
    row = await a.get(platform, key)
    assert row is not None
    assert (row["status"], row["trace_id"]) == ("answered", trace_id)
    assert row["reply"] == {"channel": "C1", "ts": "1.2", "answer_text": "24 days."}
    assert not await b.complete(new), "already answered"


async def test_the_same_owner_holds_a_claim_by_its_attempt(engine: AsyncEngine, platform: str) -> None:
    """A replica that took its own expired question over again cannot complete it with the stale claim."""
    a, _ = replicas(engine, lease=SHORT)
    key = new_key()
    stale = await a.claim(platform, key, PAYLOAD)
    assert stale is not None
    await asyncio.sleep(PAST_SHORT)
    fresh = await a.claim(platform, key, PAYLOAD)
    assert fresh is not None and fresh.attempt == 2 and fresh.taken_over

    assert not await a.renew(stale)
    assert not await a.complete(stale)
    assert await a.complete(fresh)


async def test_answered_and_failed_questions_are_never_claimed_again(engine: AsyncEngine, platform: str) -> None:
    a, b = replicas(engine, lease=SHORT)
    answered, failed = new_key(), new_key()
    for key in (answered, failed):
        claim = await a.claim(platform, key, PAYLOAD, event_id="Ev1")
        assert claim is not None
        assert await a.complete(claim, failed=key == failed, error="model timed out" if key == failed else None)
    await asyncio.sleep(PAST_SHORT)

    for key in (answered, failed):
        assert await b.claim(platform, key, PAYLOAD, event_id="Ev-late") is None
    assert await b.expired(platform) == []

    row = await b.get(platform, failed)
    assert row is not None
    assert (row["status"], row["error"], row["event_ids"]) == ("failed", "model timed out", ["Ev1", "Ev-late"])
    row = await b.get(platform, answered)
    assert row is not None and row["status"] == "answered" and row["error"] is None


async def test_release_lets_another_replica_take_over_at_once(engine: AsyncEngine, platform: str) -> None:
    a, b = replicas(engine, lease=60.0)
    key, polled = new_key(), new_key()
    claim = await a.claim(platform, key, PAYLOAD)
    other = await a.claim(platform, polled, PAYLOAD)
    assert claim is not None and other is not None

    await a.release(claim)
    await a.release(other)

    taken = await b.claim(platform, key, PAYLOAD)
    assert taken is not None and (taken.owner, taken.attempt, taken.taken_over) == ("replica-b", 2, True)
    assert [c.key for c in await b.expired(platform)] == [polled]
    assert not await a.complete(claim)
    await a.release(claim)  # no longer its own: nothing happens
    assert await EventLedger(engine, owner="replica-c").claim(platform, key, PAYLOAD) is None


# --- reading, edits and deletions ---------------------------------------------------------------


async def test_get_update_reply_and_mark_deleted(engine: AsyncEngine, platform: str) -> None:
    a, b = replicas(engine)
    key = new_key()
    assert await a.get(platform, key) is None
    assert await a.mark_deleted(platform, key) is None
    assert not await a.update_reply(platform, key, {"ts": "1"})
    claim = await a.claim(platform, key, PAYLOAD, question="How many days?")
    assert claim is not None
    first_trace, second_trace = str(uuid.uuid4()), str(uuid.uuid4())
    assert await a.complete(claim, trace_id=first_trace, reply={"channel": "C1", "ts": "1.5", "answer_text": "20."})

    assert await b.update_reply(
        platform, key, {"answer_text": "24.", "edited": True}, trace_id=second_trace, question="How many days now?"
    )
    row = await b.get(platform, key)
    assert row is not None
    assert row["reply"] == {
        "channel": "C1",
        "ts": "1.5",
        "answer_text": "24.",
        "edited": True,
        "earlier_traces": [first_trace],  # the answer the edit replaced: a deletion removes its text too
    }
    assert (row["trace_id"], row["question"], row["status"]) == (second_trace, "How many days now?", "answered")
    assert await b.update_reply(platform, key, {"n": 2})
    row = await b.get(platform, key)
    assert row is not None and row["trace_id"] == second_trace, "kept when no new trace id is given"

    deleted = await b.mark_deleted(platform, key)

    assert deleted is not None
    assert deleted["status"] == "deleted" and deleted["reply"]["ts"] == "1.5" and deleted["reply"]["n"] == 2
    assert deleted["trace_ids"] == sorted([first_trace, second_trace])
    assert not await b.update_reply(platform, key, {"answer_text": "too late"})
    assert await b.claim(platform, key, PAYLOAD) is None
    row = await b.get(platform, key)
    assert row is not None and row["status"] == "deleted"
    # deleted where it was asked: its text is gone from the ledger, where its answers were posted stays
    assert row["question"] is None and row["asker"] is None and row["payload"] == {}
    assert "answer_text" not in row["reply"] and row["reply"]["ts"] == "1.5"


async def test_deleting_a_question_being_answered_refuses_its_completion(engine: AsyncEngine, platform: str) -> None:
    a, b = replicas(engine, lease=SHORT)
    key = new_key()
    claim = await a.claim(platform, key, PAYLOAD)
    assert claim is not None

    assert await b.mark_deleted(platform, key) is not None

    assert not await a.renew(claim)
    assert not await a.complete(claim, reply={"ts": "9.9"})
    await asyncio.sleep(PAST_SHORT)
    assert await b.expired(platform) == []


EDITED = {**PAYLOAD, "text": "How many days of leave do part-timers get?"}


async def test_an_edit_of_an_answered_question_reopens_it_for_the_replica_the_edit_reached(
    engine: AsyncEngine, platform: str
) -> None:
    a, b = replicas(engine)
    key = new_key()
    assert await b.revise(platform, key, EDITED, question="Part-timers?", revision="1.2") is None  # unknown
    claim = await a.claim(platform, key, PAYLOAD, question="Leave?", thread="t1")
    assert claim is not None and claim.revision is None and claim.reply == {}
    first_trace, second_trace = str(uuid.uuid4()), str(uuid.uuid4())
    assert await a.complete(claim, trace_id=first_trace, reply={"ts": ["1.5"], "answer_text": "20."})
    assert await b.revise(platform, key, {**PAYLOAD, "n": 2}, question="Leave?", revision="1.2") is None  # same text

    edit = await b.revise(platform, key, EDITED, question="Part-timers?", revision="1.3", event_id="EvEdit")

    assert edit is not None and (edit.key, edit.owner, edit.attempt, edit.taken_over) == (key, "replica-b", 1, False)
    assert edit.payload == EDITED and edit.revision == "1.3" and edit.question == "Part-timers?"
    assert edit.reply["ts"] == ["1.5"]  # the answer to replace
    row = await a.get(platform, key)
    assert row is not None and (row["status"], row["question"], row["thread"]) == ("claimed", "Part-timers?", "t1")
    assert "EvEdit" in row["event_ids"]
    assert await a.revise(platform, key, EDITED, question="Part-timers?", revision="1.4") is None  # a redelivery
    assert await a.revise(platform, key, PAYLOAD, question="Leave?", revision="1.1") is None  # older than the edit

    done = await b.complete(edit, trace_id=second_trace, reply={"ts": ["1.5"], "answer_text": "12."})

    assert done is not None and done.revision is None
    row = await a.get(platform, key)
    assert row is not None and (row["status"], str(row["trace_id"])) == ("answered", second_trace)
    assert row["reply"]["earlier_traces"] == [first_trace]  # a deletion removes the first answer's text too
    assert (await a.mark_deleted(platform, key) or {})["trace_ids"] == sorted([first_trace, second_trace])


async def test_edits_while_a_question_is_answered_wait_and_the_newest_goes_to_its_owner(
    engine: AsyncEngine, platform: str
) -> None:
    a, b = replicas(engine)
    key = new_key()
    claim = await a.claim(platform, key, PAYLOAD, question="Leave?")
    assert claim is not None
    newest = {**PAYLOAD, "text": "newest"}
    assert await b.revise(platform, key, EDITED, question="Part-timers?", revision="1.2") is None  # waits
    assert await b.revise(platform, key, newest, question="Interns?", revision="1.4") is None  # replaces it
    assert await b.revise(platform, key, EDITED, question="Part-timers?", revision="1.3") is None  # older: dropped
    assert await b.revise(platform, key, newest, question="Interns?", revision="1.5") is None  # same text
    row = await b.get(platform, key)
    assert row is not None and (row["status"], row["question"], row["owner"]) == ("claimed", "Leave?", "replica-a")
    first_trace = str(uuid.uuid4())

    done = await a.complete(claim, trace_id=first_trace, reply={"ts": ["1.5"], "answer_text": "20."})

    assert done is not None and done.revision is not None
    edit = done.revision  # still this owner's, under the same hold, now for the newest text
    assert (edit.owner, edit.attempt, edit.payload, edit.question, edit.revision) == (
        "replica-a",
        claim.attempt,
        newest,
        "Interns?",
        "1.4",
    )
    assert edit.reply["ts"] == ["1.5"]  # the answer just posted, to be replaced
    assert await a.renew(claim), "the worker's renewal of the original claim keeps holding it"
    row = await b.get(platform, key)
    assert row is not None and (row["status"], row["question"], str(row["trace_id"])) == (
        "claimed",
        "Interns?",
        first_trace,
    )
    assert await b.claim(platform, key, PAYLOAD) is None  # held
    done = await a.complete(edit, trace_id=str(uuid.uuid4()), reply={"answer_text": "5."})
    assert done is not None and done.revision is None
    row = await b.get(platform, key)
    assert row is not None and row["status"] == "answered" and row["reply"]["earlier_traces"] == [first_trace]


async def test_a_waiting_edit_back_to_the_text_being_answered_is_not_answered_again(
    engine: AsyncEngine, platform: str
) -> None:
    a, _ = replicas(engine)
    key = new_key()
    claim = await a.claim(platform, key, PAYLOAD, question="Leave?")
    assert claim is not None
    assert await a.revise(platform, key, EDITED, question="Part-timers?", revision="1.2") is None
    assert await a.revise(platform, key, PAYLOAD, question="Leave?", revision="1.3") is None

    done = await a.complete(claim)

    assert done is not None and done.revision is None
    row = await a.get(platform, key)
    assert row is not None and row["status"] == "answered" and "pending" not in row["payload"]


async def test_a_waiting_edit_goes_with_its_question_when_the_owner_dies_or_it_is_deleted(
    engine: AsyncEngine, platform: str
) -> None:
    a, b = replicas(engine, lease=SHORT)
    key = new_key()
    assert await a.claim(platform, key, PAYLOAD, question="Leave?") is not None
    assert await b.revise(platform, key, EDITED, question="Part-timers?", revision="1.2") is None
    await asyncio.sleep(PAST_SHORT)  # replica a died while answering

    (taken,) = await b.expired(platform)
    assert taken.payload == PAYLOAD and taken.revision is None  # what a was answering, then the edit
    done = await b.complete(taken, reply={"ts": ["2.1"]})
    assert done is not None and done.revision is not None and done.revision.payload == EDITED

    deleted = await b.mark_deleted(platform, key)  # deleted in Slack while the edit is answered
    assert deleted is not None and deleted["payload"] == {}
    assert await b.complete(done.revision) is None
    assert await b.revise(platform, key, EDITED, question="Again?", revision="1.9") is None


async def test_an_edit_recorded_without_holding_it_is_taken_by_the_next_poll(
    engine: AsyncEngine, platform: str
) -> None:
    a, b = replicas(engine)
    key = new_key()
    claim = await a.claim(platform, key, PAYLOAD, question="Leave?")
    assert claim is not None and await a.complete(claim, reply={"ts": ["1.5"]})
    # a process that only acknowledges events (CANDOR_SLACK_ANSWER_PROCESS) leaves the edit for the poll
    assert await a.revise(platform, key, EDITED, question="Part-timers?", revision="1.2", hold=False) is not None

    (taken,) = await b.expired(platform)

    assert (taken.key, taken.owner, taken.payload, taken.revision) == (key, "replica-b", EDITED, "1.2")
    assert taken.reply["ts"] == ["1.5"]


async def test_an_edited_question_being_answered_counts_its_age_from_the_edit(
    engine: AsyncEngine, platform: str
) -> None:
    a, _ = replicas(engine)
    key = new_key()
    claim = await a.claim(platform, key, PAYLOAD, question="Leave?")
    assert claim is not None and await a.complete(claim)
    async with engine.begin() as connection:  # asked a day ago
        await connection.execute(
            text("UPDATE platform_events SET created_at = now() - interval '1 day' WHERE platform = :p"),
            {"p": platform},
        )
    assert await a.revise(platform, key, EDITED, question="Part-timers?", revision="1.2") is not None

    metrics = Metrics()
    await metrics.refresh_ledger(engine)

    age = metrics.registry.get_sample_value("candor_ledger_oldest_claim_seconds", {"platform": platform})
    assert age is not None and 0 <= age < 60


async def test_thread_turns_are_the_threads_questions_oldest_first(engine: AsyncEngine, platform: str) -> None:
    a, _ = replicas(engine)
    thread = uuid.uuid4().hex

    async def ask(question: str, *, team: str | None = "T1", in_thread: str = thread) -> Claim:
        claim = await a.claim(
            platform, new_key(), PAYLOAD, question=question, team=team, conversation="C1", thread=in_thread, asker="U1"
        )
        assert claim is not None
        return claim

    await a.complete(await ask("first?"), reply={"answer_text": "one"})
    await a.complete(await ask("second?"), failed=True, error="boom")
    deleted = await ask("deleted?")
    await a.mark_deleted(platform, deleted.key)
    await ask("elsewhere?", in_thread="another")
    await ask("other team?", team="T2")
    await a.complete(await ask("third?"), reply={"channel": "C1", "ts": "3"})
    await ask("fourth?")

    turns = await a.thread_turns(platform, "T1", "C1", thread)

    assert [(t.question, t.answer, t.status) for t in turns] == [
        ("first?", "one", "answered"),
        ("second?", None, "failed"),
        ("third?", None, "answered"),
        ("fourth?", None, "claimed"),
    ]
    assert all(t.asker == "U1" and t.created_at.tzinfo is not None for t in turns)
    assert [t.created_at for t in turns] == sorted(t.created_at for t in turns)
    assert [t.question for t in await a.thread_turns(platform, "T1", "C1", thread, limit=2)] == ["third?", "fourth?"]
    assert await a.thread_turns(platform, "T1", "C1", thread, limit=0) == []
    assert await a.thread_turns(platform, None, "C1", thread) == []
    no_team = await ask("no team?", team=None)
    assert [t.key for t in await a.thread_turns(platform, None, "C1", thread)] == [no_team.key]


# --- settings and failures ----------------------------------------------------------------------


def test_settings_are_checked(engine: AsyncEngine) -> None:
    for lease in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ConfigError, match="lease_seconds"):
            EventLedger(engine, lease_seconds=lease)
    with pytest.raises(ConfigError, match="owner"):
        EventLedger(engine, owner=" ")
    owners = {EventLedger(engine).owner for _ in range(3)}
    assert len(owners) == 3 and all(owner.count(":") == 2 for owner in owners)


async def test_a_trace_id_that_is_not_a_uuid_is_refused(engine: AsyncEngine, platform: str) -> None:
    a, _ = replicas(engine)
    claim = await a.claim(platform, new_key(), PAYLOAD)
    assert claim is not None
    with pytest.raises(StoreError, match="not a UUID"):
        await a.complete(claim, trace_id="not-a-trace")
    assert await a.complete(claim)


async def test_an_unreachable_database_raises_store_error(unreachable: AsyncEngine) -> None:
    ledger = EventLedger(unreachable, owner="replica-a")
    claim = Claim("slack", "T1/C1/1", "replica-a", 1, {}, datetime.fromisoformat("2026-12-01T00:00:00+00:00"), False)
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: ledger.claim("slack", "T1/C1/1", PAYLOAD, event_id="Ev1"),
        lambda: ledger.renew(claim),
        lambda: ledger.complete(claim),
        lambda: ledger.release(claim),
        lambda: ledger.expired("slack"),
        lambda: ledger.get("slack", "T1/C1/1"),
        lambda: ledger.update_reply("slack", "T1/C1/1", {}),
        lambda: ledger.mark_deleted("slack", "T1/C1/1"),
        lambda: ledger.thread_turns("slack", "T1", "C1", "1"),
    ]
    for call in calls:
        with pytest.raises(StoreError, match=r"could not .*slack") as raised:
            await call()
        assert raised.value.__cause__ is not None


# --- the migration -------------------------------------------------------------------------------


async def test_the_migration_applies_and_reverts_on_an_empty_database(candor: Candor) -> None:
    """On a database of its own on the same server, so the session's tables are not touched."""
    name = f"ledger_{uuid.uuid4().hex[:10]}"
    admin = candor.store.engine.execution_options(isolation_level="AUTOCOMMIT")
    async with admin.connect() as conn:
        await conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = candor.store.engine.url.set(database=name).render_as_string(hide_password=False)
    try:
        await asyncio.to_thread(upgrade_to_head, url, embedder="minilm", embedding_dimension=384)
        assert "platform_events" in await tables(url)
        await asyncio.to_thread(downgrade, url, "0004")
        remaining = await tables(url)
        assert "platform_events" not in remaining and "traces" in remaining
        await asyncio.to_thread(upgrade_to_head, url, embedder="minilm", embedding_dimension=384)
        assert "platform_events" in await tables(url)
    finally:
        async with admin.connect() as conn:
            await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def tables(url: str) -> set[str]:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))
            return {row[0] for row in rows}
    finally:
        await engine.dispose()


def downgrade(url: str, revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, revision)
    finally:
        engine.dispose()


async def test_a_row_is_found_by_where_its_answer_went(engine: AsyncEngine, platform: str) -> None:
    ledger = EventLedger(engine, lease_seconds=60)
    key = new_key()
    claim = await ledger.claim(platform, key, PAYLOAD)
    assert claim is not None
    trace_id = str(uuid.uuid4())
    assert await ledger.complete(claim, trace_id=trace_id, reply={"activity_ids": ["1:abc", "1:def"]})
    found = await ledger.by_reply(platform, {"activity_ids": ["1:def"]})
    assert found is not None and found["key"] == key and str(found["trace_id"]) == trace_id
    assert await ledger.by_reply(platform, {"activity_ids": ["1:zzz"]}) is None
    assert await ledger.by_reply(f"{platform}-other", {"activity_ids": ["1:abc"]}) is None


# --- giving up ------------------------------------------------------------------------------------


async def test_a_question_no_owner_ever_finishes_is_given_up_after_max_attempts(
    engine: AsyncEngine, platform: str
) -> None:
    crashing = EventLedger(engine, owner="replica-a", lease_seconds=SHORT, max_attempts=3)
    key = new_key()
    assert (await crashing.claim(platform, key, PAYLOAD)).attempt == 1  # type: ignore[union-attr]
    await asyncio.sleep(PAST_SHORT)
    (second,) = await crashing.expired(platform)
    await asyncio.sleep(PAST_SHORT)
    assert (await crashing.claim(platform, key, PAYLOAD)).attempt == 3  # type: ignore[union-attr]  # a redelivery
    await asyncio.sleep(PAST_SHORT)

    assert await crashing.claim(platform, key, PAYLOAD) is None  # three owners stopped: not a fourth
    (given_up,) = await crashing.expired(platform)  # handed back once, for this replica to tell the asker
    assert given_up.given_up and given_up.key == key and given_up.payload == PAYLOAD
    assert await crashing.expired(platform) == []
    row = await crashing.get(platform, key)
    assert row is not None and row["status"] == "failed" and row["attempt"] == 3
    assert "given up after 3 attempts" in row["error"]
    assert second.attempt == 2


def test_max_attempts_must_be_positive(engine: AsyncEngine) -> None:
    with pytest.raises(ConfigError, match="max_attempts"):
        EventLedger(engine, max_attempts=0)
