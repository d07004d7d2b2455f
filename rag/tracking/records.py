"""Questions, answers and feedback as plain JSON records: what is written to Postgres or spooled.

One shape for both paths, so that a trace replayed from the spool is written by exactly the code
that would have written it at the time. Dates are ISO strings, floats that are not finite become
null (Postgres' jsonb has no NaN), anything else JSON does not know becomes its `str`.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from rag.errors import TrackingError
from rag.model.answers import Answer, Feedback, Question
from rag.model.types import AccessScope, clean_text

FORMAT = 1
"""Version of the spooled record layout; bump it when the layout changes."""

RATINGS = {"up": 1, "down": -1}


def trace_record(
    question: Question,
    answer: Answer,
    *,
    config: Mapping[str, Any],
    models: Mapping[str, str],
    now: datetime,
) -> dict[str, Any]:
    """The trace row (with the answer's token and cost totals) and its child rows for one answer."""
    trace_id = parse_trace_id(answer.trace_id)
    if trace_id is None:
        raise TrackingError(f"trace id {answer.trace_id!r} is not a UUID")
    record = {
        "kind": "trace",
        "format": FORMAT,
        "trace": {
            "id": trace_id,
            "created_at": (answer.created_at or now).isoformat(),
            "platform": question.platform,
            "asker": question.asker,
            "conversation": question.conversation,
            "thread": question.thread,
            "question": question.text,
            "rewritten_question": answer.rewritten_question,
            "parts": list(answer.parts),
            "scope": _scope(question.scope),
            "route": answer.route,
            "answer_text": answer.text,
            "answer": answer.as_json(),
            "config": dict(config),
            "models": dict(models),
            "timings": dict(answer.timings_ms),
            "total_ms": answer.timings_ms.get("total"),
            "attempts": _attempts(answer),
            **_totals(answer),
        },
        "gates": [
            {
                "attempt": gate.attempt,
                "position": position,
                "gate": gate.gate,
                "passed": gate.passed,
                "score": gate.score,
                "details": gate.details,
            }
            for position, gate in enumerate(answer.gates)
        ],
        "sources": [
            {
                "n": source.n,
                "chunk_id": source.chunk_id,
                "document_id": source.document_id,
                "document": source.document,
                "title": source.title,
                "heading": source.heading,
                "effective_date": source.effective_date.isoformat() if source.effective_date else None,
                "score": source.score,
            }
            for source in answer.sources
        ],
        "dropped": [
            {
                "attempt": dropped.attempt,
                "text": dropped.text,
                "citations": list(dropped.citations),
                "score": dropped.score,
                "reasons": list(dropped.reasons),
                "stage": dropped.stage,
            }
            for dropped in answer.dropped
        ],
        "model_calls": [
            {
                "position": position,
                "purpose": call.purpose,
                "model": call.model,
                "prompt_tokens": call.prompt_tokens,
                "completion_tokens": call.completion_tokens,
                "ms": call.ms,
                "outcome": call.outcome,
                "mode": call.mode,
                "error": call.error,
                "cost": call.cost,
            }
            for position, call in enumerate(answer.model_calls)
        ],
    }
    return plain_dict(record)


def feedback_record(feedback: Feedback, trace_id: str, *, now: datetime) -> dict[str, Any]:
    """One vote; `at` orders votes, so that a late replay never overrides a newer vote."""
    return plain_dict(
        {
            "kind": "feedback",
            "format": FORMAT,
            "feedback": {
                "trace_id": trace_id,
                "rating": RATINGS[feedback.rating],
                "user_id": feedback.user,
                "platform": feedback.platform,
                "comment": feedback.comment,
                "at": now.isoformat(),
            },
        }
    )


def load_record(text: str) -> dict[str, Any]:
    """A spooled record, or ValueError when the text is not one (truncated, edited, foreign)."""
    record = json.loads(text)
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise ValueError("not a Candor spool record of this format")
    if record.get("kind") not in ("trace", "feedback"):
        raise ValueError(f"unknown record kind {record.get('kind')!r}")
    return record


def parse_trace_id(value: str) -> str | None:
    """The canonical form of a UUID string, or None when it is not one."""
    try:
        return str(uuid.UUID(value))
    except (ValueError, TypeError, AttributeError):
        return None


def dumps(value: Any) -> str:
    """JSON text for a jsonb column."""
    return json.dumps(plain(value), allow_nan=False)


def plain(value: Any) -> Any:
    """`value` as JSON data: dates in ISO form, non-finite floats as None, anything else unknown as str."""
    return _finite(json.loads(json.dumps(value, default=_default)))


def plain_dict(value: Mapping[str, Any]) -> dict[str, Any]:
    """`plain` for a mapping, typed as the dict it stays."""
    return {str(key): plain(item) for key, item in value.items()}


def _default(value: Any) -> Any:
    if isinstance(value, date | datetime):
        return value.isoformat()
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)


def _finite(value: Any) -> Any:
    """Non-finite floats as None, and strings as jsonb stores them (`clean_text`: no NUL)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


def _scope(scope: AccessScope | None) -> dict[str, Any] | None:
    if scope is None:
        return None
    kbs = None if scope.knowledge_bases is None else sorted(scope.knowledge_bases)
    return {"groups": sorted(scope.groups), "knowledge_bases": kbs}


def _totals(answer: Answer) -> dict[str, Any]:
    """Tokens in and out over the answer's model calls (0 without any) and their cost (0.0 without
    any; None when a call is unpriced, since a partial sum would understate it)."""
    cost = answer.cost
    return {
        "prompt_tokens": sum(call.prompt_tokens for call in answer.model_calls),
        "completion_tokens": sum(call.completion_tokens for call in answer.model_calls),
        "cost": None if cost is None else float(cost),
    }


def _attempts(answer: Answer) -> int | None:
    attempts = [gate.attempt for gate in answer.gates] + [dropped.attempt for dropped in answer.dropped]
    return max(attempts, default=None)
