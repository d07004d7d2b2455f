"""Gate `rescue`: did any sentence the critic rejected find support in a passage of its own?"""

from __future__ import annotations

from collections.abc import Sequence

from rag.model.answers import GateOutcome
from rag.pipeline.rescue import Rescue


def rescue_gate(rescues: Sequence[Rescue], number: int) -> GateOutcome:
    saved = [r for r in rescues if r.rescued]
    details = {
        "sentences": [
            {
                "sentence": r.sentence,
                "rescued": r.rescued,
                **({"requoted": r.quote} if r.quote is not None else {}),
                "passage": r.passage.document if r.passage is not None else None,
                "score": round(r.score, 4),
                "reasons": list(r.reasons),
            }
            for r in rescues
        ]
    }
    return GateOutcome("rescue", bool(saved), len(saved) / len(rescues) if rescues else 0.0, number, details)
