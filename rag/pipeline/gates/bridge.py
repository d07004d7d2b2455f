"""Gate `bridge`: did the second hop of each multi-hop part lead to an answer?"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag.model.answers import GateOutcome
from rag.model.evidence import Draft
from rag.pipeline.bridge import Bridged


def bridge_gate(parts: Sequence[str], bridges: Mapping[int, Bridged], draft: Draft, number: int) -> GateOutcome:
    answered = {s.part for s in draft.sentences}
    details = {
        "parts": [
            {"part": parts[i], "bridge": b.bridge.name, "asked": b.bridge.question, "answered": i in answered}
            for i, b in bridges.items()
        ]
    }
    share = sum(i in answered for i in bridges) / len(bridges)
    return GateOutcome("bridge", share > 0, share, number, details)
