"""Gate `completeness`: every part of the question answered?"""

from __future__ import annotations

from rag.model.answers import GateOutcome
from rag.model.evidence import PASSAGES_CONSIDERED, PartEvidence
from rag.pipeline.attempt import Attempt
from rag.text.facts import clean_sentence
from rag.text.quotable import readable


def completeness_gate(attempt: Attempt, number: int) -> GateOutcome:
    """Which parts got supported content; with each part's best readable sentence score, so the
    answer threshold can be calibrated from the gate log alone."""
    answered = {c.part for c in attempt.supported}
    status = [
        {
            "part": p,
            "answered": i in answered,
            "best_sentence_score": round(best_sentence(attempt.evidence[i]), 4),
            **(focus.as_json() if (focus := attempt.focus.get(i)) else {}),
        }
        for i, p in enumerate(attempt.parts)
    ]
    share = len(answered) / len(attempt.parts) if attempt.parts else 0.0
    return GateOutcome("completeness", share == 1.0, share, number, {"parts": status})


def best_sentence(part: PartEvidence) -> float:
    scores = [
        s.score for r in part.ranked[:PASSAGES_CONSIDERED] for s in r.sentences if readable(clean_sentence(s.text))
    ]
    return max(scores, default=-1.0)
