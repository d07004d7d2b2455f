"""Gate `writer_conflicts`: did the cited passages confirm the conflicts a model writer noted?"""

from __future__ import annotations

from collections.abc import Sequence

from rag.model.answers import GateOutcome
from rag.pipeline.writer_conflicts import Checked


def writer_conflicts_gate(checked: Sequence[Checked], number: int) -> GateOutcome:
    confirmed = sum(c.found is not None for c in checked)
    details = {
        "notes": [
            {"note": c.note.note, "values": list(c.note.values), "confirmed": c.found is not None, "reason": c.reason}
            for c in checked
        ]
    }
    return GateOutcome("writer_conflicts", confirmed == len(checked), confirmed / len(checked), number, details)
