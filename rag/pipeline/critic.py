"""Stage 4, the faithfulness critic: is each sentence supported by the evidence it cites?

The `Verifier` sees only one sentence and the text of the passages it cites, never the question,
the ranking or the writer's reasons, so a writer cannot talk it round. `EvidenceVerifier` (the
offline default) checks, in order:

1. exact facts: every value (amount, duration, count, date, time, percentage), product code and
   capitalised name in the sentence appears in the evidence, values compared after normalising
   thousands separators and units, never approximately; each value is stated for the same subject
   and variant, the claim is negated exactly when its closest evidence sentence is, and it does
   not widen the scope to "all" or "every" (`rag/text/claims.py`);
2. content coverage: the share of the sentence's content words found in the evidence;
3. meaning: the cosine of the sentence and the closest evidence sentence.

A sentence passes when nothing exact is missing and the mean of (2) and (3) reaches
`min_support`. The score is that mean, so a dropped sentence's row in the gate log says how far off
it was.

`settled_verdict` (empty sentence, no evidence, an instruction, a verbatim quote) and
`exact_mismatches` (the value, code, name and subject checks of step 1) are shared with the other
verifiers (`rag/backends/cross_encoders.py`), so no model can overrule an exact fact.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from rag.backends.embeddings import Embedder
from rag.ingest.sentences import split_sentences
from rag.model.answers import Verdict
from rag.text.claims import added_qualifiers, misattributed, negated, swapped_names, wider_scope
from rag.text.facts import content_words, looks_like_instruction, values
from rag.text.names import codes, names

DEFAULT_MIN_SUPPORT = 0.6


class Verifier(Protocol):
    name: str

    async def verify(self, sentence: str, evidence: Sequence[str]) -> Verdict: ...


class EvidenceVerifier:
    """Offline verifier from exact facts, content coverage and embedding similarity."""

    name = "evidence-verifier-v1"

    def __init__(self, embedder: Embedder, *, min_support: float = DEFAULT_MIN_SUPPORT) -> None:
        if not 0.0 < min_support <= 1.0:
            raise ValueError("min_support must lie in (0, 1]")
        self.embedder = embedder
        self.min_support = min_support

    async def verify(self, sentence: str, evidence: Sequence[str]) -> Verdict:
        settled = settled_verdict(sentence, evidence)
        if settled is not None:
            return settled
        text = " ".join(evidence)
        words = content_words(sentence)
        covered = len(words & content_words(text)) / len(words) if words else 0.0
        pieces = evidence_sentences(evidence)
        similarity, closest = await self._closest(sentence, pieces)
        score = 0.5 * covered + 0.5 * min(1.0, max(0.0, similarity))
        reasons = exact_mismatches(sentence, evidence, pieces)
        if negated(sentence) != negated(closest):
            reasons.append("negation differs from the closest evidence sentence")
        if wider_scope(sentence, closest):
            reasons.append("claims all/every where the evidence does not")
        added = added_qualifiers(sentence, text)
        if added:
            reasons.append(f"adds {', '.join(sorted(added))}, which the cited evidence does not say")
        swapped = swapped_names(sentence, closest)
        if swapped:
            reasons.append(f"names {', '.join(sorted(swapped))} where the closest evidence names another")
        if score < self.min_support:
            detail = f"coverage {covered:.2f}, similarity {similarity:.2f}"
            reasons.append(f"support {score:.2f} below {self.min_support:.2f} ({detail})")
        return Verdict(not reasons, score, tuple(reasons))

    async def _closest(self, sentence: str, pieces: Sequence[str]) -> tuple[float, str]:
        """The closest evidence sentence and its cosine (evidence split as at ingest, so the
        stored sentence vectors are reused)."""
        vectors = await self.embedder.embed([sentence, *pieces])
        cosines = vectors[1:] @ vectors[0]
        best = int(cosines.argmax())
        return float(cosines[best]), pieces[best]


def settled_verdict(sentence: str, evidence: Sequence[str]) -> Verdict | None:
    """The verdict any verifier gives before weighing support, or None when support must be weighed:
    an empty sentence, no evidence and an instruction to the bot fail; a verbatim quote passes."""
    if not sentence.strip():
        return Verdict(False, 0.0, ("empty sentence",))
    if not " ".join(evidence).strip():
        return Verdict(False, 0.0, ("no evidence cited",))
    if looks_like_instruction(sentence):
        return Verdict(False, 0.0, ("reads as an instruction to the bot, not a statement of fact",))
    if quoted(sentence, evidence):
        return Verdict(True, 1.0, ("quoted verbatim from the cited evidence",))
    return None


CONTRADICTIONS = (
    "is stated for another subject",
    "negation differs",
    "claims all/every",
    "where the closest evidence names another",
)
"""The offline checks' reasons that say the cited evidence contradicts the sentence (not merely lacks
it): such a sentence is wrong, not mis-cited, and is not looked for elsewhere (rag/pipeline/rescue.py)."""

HARD_FAILURES = (
    "empty sentence",
    "no evidence cited",
    "reads as an instruction",
    "is not in the cited evidence",
    "which the cited evidence does not say",
    *CONTRADICTIONS,
)
"""The reasons no model may overrule (a judge, a cross-encoder): an instruction to the bot, a value,
code or name the evidence lacks, an added qualifier, and every contradiction."""


def contradicts_evidence(reasons: Sequence[str]) -> bool:
    return any(marker in reason for reason in reasons for marker in CONTRADICTIONS)


def hard_failure(verdict: Verdict) -> bool:
    return not verdict.passed and any(marker in reason for reason in verdict.reasons for marker in HARD_FAILURES)


def evidence_sentences(evidence: Sequence[str]) -> list[str]:
    """The cited passages split into sentences as at ingest (a passage with none stays whole)."""
    return [piece for passage in evidence for piece in (split_sentences(passage) or [passage])]


def exact_mismatches(sentence: str, evidence: Sequence[str], pieces: Sequence[str]) -> list[str]:
    """Reasons no score may overrule: each value, product code and name of `sentence` the evidence
    does not state, and each value it states only for another subject or variant (`pieces`: the
    evidence's sentences, from `evidence_sentences`)."""
    missing = missing_facts(sentence, " ".join(evidence))
    reasons = [f"{kind} {token!r} is not in the cited evidence" for kind, token in missing]
    reasons.extend(
        f"{surface!r} is stated for another subject in the evidence" for surface in misattributed(sentence, pieces)
    )
    return reasons


def _plain(text: str) -> str:
    return " ".join(re.sub(r"[*_`~]", "", text).split()).lower()


def quoted(sentence: str, evidence: Sequence[str]) -> bool:
    """The sentence appears word for word in one cited passage (Markdown and spacing aside)."""
    needle = _plain(sentence).rstrip(".!?;: ")
    return len(needle) >= 20 and any(needle in _plain(passage) for passage in evidence)


def missing_facts(sentence: str, evidence: str) -> list[tuple[str, str]]:
    """(kind, surface) of every value, code and name in `sentence` that `evidence` does not state."""
    missing: list[tuple[str, str]] = []
    stated = values(evidence)
    keys = {v.key for v in stated}
    amounts = {v.amount for v in stated}
    for v in values(sentence):
        if v.key in keys or (v.kind == "number" and v.amount in amounts):
            continue
        missing.append(("value", v.surface))
    evidence_codes = codes(evidence)
    missing.extend(("code", c) for c in sorted(codes(sentence) - evidence_codes))
    lowered = evidence.lower()
    missing.extend(("name", n) for n in sorted(names(sentence)) if n.lower() not in lowered)
    return missing
