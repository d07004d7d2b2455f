"""A model writer's own conflict notes, confirmed by the critic or rejected.

A writer may say "the handbook says 24 days, the FAQ 20 days". That is a claim like any other: it
is delivered only when the cited passages bear it out. A note is confirmed when two of its values
are each stated by a sentence of a different cited document, the values differ, and the two
sentences state the same fact by the offline detector's rules (same names, codes and qualifiers,
mostly the same words: `rag.pipeline.contradictions.differing_values`). The preferred side follows the same rule
as every conflict: the newer effective date, then the higher authority. A confirmed note becomes
a conflict of the answer (unless the offline detector found the same pair); a rejected one is
logged, with why, in the `writer_conflicts` gate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag.ingest.sentences import split_sentences
from rag.model.evidence import DraftConflict, ScoredSentence
from rag.model.types import Passage
from rag.pipeline.contradictions import FoundConflict, differing_values, prefer
from rag.text.facts import clean_sentence, values


@dataclass(frozen=True, slots=True)
class Checked:
    note: DraftConflict
    found: FoundConflict | None
    reason: str


def confirm(note: DraftConflict, context: Sequence[Passage]) -> Checked:
    cited = [context[n - 1] for n in dict.fromkeys(note.citations) if 0 < n <= len(context)]
    if len({p.document_id for p in cited}) < 2:
        return Checked(note, None, "it does not cite two documents that exist")
    stating = [_stating(value, cited) for value in note.values]
    found = [s for s in stating if s is not None]
    for i, first in enumerate(found):
        for second in found[i + 1 :]:
            if first.passage.document_id == second.passage.document_id:
                continue
            pair = differing_values(first, second)
            if pair is not None:
                preferred, reason = prefer(first, second)
                return Checked(note, FoundConflict(first, second, pair[0], pair[1], preferred, reason), "confirmed")
    if len(found) < 2:
        missing = [v for v, s in zip(note.values, stating, strict=True) if s is None]
        return Checked(note, None, f"the cited passages do not state {', '.join(map(repr, missing)) or 'two values'}")
    return Checked(note, None, "the cited passages do not give different values for the same fact")


def _stating(value: str, passages: Sequence[Passage]) -> ScoredSentence | None:
    """The first sentence of the passages that states `value` (compared as normalised values)."""
    wanted = {v.key for v in values(value)}
    if not wanted:
        return None
    for passage in passages:
        for position, raw in enumerate(split_sentences(passage.text) or [passage.text]):
            sentence = clean_sentence(raw)  # list markers and Markdown off, as stored sentences are
            if wanted & {v.key for v in values(sentence)}:
                return ScoredSentence(passage, position, sentence, 0.0, 0.0, 0.0, 0.0)
    return None
