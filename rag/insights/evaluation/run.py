"""`candor eval`: ask every golden question through the full pipeline and score what came back.

Scoring is pure (`score_question`, `summarise`), so it is tested without a database. Every rate
comes with its counts, because on forty questions a rate alone misleads. Restricted questions are
asked twice: once with their access group (scored like any other), once without (it must abstain
and cite nothing from the restricted document: a leak otherwise). What the language models cost
counts every answer asked for, both of a restricted question's included (`Usage`).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rag.insights.evaluation.golden import GoldenItem
from rag.model.answers import Answer, Question
from rag.model.types import AccessScope, Passage

Ask = Callable[[Question], Awaitable[Answer]]
Search = Callable[[str, AccessScope], Awaitable[list[Passage]]]


@dataclass(frozen=True, slots=True)
class Usage:
    """The model calls made for some answers: tokens in and out, and what the priced calls cost."""

    answers: int = 0
    calls: int = 0
    unpriced: int = 0
    """Calls to a model CANDOR_LLM_COSTS does not price: while there are any, the cost is unknown."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    priced_cost: float = 0.0

    @classmethod
    def of(cls, *answers: Answer) -> Usage:
        calls = [call for answer in answers for call in answer.model_calls]
        return cls(
            answers=len(answers),
            calls=len(calls),
            unpriced=sum(call.cost is None for call in calls),
            prompt_tokens=sum(call.prompt_tokens for call in calls),
            completion_tokens=sum(call.completion_tokens for call in calls),
            priced_cost=sum((call.cost or 0.0 for call in calls), 0.0),
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.answers + other.answers,
            self.calls + other.calls,
            self.unpriced + other.unpriced,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.priced_cost + other.priced_cost,
        )

    @property
    def cost(self) -> float | None:
        """None when any call was unpriced: a partial sum would understate it."""
        return None if self.unpriced else round(self.priced_cost, COST_DIGITS)

    def as_json(self) -> dict[str, Any]:
        per_answer = self.answers or None
        return {
            "answers": self.answers,
            "model_calls": self.calls,
            "unpriced_calls": self.unpriced,
            "prompt_tokens": {"total": self.prompt_tokens, "per_answer": _mean(self.prompt_tokens, per_answer, 1)},
            "completion_tokens": {
                "total": self.completion_tokens,
                "per_answer": _mean(self.completion_tokens, per_answer, 1),
            },
            "cost": {"total": self.cost, "per_answer": _mean(self.cost, per_answer, COST_DIGITS)},
        }


COST_DIGITS = 8


def _mean(total: float | None, count: int | None, digits: int) -> float | None:
    return None if total is None or count is None else round(total / count, digits)


