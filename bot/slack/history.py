"""A Slack thread's earlier turns as `Question.history`: pure, no I/O.

Two records of a thread meet here. The event ledger knows which messages were questions put to
Candor and what it answered (the answer's text as written, one turn however many messages carried
it). `conversations.replies` knows everything else said in the thread: people talking to each
other, the message that started it before anyone asked Candor, other bots. `thread_history`
merges them in the order they were posted, one turn per message, and bounds the result, so that
a thread of any length gives the pipeline at most `MAX_TURNS` turns of at most `MAX_TURN_CHARS`
characters, `MAX_HISTORY_CHARS` in all (the most recent kept). Slack markup stays as written: the
pipeline's understand step strips it from every turn it reads, as it does from the question.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from rag import MAX_HISTORY_TURNS, MAX_QUESTION_CHARS, ThreadTurn
from rag.model.answers import Turn

MAX_TURNS = MAX_HISTORY_TURNS
"""The pipeline reads no more turns than this; older ones are not passed."""
MAX_TURN_CHARS = MAX_QUESTION_CHARS
"""A turn is cut to the length of the longest question the pipeline takes."""
MAX_HISTORY_CHARS = 16_000
"""All turns together: a thread of long messages gives the latest that fit (four full-length ones)."""
_CONTENT_SUBTYPES = frozenset({"thread_broadcast", "file_share", "bot_message", "me_message"})
"""Message subtypes that carry something said (besides none); joins, topic changes and the
tombstone of a deleted thread parent do not."""

_ASKS = re.compile(
    r"^\s*(?:what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|could|will|would"
    r"|should|may|must|has|have)\b",
    re.IGNORECASE,
)


def reads_as_question(text: str) -> bool:
    """Whether a reply in a thread Candor answered, from someone other than the asker, is a follow-up
    question for it: a question mark, or a question word first ("how do I ...", "is there ...").
    The rule the answer path uses to tell what a message says from what it asks
    (`rag.pipeline.parts`); tests/unit/bot/test_slack_history.py keeps the two in agreement."""
    return "?" in text or bool(_ASKS.match(text))


_Moment = tuple[Decimal, int]
"""Where a turn sits: the ts it was posted at, then 0 for a message, 1 for an answer at the same ts."""


def thread_history(
    asked: Sequence[ThreadTurn],
    messages: Iterable[Mapping[str, Any]] | None,
    *,
    before: str,
    skip: Collection[str | None] = (),
) -> tuple[Turn, ...]:
    """The turns of a thread before the question posted at `before`, oldest first, bounded.

    `asked`: the ledger's questions of the thread with their answers (`skip`: the keys of the
    question being answered). `messages`: what `conversations.replies` returned, or None when it
    could not be read (then the ledger's turns alone, bounded the same way). A message the ledger
    holds as a question, or that carried one of its answers, is that ledger turn, not a second one;
    a message read twice (a parent repeated on every page) counts once; the question itself and
    anything posted after it are left out. A message with a `bot_id` is a bot's turn; a person's
    carries its author.
    """
    end = _moment(before)
    if end is None:
        return ()
    timeline: dict[str, tuple[_Moment, Turn]] = {}
    taken: set[str] = set()
    for turn in asked:
        ts = _question_ts(turn.key)
        at = _moment(ts)
        if turn.key in skip or not turn.question or ts is None or at is None or at >= end:
            continue
        timeline[ts] = ((at, 0), Turn(turn.question, author=turn.asker))
        posted = [str(t) for t in turn.reply.get("ts") or () if isinstance(t, str | int | float)]
        taken.update(posted)
        if turn.answer:
            answered = _moment(posted[0]) if posted else None
            place = (answered, 1) if answered is not None and at < answered < end else (at, 1)
            timeline[f"{ts}/answer"] = (place, Turn(turn.answer, from_bot=True))
    for message in messages or ():
        ts = str(message.get("ts") or "")
        at = _moment(ts)
        if at is None or at >= end or ts in timeline or ts in taken or not _says_something(message):
            continue
        if message.get("bot_id") or message.get("subtype") == "bot_message":
            timeline[ts] = ((at, 0), Turn(str(message["text"]), from_bot=True))
        else:
            timeline[ts] = ((at, 0), Turn(str(message["text"]), author=_str_or_none(message.get("user"))))
    ordered = [turn for _, turn in sorted(timeline.values(), key=lambda placed: placed[0])]
    return bounded(ordered)


def bounded(turns: Sequence[Turn]) -> tuple[Turn, ...]:
    """The latest `MAX_TURNS` turns, each cut to `MAX_TURN_CHARS`, as many of the latest as fit in
    `MAX_HISTORY_CHARS`; oldest first."""
    kept: list[Turn] = []
    total = 0
    for turn in reversed(turns[-MAX_TURNS:]):
        text = turn.text[:MAX_TURN_CHARS]
        if total + len(text) > MAX_HISTORY_CHARS:
            break
        total += len(text)
        kept.append(turn if text == turn.text else Turn(text, author=turn.author, from_bot=turn.from_bot))
    return tuple(reversed(kept))


def _says_something(message: Mapping[str, Any]) -> bool:
    subtype = message.get("subtype")
    text = message.get("text")
    return (subtype is None or subtype in _CONTENT_SUBTYPES) and isinstance(text, str) and bool(text.strip())


def _question_ts(key: str) -> str | None:
    """The question message's ts from its ledger key, `team/channel/ts` (an edit claimed under a key
    of its own, `team/channel/ts/edit/<edited ts>`, is the same message)."""
    parts = key.split("/")
    return parts[2] if len(parts) >= 3 else None


def _moment(ts: str | None) -> Decimal | None:
    """A Slack ts as a number ("1700000000.000100"), for ordering; None when it is not one."""
    if not ts:
        return None
    try:
        value = Decimal(ts)
    except InvalidOperation:
        return None
    return value if value.is_finite() else None


def _str_or_none(value: Any) -> str | None:
    return str(value) if value else None
