"""A relaxed re-check of a question the pipeline abstained on: might the knowledge base hold it after all?

The answer pipeline is strict on purpose: a part is answered only by a sentence whose rerank score
reaches the answer threshold, within a shortlist of `CANDOR_SHORTLIST` passages. A wrong abstention
(the documents do hold the answer, phrased otherwise, or ranked just outside the shortlist) looks
the same in the gate log as a real gap. `recheck` asks again, more leniently, and labels the
question for a person reviewing gaps (`candor gaps`):

- a much larger shortlist (three times the default `CANDOR_SHORTLIST`);
- two probes: the question as asked and its content words only (`retry_query`, the pipeline's own
  retry form), so full-text search weighs the rare words alone;
- the best readable sentence's rerank score over both probes, compared with a relaxed threshold
  below the answer threshold (`relaxed_threshold` in rag/calibration.json, chosen on sample/dev.yaml
  and the SQuAD calibration half by benchmarks/relaxed_recheck.py);
- but a question naming something (a plan, a product, a code: `rag.pipeline.gates.premise.unknown_names`) that no
  passage of the relaxed shortlist mentions is a true gap whatever its score: "the Platinum plan"
  scores high against the plans that exist, and full-text search would have found the name if any
  document used it. The pipeline's premise gate asks the same question of its own shortlist.

`possibly_answerable` means "a person should look": it is tuned to catch most answerable questions.
`true_gap` means nothing under relaxed retrieval came close: tuned to be reliable.

The re-check reads with the scope it is given, never more: a restricted document the asker could
not read is never evidence (the retriever filters by scope, as for an answer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from rag.calibration import calibrated
from rag.model.evidence import Ranked, ScoredSentence
from rag.model.types import AccessScope
from rag.pipeline.flow import retry_query
from rag.pipeline.gates.premise import unknown_names
from rag.text.facts import clean_sentence
from rag.text.quotable import readable

DEFAULT_SHORTLIST = 20
"""The default `CANDOR_SHORTLIST`; callers holding settings pass `3 * settings.shortlist` as `k`."""
RELAXED_K = 3 * DEFAULT_SHORTLIST
EVIDENCE = 3
"""Passages kept as evidence: enough for a person to see where to look."""
FALLBACK_THRESHOLD = 0.45
"""Used only before benchmarks/relaxed_recheck.py has written `relaxed_threshold`."""

Label = Literal["true_gap", "possibly_answerable"]


class Ranking(Protocol):
    """The shortlist for a text as the answer pipeline orders it (`rag.runtime.Candor` is one)."""

    async def rerank(self, text: str, scope: AccessScope, *, k: int | None = None) -> list[Ranked]: ...


@dataclass(frozen=True, slots=True)
class RecheckEvidence:
    document: str
    title: str
    heading: str
    sentence: str
    score: float

    def as_json(self) -> dict[str, Any]:
        return {
            "document": self.document,
            "title": self.title,
            "heading": self.heading,
            "sentence": self.sentence,
            "score": round(self.score, 4),
        }


@dataclass(frozen=True, slots=True)
class Recheck:
    label: Label
    score: float
    """The best evidence score found under relaxed retrieval (-1 when nothing was found)."""
    threshold: float
    """The relaxed threshold it was compared with."""
    evidence: tuple[RecheckEvidence, ...]
    """Best first; one per passage."""
    unknown_names: tuple[str, ...] = ()
    """Names and codes the question uses that no passage of the relaxed shortlist mentions."""

    def as_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "score": round(self.score, 4),
            "threshold": self.threshold,
            "unknown_names": list(self.unknown_names),
            "evidence": [e.as_json() for e in self.evidence],
        }


def relaxed_threshold() -> float:
    """The calibrated relaxed threshold (rag/calibration.json), or the fallback before calibration."""
    return calibrated("relaxed_threshold", FALLBACK_THRESHOLD)


def probes(text: str) -> tuple[str, ...]:
    """The question as asked and its content-words form, once each."""
    words = retry_query(text)
    return (text,) if words.strip() == text.strip() else (text, words)


async def recheck(
    ranking: Ranking, text: str, scope: AccessScope, *, threshold: float | None = None, k: int = RELAXED_K
) -> Recheck:
    """Re-check `text` under relaxed retrieval within `scope`; see the module docstring."""
    tau = relaxed_threshold() if threshold is None else threshold
    rankings = [await ranking.rerank(probe, scope, k=k) for probe in probes(text)]
    evidence = best_evidence(rankings)
    score = evidence[0].score if evidence else -1.0
    unknown = unknown_names(text, [r.passage for ranked in rankings for r in ranked])
    label: Label = "possibly_answerable" if score >= tau and not unknown else "true_gap"
    return Recheck(label, score, tau, evidence[:EVIDENCE], unknown)


def best_evidence(rankings: Sequence[Sequence[Ranked]]) -> tuple[RecheckEvidence, ...]:
    """Each passage once, with its best readable sentence over every probe, best first.

    Readable sentences only, as the pipeline's answer threshold sees them (`_best_sentence`): a
    heading or a list intro scoring high is not an answer a person could be pointed to."""
    best: dict[int, tuple[Ranked, ScoredSentence]] = {}
    for ranked in rankings:
        for r in ranked:
            sentence = _best_readable(r.sentences)
            if sentence is None:
                continue
            seen = best.get(r.passage.chunk_id)
            if seen is None or sentence.score > seen[1].score:
                best[r.passage.chunk_id] = (r, sentence)
    ordered = sorted(best.values(), key=lambda pair: (-pair[1].score, pair[0].passage.chunk_id))
    return tuple(
        RecheckEvidence(r.passage.document, r.passage.title, r.passage.heading, clean_sentence(s.text), s.score)
        for r, s in ordered
    )


def _best_readable(sentences: Sequence[ScoredSentence]) -> ScoredSentence | None:
    return max((s for s in sentences if readable(clean_sentence(s.text))), key=lambda s: s.score, default=None)
