"""What one retrieval-synthesis-critic attempt found, what every step reads besides it, and the
timings of its stages.

`GatedAttempt` (rag/pipeline/flow.py) makes an `Attempt` step by step (rag/pipeline/steps.py), each
step returning a new value; `compose` and the `Answerer` read the last one.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from rag.model.answers import DroppedSentence, GateName, GateOutcome
from rag.model.evidence import Checked, Draft, PartEvidence, Query
from rag.model.types import AccessScope, Passage
from rag.pipeline.bridge import Bridged
from rag.pipeline.contradictions import FoundConflict
from rag.pipeline.focus import Focus
from rag.pipeline.progress import SILENT, Reporter
from rag.pipeline.relevance import Relevance
from rag.pipeline.understand import Understood


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one attempt found so far; each step of `GatedAttempt` returns a new one."""

    number: int
    parts: tuple[str, ...]
    probes: tuple[Query, ...] = ()
    """Per part: the query retrieved with (its text, vector and term frequencies)."""
    shortlists: tuple[tuple[Passage, ...], ...] = ()
    """Per part: the passages retrieval found, before reranking."""
    evidence: tuple[PartEvidence, ...] = ()
    draft: Draft | None = None
    checked: tuple[Checked, ...] = ()
    gates: tuple[GateOutcome, ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)
    unknown_names: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    """Per part: names and codes of the question that no retrieved passage mentions."""
    known_instead: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    """Per such part: what the passages name of the same kind ("Starter plan", "NW-200X")."""
    writer_conflicts: tuple[FoundConflict, ...] = ()
    """The writer's conflict notes the cited passages confirmed."""
    bridges: Mapping[int, Bridged] = field(default_factory=dict)
    """Per multi-hop part: the bridging name and the second hop's evidence."""
    focus: Mapping[int, Focus] = field(default_factory=dict)
    """Per part with supported sentences: does that answer address every word of the part?"""
    relevance: Mapping[int, Relevance] = field(default_factory=dict)
    """Per part whose answer addresses it: does it state the kind of value the part asks for?"""

    @property
    def ended(self) -> bool:
        """A failed retrieval gate ends the attempt: nothing is written from passages not about the question."""
        retrieval = self.gate("retrieval_score")
        return retrieval is not None and not retrieval.passed

    def with_gates(self, *gates: GateOutcome) -> Attempt:
        return replace(self, gates=(*self.gates, *gates))

    @property
    def supported(self) -> tuple[Checked, ...]:
        """Sentences the critic passed, of parts whose answer addresses what the part asks."""
        return tuple(c for c in self.checked if c.supported and c.part not in self.off_topic_parts)

    @property
    def off_topic_parts(self) -> frozenset[int]:
        unaddressed = {i for i, f in self.focus.items() if not f.addressed}
        return frozenset(unaddressed | {i for i, r in self.relevance.items() if not r.stated})

    @property
    def off_topic(self) -> tuple[Checked, ...]:
        """Faithful sentences withheld because their part's answer ignores what it asks."""
        return tuple(c for c in self.checked if c.supported and c.part in self.off_topic_parts)

    @property
    def unsupported(self) -> tuple[Checked, ...]:
        return tuple(c for c in self.checked if not c.supported)

    def gate(self, name: GateName) -> GateOutcome | None:
        return next((g for g in self.gates if g.gate == name), None)

    @property
    def support_score(self) -> float:
        return sum(c.score for c in self.checked) / len(self.checked) if self.checked else 0.0

    def rank(self) -> tuple[int, float]:
        return (len(self.supported) - len(self.unsupported), self.support_score)


@dataclass(frozen=True, slots=True)
class Run:
    """What every step of one attempt reads besides the attempt itself: the question, the reader's
    scope, the attempt's queries and shortlist size, the clock its stages are timed by, and who is
    told which stage is running."""

    understood: Understood
    scope: AccessScope
    queries: tuple[str, ...]
    k: int
    clock: Clock
    progress: Reporter = SILENT


class Clock:
    def __init__(self, timings: dict[str, float]) -> None:
        self.timings = timings

    def stage(self, name: str) -> _Timer:
        return _Timer(self.timings, name)


class _Timer:
    def __init__(self, timings: dict[str, float], name: str) -> None:
        self.timings, self.name, self.start = timings, name, 0.0

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        elapsed = (time.perf_counter() - self.start) * 1000
        self.timings[self.name] = self.timings.get(self.name, 0.0) + elapsed


def context_of(evidence: Sequence[PartEvidence]) -> tuple[Passage, ...]:
    seen: dict[int, Passage] = {}
    for part in evidence:
        for r in part.ranked:
            seen.setdefault(r.passage.chunk_id, r.passage)
    return tuple(seen.values())


def dropped(attempts: Sequence[Attempt]) -> tuple[DroppedSentence, ...]:
    out = []
    for attempt in attempts:
        context = context_of(attempt.evidence)
        numbers = {p.chunk_id: n for n, p in enumerate(context, 1)}
        for c in attempt.unsupported:
            cites = tuple(numbers[p.chunk_id] for p in c.passages if p.chunk_id in numbers)
            out.append(DroppedSentence(c.text, cites, attempt.number, c.score, c.reasons))
        for c in attempt.checked:
            if c.written is not None:  # the writer's sentence, replaced by the source's (rag/pipeline/rescue.py)
                cites = tuple(numbers[p.chunk_id] for p in c.passages if p.chunk_id in numbers)
                reasons = (*c.written_reasons, f"requoted from its source: {c.text}")
                out.append(DroppedSentence(c.written, cites, attempt.number, c.score, reasons))
        for c in attempt.off_topic:
            cites = tuple(numbers[p.chunk_id] for p in c.passages if p.chunk_id in numbers)
            focus, relevant = attempt.focus.get(c.part), attempt.relevance.get(c.part)
            if focus is not None and not focus.addressed:
                missed = ", ".join(f'"{w.word}"' for w in focus.unaddressed)
                reason = f"supported, but does not address {missed} of: {attempt.parts[c.part]}"
            else:
                wanted = relevant.wanted if relevant is not None else "answer"
                reason = f"supported, but states no {wanted} for: {attempt.parts[c.part]}"
            out.append(DroppedSentence(c.text, cites, attempt.number, c.score, (reason,), stage="focus"))
    return tuple(out)
