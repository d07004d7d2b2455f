"""The plain data of one question and its answer: what adapters build and what they render.

`Question` comes in from an adapter (Slack, Teams, the chat page, the CLI); `Answer` goes back
out. Both are frozen data with no behaviour beyond shaping JSON: the pipeline fills them, the
renderers read them, the tracker stores them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Literal

from rag.model.progress import ProgressListener
from rag.model.types import AccessScope, clean_text

Route = Literal["answered", "low_confidence", "abstained"]
Platform = Literal["cli", "web", "slack", "teams", "eval"]
Rating = Literal["up", "down"]
Audience = Literal["public", "shared", "private", "direct"]
"""Who can read the conversation: a public channel, one shared with other organisations (Slack
Connect), a private channel or group chat, a direct message."""

DEFAULT_REFUSAL = "I don't know - the knowledge base does not cover this."


@dataclass(frozen=True, slots=True)
class Turn:
    """One earlier message of the thread, oldest first in `Question.history`."""

    text: str
    author: str | None = None
    from_bot: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", clean_text(self.text))


@dataclass(frozen=True, slots=True)
class Question:
    """What an adapter knows about one question: the text as typed and where it came from."""

    text: str
    scope: AccessScope | None = None
    """Set by callers that decide access themselves (the CLI's `--access`); None: the pipeline asks
    the `AccessPolicy` from `platform`, `conversation` and `asker`."""
    asker: str | None = None
    platform: Platform = "cli"
    conversation: str | None = None
    """Workspace/team and channel or chat id, as the platform names them ("T1/C2")."""
    thread: str | None = None
    history: tuple[Turn, ...] = ()
    audience: Audience | None = None
    """Reported by chat adapters; a public or shared conversation never gets restricted documents,
    whatever the access rules grant (`AccessPolicy`)."""
    private_reply: bool = False
    """The answer is shown to the asker alone (a Slack ephemeral reply, the chat page), whoever else
    is in the conversation: the asker's own access rules count (`AccessPolicy`)."""
    anonymous: bool = False
    """The asker id names a browser, not a person (the chat page without a login): no access rule
    grants it groups; the rules' knowledge-base limits still apply (`AccessPolicy`)."""
    client_address: str | None = None
    """The network address of an anonymous chat page visitor: a browser can shed its cookie id, not
    its address, so the rate limit counts both (`rag.tracking.limits`). Never stored with the trace."""
    progress: ProgressListener | None = field(default=None, compare=False, repr=False)
    """Told which stage is running while the answer is made (rag/model/progress.py): counts and
    stage names, never draft text. Never stored with the trace."""

    def __post_init__(self) -> None:
        # a NUL or a lone surrogate would fail the trace's write and the tokenizer, not the asker
        object.__setattr__(self, "text", clean_text(self.text))


@dataclass(frozen=True, slots=True)
class Verdict:
    """A gate's or a check's outcome: never NaN or None as a silent sentinel."""

    passed: bool
    score: float
    reasons: tuple[str, ...] = ()
    decided_by: str = ""
    """The verifier that decided, when a composite one (prefilter, fallback) was asked; "" otherwise."""


GateName = Literal[
    "retrieval_score",
    "premise",
    "bridge",
    "writer",
    "faithfulness",
    "rescue",
    "writer_conflicts",
    "relevance",
    "completeness",
    "self_consistency",
    "contradiction",
]
"""Every gate an answer passes, in the order an attempt meets them (docs/design.md, "The flow"):
`retrieval_score` (best dense cosine), `premise` (names and codes no evidence mentions), `bridge`
(multi-hop's second retrieval), `writer` (the configured writer, or its fallback), `faithfulness`
(the critic's verdicts), `rescue` (per-claim re-retrieval), `writer_conflicts` (a model writer's
conflict notes, confirmed), `relevance` (each answered part states the kind of value it asks
for), `completeness` (every part answered), `self_consistency` (optional),
`contradiction` (sources that disagree, over the shortlist)."""


@dataclass(frozen=True, slots=True)
class GateOutcome:
    gate: GateName
    passed: bool
    score: float
    attempt: int
    details: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "gate": self.gate,
            "passed": self.passed,
            "score": round(self.score, 4),
            "attempt": self.attempt,
            "details": self.details,
        }


