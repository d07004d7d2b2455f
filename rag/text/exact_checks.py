"""The exact checks every verifier shares, so that no model can overrule an exact fact: a
sentence's values, product codes and names must be in the evidence it cites, stated for the same
subject; an empty sentence, missing evidence and an instruction to the bot fail, a verbatim quote
passes (`settled_verdict`). The offline critic (rag/pipeline/critic.py), the LLM judge and the
cross-encoder verifier all run them first."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.ingest.sentences import split_sentences
from rag.model.answers import Verdict
from rag.text.claims import misattributed
from rag.text.facts import values
from rag.text.names import codes, names
from rag.text.quotable import looks_like_instruction


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


MISATTRIBUTED = "is stated for another subject"
"""A value the cited evidence gives, but for another subject or variant (another plan's price)."""

CONTRADICTIONS = (
    MISATTRIBUTED,
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


def misattributes(reasons: Sequence[str]) -> bool:
    return any(MISATTRIBUTED in reason for reason in reasons)


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
