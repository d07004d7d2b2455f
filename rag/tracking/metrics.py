"""`Metrics`: what Prometheus scrapes from `candor serve` at `/metrics` (prometheus-client).

One registry per core (not the library's global one: tests and tools open several cores in one
process). What it counts, all prefixed `candor_`:

- `questions_total{platform, route}`: answers made (`answered`, `low_confidence`, `abstained`);
- `questions_refused_total{platform, reason}`: questions not answered (`rate_limited`, `invalid`:
  empty, too long, too many parts);
- `gate_outcomes_total{gate, outcome}`: every gate an answer passed through (`passed` / `failed`);
- `answer_seconds{platform}` and `stage_seconds{stage}`: histograms of the whole answer and of each
  stage (retrieve, rerank, synthesise, critic, ...);
- `model_calls_total{purpose, outcome}`, `model_tokens_total{direction}`, `model_cost_total`
  (in the currency of CANDOR_LLM_COSTS);
- `ledger_claims{platform}` and `ledger_oldest_claim_seconds{platform}`: chat questions being
  answered now and the age of the oldest (a stuck replica shows as a growing age), refreshed by
  `refresh_ledger`; `ledger_takeovers_total{platform}`: questions another replica took over;
- `spool_bytes` and `spool_files`: records waiting for the database, read at each scrape.

Ids, question text and anything a person typed never become labels.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from rag.model.answers import Answer, Question

SECONDS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120)
# An edited question is claimed again in its own row: its age counts from the edit (`revised_at`).
LEDGER = text(
    "SELECT platform, count(*) AS claims, "
    "EXTRACT(EPOCH FROM now() - min(COALESCE(CAST(payload ->> 'revised_at' AS timestamptz), created_at))) AS oldest "
    "FROM platform_events WHERE status = 'claimed' GROUP BY platform"
)
PLATFORMS = ("slack", "teams")


class Metrics:
    def __init__(self, *, spool_size: Callable[[], tuple[int, int]] | None = None) -> None:
        """`spool_size`: (files, bytes) waiting in the spool, asked at each scrape."""
        self.registry = CollectorRegistry()
        r = self.registry
        self.questions = Counter("candor_questions", "Answers made.", ["platform", "route"], registry=r)
        self.refused = Counter(
            "candor_questions_refused", "Questions not answered.", ["platform", "reason"], registry=r
        )
        self.gates = Counter("candor_gate_outcomes", "Gate outcomes.", ["gate", "outcome"], registry=r)
        self.answer_seconds = Histogram(
            "candor_answer_seconds", "Time to answer.", ["platform"], buckets=SECONDS, registry=r
        )
        self.stage_seconds = Histogram(
            "candor_stage_seconds", "Time per stage of an answer.", ["stage"], buckets=SECONDS, registry=r
        )
        self.model_calls = Counter("candor_model_calls", "Model calls.", ["purpose", "outcome"], registry=r)
        self.model_tokens = Counter("candor_model_tokens", "Model tokens.", ["direction"], registry=r)
        self.model_cost = Counter("candor_model_cost", "Model cost (CANDOR_LLM_COSTS' currency).", registry=r)
        self.claims = Gauge("candor_ledger_claims", "Chat questions being answered.", ["platform"], registry=r)
        self.oldest = Gauge(
            "candor_ledger_oldest_claim_seconds", "Age of the oldest question being answered.", ["platform"], registry=r
        )
        self.takeovers = Counter(
            "candor_ledger_takeovers", "Questions taken over from another replica.", ["platform"], registry=r
        )
        files = Gauge("candor_spool_files", "Records waiting in the spool for the database.", registry=r)
        size = Gauge("candor_spool_bytes", "Bytes waiting in the spool.", registry=r)
        if spool_size is not None:
            files.set_function(lambda: spool_size()[0])
            size.set_function(lambda: spool_size()[1])

    def answered(self, question: Question, answer: Answer) -> None:
        self.questions.labels(question.platform, answer.route).inc()
        for gate in answer.gates:
            self.gates.labels(gate.gate, "passed" if gate.passed else "failed").inc()
        stages = dict(answer.timings_ms)
        total = stages.pop("total", None)
        if total is not None:
            self.answer_seconds.labels(question.platform).observe(total / 1000)
        for stage, ms in stages.items():
            self.stage_seconds.labels(stage).observe(ms / 1000)
        for call in answer.model_calls:
            self.model_calls.labels(call.purpose, call.outcome).inc()
            self.model_tokens.labels("in").inc(call.prompt_tokens)
            self.model_tokens.labels("out").inc(call.completion_tokens)
            if call.cost:
                self.model_cost.inc(call.cost)

    def refused_question(self, question: Question, reason: str) -> None:
        self.refused.labels(question.platform, reason).inc()

    def taken_over(self, platform: str) -> None:
        self.takeovers.labels(platform).inc()

    async def refresh_ledger(self, engine: AsyncEngine) -> None:
        """The ledger gauges from Postgres (a platform with nothing claimed reads 0)."""
        async with engine.connect() as connection:
            rows = {row.platform: row for row in await connection.execute(LEDGER)}
        for platform in sorted(set(PLATFORMS) | set(rows)):
            row = rows.get(platform)
            self.claims.labels(platform).set(row.claims if row is not None else 0)
            self.oldest.labels(platform).set(float(row.oldest) if row is not None else 0.0)

    content_type = CONTENT_TYPE_LATEST

    def exposition(self) -> bytes:
        """The text format Prometheus scrapes (`content_type`)."""
        return generate_latest(self.registry)
