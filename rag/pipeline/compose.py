"""From the last attempt to the `Answer`: contradictions, source numbers, route and readable text.

Pure functions over the attempt's data: no I/O, so every route can be tested by building attempts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag.model.answers import AnswerSentence, Conflict, GateOutcome, Route, Source
from rag.model.evidence import Checked, ScoredSentence
from rag.model.types import Passage
from rag.pipeline.anchor import anchor_of
from rag.pipeline.attempt import Attempt
from rag.pipeline.contradictions import ContradictionDetector, FoundConflict, ValueConflicts
from rag.pipeline.gates.contradiction import contradiction_gate
from rag.text.facts import clean_sentence

SHORTLIST_FOR_CONFLICTS = 10
NOT_FOUND = "No relevant information found in your knowledge base for: {part}"
LOW_CONFIDENCE = "Some of this could not be fully verified against the sources; check the cited passages."
INCONSISTENT = "Asked again, the model did not state the same facts every time: treat the figures with care."


@dataclass(frozen=True, slots=True)
class Final:
    sentence: Checked
    passages: tuple[Passage, ...]
    text: str
    conflict: FoundConflict | None
    disputed: bool = False


@dataclass(frozen=True, slots=True)
class Composed:
    route: Route
    text: str
    sentences: tuple[AnswerSentence, ...]
    sources: tuple[Source, ...]
    conflicts: tuple[Conflict, ...]
    unanswered_parts: tuple[str, ...]
    caveats: tuple[str, ...]
    gate: GateOutcome | None


def compose(attempt: Attempt, *, refusal: str, detector: ContradictionDetector | None = None) -> Composed:
    challenges = tuple(
        _challenge(names, attempt.known_instead.get(i, ())) for i, names in attempt.unknown_names.items()
    )
    if not attempt.supported:
        text = "\n".join((refusal, *dict.fromkeys(challenges)))
        return Composed("abstained", text, (), (), (), attempt.parts, (), None)
    finals = [f for c in attempt.supported for f in _resolve(attempt, c, detector or ValueConflicts())]
    found = [f.conflict for f in finals if f.conflict is not None]
    found += [c for c in attempt.writer_conflicts if _pair(c) not in {_pair(f) for f in found}]
    sources, number = _number_sources(finals, found)
    # a table row answering two parts is written once
    sentences = tuple(
        dict.fromkeys(
            AnswerSentence(f.text, tuple(number[p.chunk_id] for p in f.passages), disputed=f.disputed) for f in finals
        )
    )
    conflicts = tuple(_conflict(c, number) for c in found)
    answered = {c.part for c in attempt.supported}
    unanswered = tuple(p for i, p in enumerate(attempt.parts) if i not in answered)
    faithful = attempt.gate("faithfulness")
    consistent = attempt.gate("self_consistency")
    confident = faithful is not None and faithful.passed and (consistent is None or consistent.passed)
    route: Route = "answered" if confident else "low_confidence"
    caveats = (LOW_CONFIDENCE,) if route == "low_confidence" else ()
    if consistent is not None and not consistent.passed:
        caveats = (*caveats, INCONSISTENT)
    notes = [
        f"{NOT_FOUND.format(part=p)}"
        + (
            f" ({_challenge(attempt.unknown_names[i], attempt.known_instead.get(i, ()))})"
            if i in attempt.unknown_names
            else ""
        )
        for i, p in enumerate(attempt.parts)
        if i not in answered
    ]
    text = _text(sentences, conflicts, notes, caveats)
    return Composed(
        route, text, sentences, sources, conflicts, unanswered, caveats, contradiction_gate(conflicts, attempt.number)
    )


def _resolve(attempt: Attempt, checked: Checked, detector: ContradictionDetector) -> tuple[Final, ...]:
    """A supported sentence, swapped for the other source's when a conflict prefers that one. When
    neither source is preferred, both sentences, each citing its own source and marked disputed:
    stating the first-ranked one alone would assert a value the answer cannot prefer (docs/design.md:
    "neither decides -> no preference"). The other sentence is the source's own words, cited to it."""
    origin = _origin(attempt, checked)
    shortlist = [s for r in attempt.evidence[checked.part].ranked[:SHORTLIST_FOR_CONFLICTS] for s in r.sentences]
    found = detector.find(origin, shortlist, question=attempt.parts[checked.part])
    if not found:
        return (Final(checked, checked.passages, checked.text, None),)
    conflict = found[0]
    if conflict.preferred == "other":
        return (Final(checked, (conflict.other.passage,), clean_sentence(conflict.other.text), conflict),)
    if conflict.preferred is None:
        other = clean_sentence(conflict.other.text)
        return (
            Final(checked, checked.passages, checked.text, conflict, disputed=True),
            Final(checked, (conflict.other.passage,), other, None, disputed=True),
        )
    return (Final(checked, checked.passages, checked.text, conflict),)