@dataclass(frozen=True, slots=True)
class Scored:
    item: GoldenItem
    route: str
    hit1: bool | None
    hit5: bool | None
    keywords_ok: bool | None
    conflict_flagged: bool
    conflict_ok: bool | None
    citations_ok: bool
    sentences: int
    dropped: int
    parts_ok: bool | None
    leak: bool | None
    latency_ms: float
    rerank_hit1: bool | None = None
    """hit@1 of the shortlist as the reranker orders it (None: not measured)."""
    rerank_hit5: bool | None = None
    usage: Usage = Usage()
    """The model calls of the question's answers (two for a restricted question)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.item.id,
            "tags": list(self.item.tags),
            "answerable": self.item.answerable,
            "route": self.route,
            "hit@1": self.hit1,
            "hit@5": self.hit5,
            "rerank_hit@1": self.rerank_hit1,
            "rerank_hit@5": self.rerank_hit5,
            "keywords_ok": self.keywords_ok,
            "conflict_flagged": self.conflict_flagged,
            "conflict_ok": self.conflict_ok,
            "citations_ok": self.citations_ok,
            "sentences": self.sentences,
            "dropped": self.dropped,
            "parts_ok": self.parts_ok,
            "restricted_leak": self.leak,
            "latency_ms": round(self.latency_ms, 1),
            "answers": self.usage.answers,
            "model_calls": self.usage.calls,
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "cost": self.usage.cost,
        }


async def run_eval(
    items: Sequence[GoldenItem], ask: Ask, search: Search, *, kb: str | None, rerank: Search | None = None
) -> list[Scored]:
    """`search` gives the retrieval order; `rerank`, when given, the order after the reranker, so the
    report shows what reranking adds (the ablation)."""
    bases = None if kb is None else frozenset([kb])
    results = []
    for item in items:
        scope = AccessScope(frozenset(item.required_access), bases)
        answer = await ask(Question(item.question, scope=scope, platform="eval"))
        passages = await search(item.question, scope) if item.sources else []
        leak = None
        asked_again = Usage()
        if item.required_access:
            public = await ask(Question(item.question, scope=AccessScope(frozenset(), bases), platform="eval"))
            leak = leaked(public, item)
            asked_again = Usage.of(public)
        scored = score_question(item, answer, passages, leak)
        scored = replace(scored, usage=scored.usage + asked_again)
        if rerank is not None and item.sources:
            hit1, hit5 = hits(await rerank(item.question, scope), item)
            scored = replace(scored, rerank_hit1=hit1, rerank_hit5=hit5)
        results.append(scored)
    return results


def stem(document: str) -> str:
    return Path(document).stem if "://" not in document else document.rstrip("/").rsplit("/", 1)[-1]


def leaked(answer: Answer, item: GoldenItem) -> bool:
    """Asked without the group: anything but an abstention citing nothing restricted is a leak."""
    cited = {stem(s.document) for s in answer.sources}
    return bool(cited & set(item.sources)) or any(k in answer.text for k in item.keywords)


def hits(passages: Sequence[Passage], item: GoldenItem) -> tuple[bool | None, bool | None]:
    """(hit@1, hit@5) of the golden sources in `passages`; None for a question without sources."""
    if not item.sources:
        return None, None
    ranked = [stem(p.document) for p in passages]
    return bool(ranked[:1]) and ranked[0] in item.sources, bool(set(ranked[:5]) & set(item.sources))


def score_question(item: GoldenItem, answer: Answer, passages: Sequence[Passage], leak: bool | None) -> Scored:
    hit1, hit5 = hits(passages, item)
    delivered = answer.route != "abstained"
    keywords_ok = all(k in answer.text for k in item.keywords) if item.answerable and delivered else None
    numbers = {s.n for s in answer.sources}
    citations_ok = all(s.citations and set(s.citations) <= numbers for s in answer.sentences)
    return Scored(
        item=item,
        route=answer.route,
        hit1=hit1,
        hit5=hit5,
        keywords_ok=keywords_ok,
        conflict_flagged=bool(answer.conflicts),
        conflict_ok=_conflict_ok(item, answer) if item.conflict else None,
        citations_ok=citations_ok,
        sentences=len(answer.sentences),
        dropped=sum(d.stage == "critic" for d in answer.dropped),
        parts_ok=_parts_ok(item, answer) if item.parts else None,
        leak=leak,
        latency_ms=answer.timings_ms.get("total", 0.0),
        usage=Usage.of(answer),
    )


def _conflict_ok(item: GoldenItem, answer: Answer) -> bool:
    """Flagged with both values, and the preferred source is the golden one. A golden value may be
    written with its context ("15 seconds (LED flashes amber)"): a note's value matches it when
    either holds the other as whole words."""
    assert item.conflict is not None
    by_number = {s.n: stem(s.document) for s in answer.sources}
    golden = (item.conflict.preferred, item.conflict.stale)
    for c in answer.conflicts:
        if len(c.values) == 2 and any(
            _same_value(golden[0], first) and _same_value(golden[1], second)
            for first, second in (c.values, c.values[::-1])
        ):
            return c.preferred is not None and by_number.get(c.preferred) == item.conflict.preferred_source
    return False


def _same_value(golden: str, value: str) -> bool:
    def within(short: str, long: str) -> bool:
        return re.search(rf"(?<!\w){re.escape(short.strip())}(?!\w)", long) is not None

    return bool(golden.strip() and value.strip()) and (within(golden, value) or within(value, golden))


def _parts_ok(item: GoldenItem, answer: Answer) -> bool:
    """Split into the golden number of parts; answerable parts answered, the others listed."""
    if len(answer.parts) != len(item.parts):
        return False
    missing = set(answer.unanswered_parts)
    for golden, asked in zip(item.parts, answer.parts, strict=True):
        if golden.answerable == (asked in missing):
            return False
        if golden.answerable and not all(k in answer.text for k in golden.keywords):
            return False
    return True


def rate(n: int, total: int) -> dict[str, Any]:
    return {"n": n, "of": total, "rate": round(n / total, 4) if total else None}


def summarise(results: Sequence[Scored]) -> dict[str, Any]:
    answerable = [r for r in results if r.item.answerable]
    unanswerable = [r for r in results if not r.item.answerable]
    delivered_answerable = [r for r in answerable if r.keywords_ok is not None]
    with_sources = [r for r in results if r.hit1 is not None]
    reranked = [r for r in results if r.rerank_hit1 is not None]
    conflicts = [r for r in results if r.item.conflict]
    no_conflict = [r for r in results if not r.item.conflict]
    restricted = [r for r in results if r.leak is not None]
    with_parts = [r for r in results if r.parts_ok is not None]
    drafted = sum(r.sentences + r.dropped for r in results)
    latencies = sorted(r.latency_ms for r in results)
    summary: dict[str, Any] = {
        "questions": len(results),
        "routes": {route: rate(sum(r.route == route for r in results), len(results)) for route in ROUTES},
        "hit@1": rate(sum(bool(r.hit1) for r in with_sources), len(with_sources)),
        "hit@5": rate(sum(bool(r.hit5) for r in with_sources), len(with_sources)),
        "rerank_hit@1": rate(sum(bool(r.rerank_hit1) for r in reranked), len(reranked)),
        "rerank_hit@5": rate(sum(bool(r.rerank_hit5) for r in reranked), len(reranked)),
        "abstention_on_unanswerable": rate(sum(r.route == "abstained" for r in unanswerable), len(unanswerable)),
        "wrong_abstention_on_answerable": rate(sum(r.route == "abstained" for r in answerable), len(answerable)),
        "keyword_accuracy": rate(sum(bool(r.keywords_ok) for r in delivered_answerable), len(delivered_answerable)),
        "conflict_flag_recall": rate(sum(r.conflict_flagged for r in conflicts), len(conflicts)),
        "conflict_resolved_correctly": rate(sum(bool(r.conflict_ok) for r in conflicts), len(conflicts)),
        "false_conflict_rate": rate(sum(r.conflict_flagged for r in no_conflict), len(no_conflict)),
        "parts_correct": rate(sum(bool(r.parts_ok) for r in with_parts), len(with_parts)),
        "citations_valid": rate(sum(r.citations_ok for r in results), len(results)),
        "restricted_leaks": rate(sum(bool(r.leak) for r in restricted), len(restricted)),
        "critic_dropped_share": rate(sum(r.dropped for r in results), drafted),
        "latency_ms": {
            "p50": round(statistics.median(latencies), 1) if latencies else None,
            "p95": round(_percentile(latencies, 0.95), 1) if latencies else None,
        },
        "usage": sum((r.usage for r in results), Usage()).as_json(),
    }
    summary["by_tag"] = {tag: _tag_summary([r for r in results if tag in r.item.tags]) for tag in _tags(results)}
    return summary


ROUTES = ("answered", "low_confidence", "abstained")


def _tag_summary(results: Sequence[Scored]) -> dict[str, Any]:
    delivered = [r for r in results if r.keywords_ok is not None]
    return {
        "questions": len(results),
        **{route: sum(r.route == route for r in results) for route in ROUTES},
        "keywords_ok": rate(sum(bool(r.keywords_ok) for r in delivered), len(delivered)),
    }


def _tags(results: Sequence[Scored]) -> list[str]:
    return sorted({t for r in results for t in r.item.tags})


def _percentile(values: Sequence[float], q: float) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q * 100) - 1]
