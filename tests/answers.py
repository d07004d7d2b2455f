"""`Answer` objects for the renderer tests (chat page, Slack, Teams): one answer, three platforms."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from rag.model.answers import Answer, AnswerSentence, Conflict, Source

TRACE = "3f2a9c1e-7d4b-4b8e-9a51-0c6d2e8f1a77"


def source(n: int, **changes: object) -> Source:
    made = Source(
        n=n,
        document=f"handbook/leave-{n}.md",
        title=f"Leave policy {n}",
        heading="Annual leave",
        excerpt=f"Passage {n} about annual leave.",
        score=0.8,
        url=f"https://intranet.example.com/leave/{n}",
        effective_date=date(2026, 1, n % 28 + 1),
    )
    return replace(made, **changes)  # type: ignore[arg-type]


def answer(**changes: object) -> Answer:
    made = Answer(
        question="How many days of annual leave do I get?",
        route="answered",
        text="Full-time staff get 24 days of annual leave. Leave is booked in the HR portal.",
        sentences=(
            AnswerSentence("Full-time staff get 24 days of annual leave.", (1, 3)),
            AnswerSentence("Leave is booked in the HR portal.", (2,)),
        ),
        sources=(source(1), source(2), source(3)),
        trace_id=TRACE,
    )
    return replace(made, **changes)  # type: ignore[arg-type]


CONFLICT = Conflict(
    note="The sources disagree on the number of annual leave days.",
    values=("24 days", "20 days"),
    sources=(1, 3),
    preferred=1,
    reason="source 1 has the newer effective date",
)
