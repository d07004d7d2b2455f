"""Gate `premise`: names and codes the question takes for granted that no retrieved passage mentions.

A question about "the Platinum plan" scores high against the plans that exist, so retrieval
scores cannot catch it; an exact mention can. The challenge says what the documents describe
instead (`alternatives`), so the asker can correct the name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from rag.model.answers import GateOutcome
from rag.model.types import Passage
from rag.text.facts import STOP_WORDS
from rag.text.names import codes, mentions, names, premise_terms


def unknown_names(part: str, passages: Sequence[Passage]) -> tuple[str, ...]:
    """Names and codes the question uses that no passage mentions: a premise the documents lack.

    A question about "the Platinum plan" scores high against the plans that exist, so retrieval
    scores cannot catch it; an exact mention can.
    """
    texts = [f"{p.title}.\n{p.heading}.\n{p.text}" for p in passages]
    unknown = [
        forms[0] for forms in premise_terms(part) if not any(mentions(text, form) for text in texts for form in forms)
    ]
    # "L3" inside "L3 Senior Software Engineer" is one unknown thing, not two
    return tuple(term for term in unknown if not any(term != other and term in other for other in unknown))


def alternatives(part: str, unknown: Sequence[str], passages: Sequence[Passage]) -> tuple[str, ...]:
    """What the documents describe instead of an unknown name: the same kind of thing ("the Platinum
    plan" → the plans the passages name) or codes of the same family ("NW-900" → "NW-200")."""
    texts = [p.text for p in passages]
    found: dict[str, None] = {}
    for term in unknown:
        kind = re.search(rf"{re.escape(term)}\s+(\w+)", part)
        if term in codes(term):
            prefix = re.match(r"[A-Z]+", term)
            for text in texts:
                for code in sorted(codes(text)):
                    if prefix and code.startswith(prefix.group(0)) and code != term:
                        found.setdefault(code)
        elif kind and kind.group(1).lower() not in STOP_WORDS:
            noun = kind.group(1)
            pattern = re.compile(rf"\b([A-Z][\w-]*(?: [A-Z][\w-]*)*) {re.escape(noun)}s?\b")
            for text in texts:
                for m in pattern.finditer(text):
                    name = re.sub(r"^(?:The|A|An|Each|Every|This|That|Our|Your)\b\s*", "", m.group(1))
                    if name:
                        found.setdefault(f"the {name} {noun}")
        else:
            first, size = term.split()[0], len(term.split())
            for text in texts:
                for name in sorted(names(text)):
                    if name.split()[0] == first and len(name.split()) == size and name != term:
                        found.setdefault(name)
    return tuple(found)[:4]


def premise_gate(parts: Sequence[str], unknown: Mapping[int, tuple[str, ...]], number: int) -> GateOutcome:
    asked = sum(len(premise_terms(p)) for p in parts)
    missing = sum(len(v) for v in unknown.values())
    score = 1.0 - missing / asked if asked else 1.0
    details = {"parts": [{"part": p, "unknown": list(unknown.get(i, ()))} for i, p in enumerate(parts)]}
    return GateOutcome("premise", not unknown, score, number, details)
