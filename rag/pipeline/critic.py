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

from collections.abc import Sequence

from rag.model.answers import Verdict
from rag.model.ports import Embedder
from rag.text.claims import added_qualifiers, negated, swapped_names, wider_scope
from rag.text.exact_checks import evidence_sentences, exact_mismatches, settled_verdict
from rag.text.facts import content_words

DEFAULT_MIN_SUPPORT = 0.6


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