def _origin(attempt: Attempt, checked: Checked) -> ScoredSentence:
    """The source sentence a delivered sentence stands on: the extractive writer's copy, else the
    cited sentence a model's sentence restates (`rag/pipeline/anchor.py`), so that the shortlist is
    searched for a newer value whatever the model declared; else the sentence itself."""
    draft = attempt.draft
    if draft is not None and draft.sentences[checked.origin_index].origin is not None:
        origin = draft.sentences[checked.origin_index].origin
        assert origin is not None
        return origin
    cited = {p.chunk_id for p in checked.passages}
    candidates = [
        (s.text, s) for r in attempt.evidence[checked.part].ranked if r.passage.chunk_id in cited for s in r.sentences
    ]
    anchored = anchor_of(checked.text, candidates)
    if anchored is not None:
        return anchored
    return ScoredSentence(checked.passages[0], -1, checked.text, checked.score, 0.0, 0.0, 0.0, None)


def _pair(conflict: FoundConflict) -> frozenset[int]:
    return frozenset({conflict.chosen.passage.chunk_id, conflict.other.passage.chunk_id})


def _number_sources(
    finals: Sequence[Final], conflicts: Sequence[FoundConflict]
) -> tuple[tuple[Source, ...], dict[int, int]]:
    order: dict[int, Passage] = {}
    for f in finals:
        for p in f.passages:
            order.setdefault(p.chunk_id, p)
        if f.conflict is not None:
            for s in (f.conflict.chosen, f.conflict.other):
                order.setdefault(s.passage.chunk_id, s.passage)
    for c in conflicts:  # the writer's confirmed notes, after the sentences' own sources
        for s in (c.chosen, c.other):
            order.setdefault(s.passage.chunk_id, s.passage)
    numbers = {chunk: n for n, chunk in enumerate(order, 1)}
    sources = tuple(_source(n, p) for n, p in enumerate(order.values(), 1))
    return sources, numbers


def _source(n: int, p: Passage) -> Source:
    return Source(
        n=n,
        document=p.document,
        title=p.title,
        heading=_without_title(p.heading, p.title),
        excerpt=p.text,
        score=p.dense_score if p.dense_score is not None else p.score,
        url=p.url,
        effective_date=p.effective_date,
        chunk_id=p.chunk_id,
        document_id=p.document_id,
        answered_by=p.answered_by,
    )


def _without_title(heading: str, title: str) -> str:
    """ "Leave Policy > Annual leave" under the title "Leave Policy" reads as "Annual leave"."""
    if heading == title:
        return ""
    return heading.removeprefix(f"{title} > ")


def _conflict(found: FoundConflict, number: dict[int, int]) -> Conflict:
    a, b = found.chosen.passage, found.other.passage
    na, nb = number[a.chunk_id], number[b.chunk_id]
    preferred = {"chosen": na, "other": nb}.get(found.preferred or "")
    first = f"{_label(a)} [{na}] says {found.chosen_value.surface}"
    second = f"{_label(b)} [{nb}] says {found.other_value.surface}"
    if preferred is None:
        decision = f"Neither is preferred ({found.reason}); check with the document owners."
    else:
        winner = a if preferred == na else b
        decision = f"This answer uses {winner.title} [{preferred}]: {found.reason}."
    return Conflict(
        note=f"Sources disagree: {first}; {second}. {decision}",
        values=(found.chosen_value.surface, found.other_value.surface),
        sources=(na, nb),
        preferred=preferred,
        reason=found.reason,
    )


def _challenge(names: Sequence[str], instead: Sequence[str] = ()) -> str:
    """ "There is no X; the documents describe Y and Z" (or only the first half, when nothing of the kind is found)."""
    quoted = ", ".join(f'"{n}"' for n in names)
    if not instead:
        return f"The documents do not mention {quoted}; check the name."
    described = ", ".join(instead[:-1]) + f" and {instead[-1]}" if len(instead) > 1 else instead[0]
    return f"The documents do not mention {quoted}; they describe {described}."


def _label(p: Passage) -> str:
    return f"{p.title} ({p.effective_date.isoformat()})" if p.effective_date else p.title


def _cited(sentence: AnswerSentence) -> str:
    text = f"{sentence.text} {''.join(f'[{n}]' for n in sentence.citations)}"
    return f"{text} (disputed: see below)" if sentence.disputed else text


def _text(
    sentences: Sequence[AnswerSentence],
    conflicts: Sequence[Conflict],
    unanswered: Sequence[str],
    caveats: Sequence[str],
) -> str:
    lines = [" ".join(_cited(s) for s in sentences)]
    lines.extend(c.note for c in conflicts)
    lines.extend(unanswered)
    lines.extend(caveats)
    return "\n".join(lines)