@dataclass(frozen=True, slots=True)
class AnswerSentence:
    text: str
    citations: tuple[int, ...]
    """Numbers of `Answer.sources` (1-based)."""
    supported: bool = True
    disputed: bool = False
    """One side of a disagreement neither date nor authority settles: the answer gives every side,
    each with its own source, and asserts none (`Answer.conflicts` holds the note)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "citations": list(self.citations),
            "supported": self.supported,
            "disputed": self.disputed,
        }


@dataclass(frozen=True, slots=True)
class Source:
    """A passage the answer cites, numbered as the citations number it."""

    n: int
    document: str
    title: str
    heading: str
    excerpt: str
    score: float
    url: str | None = None
    effective_date: date | None = None
    chunk_id: int | None = None
    document_id: int | None = None
    answered_by: str | None = None
    """A curated answer: who wrote it (cited as "answered by <name> on <date>")."""

    def as_json(self) -> dict[str, Any]:
        return {
            **({"answered_by": self.answered_by} if self.answered_by else {}),
            "n": self.n,
            "document": self.document,
            "title": self.title,
            "heading": self.heading,
            "url": self.url,
            "effective_date": self.effective_date.isoformat() if self.effective_date else None,
            "score": round(self.score, 4),
            "excerpt": self.excerpt,
        }


@dataclass(frozen=True, slots=True)
class Conflict:
    """Two sources giving different values for the same fact."""

    note: str
    values: tuple[str, ...]
    sources: tuple[int, ...]
    preferred: int | None
    """The source number preferred, or None when neither date nor authority decides."""
    reason: str

    def as_json(self) -> dict[str, Any]:
        return {
            "note": self.note,
            "values": list(self.values),
            "sources": list(self.sources),
            "preferred": self.preferred,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class DroppedSentence:
    """A draft sentence withheld: logged, never delivered."""

    text: str
    citations: tuple[int, ...]
    attempt: int
    score: float
    reasons: tuple[str, ...]
    stage: str = "critic"
    """"critic": its evidence does not support it; "focus": supported, but its part's answer
    ignores what the part asks (rag/pipeline/focus.py). Only the critic's count as the gate's dropped rate."""

    def as_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "citations": list(self.citations),
            "attempt": self.attempt,
            "score": round(self.score, 4),
            "reasons": list(self.reasons),
            "stage": self.stage,
        }


@dataclass(frozen=True, slots=True)
class Answer:
    question: str
    route: Route
    text: str
    """The answer as a person reads it (plain text; renderers build richer forms from the parts)."""
    sentences: tuple[AnswerSentence, ...] = ()
    sources: tuple[Source, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    unanswered_parts: tuple[str, ...] = ()
    gates: tuple[GateOutcome, ...] = ()
    trace_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    timings_ms: dict[str, float] = field(default_factory=dict)
    rewritten_question: str | None = None
    parts: tuple[str, ...] = ()
    dropped: tuple[DroppedSentence, ...] = ()
    caveats: tuple[str, ...] = ()
    created_at: datetime | None = None
    model_calls: tuple[ModelCall, ...] = ()
    """Every language-model request made for this answer (none with the offline stages)."""

    @property
    def cost(self) -> float | None:
        """What the model calls cost, when every one of them is priced."""
        costs = [c.cost for c in self.model_calls]
        return sum(c for c in costs if c is not None) if all(c is not None for c in costs) else None

    @property
    def abstained(self) -> bool:
        return self.route == "abstained"

    def as_json(self) -> dict[str, Any]:
        """The object `candor ask --json` prints (docs/design.md, "Public interface")."""
        return {
            "question": self.question,
            "route": self.route,
            "text": self.text,
            "sentences": [s.as_json() for s in self.sentences],
            "sources": [s.as_json() for s in self.sources],
            "conflicts": [c.as_json() for c in self.conflicts],
            "unanswered_parts": list(self.unanswered_parts),
            "caveats": list(self.caveats),
            "gates": [g.as_json() for g in self.gates],
            "trace_id": self.trace_id,
            "timings_ms": {name: round(ms, 2) for name, ms in self.timings_ms.items()},
            "rewritten_question": self.rewritten_question,
            "parts": list(self.parts),
            "dropped": [d.as_json() for d in self.dropped],
            "model_calls": [c.as_json() for c in self.model_calls],
            "cost": self.cost,
        }

    def reader_json(self) -> dict[str, Any]:
        """What the person who asked may see (the chat page's API): the answer, its sources and each
        gate's outcome, without the internals an operator reads in the trace (gate details, which
        can quote a model's error; withheld sentences; model calls, cost and timings)."""
        shown = self.as_json()
        for internal in ("dropped", "model_calls", "cost", "timings_ms"):
            del shown[internal]
        shown["gates"] = [{"gate": g.gate, "passed": g.passed, "attempt": g.attempt} for g in self.gates]
        return shown


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One request to a language model made for an answer, as the trace records it."""

    purpose: str
    """What asked: "writer", "judge", "consistency"."""
    model: str
    prompt_tokens: int
    completion_tokens: int
    ms: float
    outcome: Literal["ok", "malformed", "failed", "skipped"]
    """skipped: the circuit breaker was open, nothing was sent."""
    mode: str = ""
    """The structured-output mode used (json_schema, json_object, prompt)."""
    error: str | None = None
    cost: float | None = None
    """In the currency of `CANDOR_LLM_COSTS`; None when the model is not priced there."""

    def as_json(self) -> dict[str, Any]:
        return {
            "purpose": self.purpose,
            "model": self.model,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "ms": round(self.ms, 2),
            "outcome": self.outcome,
            "mode": self.mode,
            "error": self.error,
            "cost": self.cost,
        }


@dataclass(frozen=True, slots=True)
class Feedback:
    """A 👍/👎 on an answer, from whichever platform showed it."""

    trace_id: str
    rating: Rating
    user: str | None = None
    platform: Platform = "web"
    comment: str | None = None
    askers_only: bool = False
    """Only the person who asked may vote (the chat page, where nobody else sees the answer): a vote
    by anyone else is refused as for an unknown trace (`UnknownTrace`)."""
