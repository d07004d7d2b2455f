"""Self-consistency, an optional gate for high-stakes knowledge bases: would the writer say it again?

For a question answered from a knowledge base named in `CANDOR_SELF_CONSISTENCY_KBS`, the model
writer is asked for `samples` more drafts at a higher temperature (one request, `n` choices). The
facts of the delivered sentences (amounts, durations, dates, counts, codes) are compared with each
sample's: a fact the majority of samples do not state is a disagreement, and the answer is
delivered as low confidence. With a judge model configured (`CANDOR_JUDGE=openai:...`), the judge
compares them instead (`LLMFactComparer`: wording aside, the same numbers, names, conditions?); if
it fails, the offline comparison decides. The samples' tokens and cost are in the answer's model calls. Off by
default; it only applies with a sampling (model) writer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag.model.answers import GateOutcome
from rag.model.evidence import Draft
from rag.text.facts import values
from rag.text.names import codes

SAMPLE_TEMPERATURE = 0.7


def facts(text: str) -> set[tuple[str, str]]:
    """What two phrasings of the same answer must share: values (normalised) and product codes."""
    return {v.key for v in values(text)} | {("code", c) for c in codes(text)}


def consistency_gate(delivered: Sequence[str], samples: Sequence[Draft], number: int) -> GateOutcome:
    """Passed when every fact of the delivered sentences is stated by a majority of the samples."""
    stated = set().union(*(facts(text) for text in delivered)) if delivered else set()
    per_sample = [set().union(*(facts(s.text) for s in d.sentences)) if d.sentences else set() for d in samples]
    disagreements = sorted(
        f"{kind} {amount}"
        for kind, amount in stated
        if sum((kind, amount) in s for s in per_sample) * 2 <= len(samples)
    )
    agreeing = sum(stated <= s for s in per_sample)
    score = agreeing / len(samples) if samples else 0.0
    details = {
        "samples": len(samples),
        "samples_agreeing": agreeing,
        "facts": sorted(f"{kind} {amount}" for kind, amount in stated),
        "not_in_most_samples": disagreements,
        "abstaining_samples": sum(not d.sentences for d in samples),
    }
    return GateOutcome("self_consistency", not disagreements, score, number, details)


def judged_gate(comparisons: Sequence[Any], samples: Sequence[Draft], judge: str, number: int) -> GateOutcome:
    """Passed when a majority of the samples state the answer's facts, as the judge model reads them."""
    agreeing = sum(bool(c.same_facts) for c in comparisons)
    differing = sorted({fact for c in comparisons if not c.same_facts for fact in c.differing})
    details = {
        "samples": len(samples),
        "samples_agreeing": agreeing,
        "judge": judge,
        "not_in_most_samples": differing if agreeing * 2 <= len(samples) else [],
        "differing_in_some": differing,
        "abstaining_samples": sum(not d.sentences for d in samples),
    }
    score = agreeing / len(samples) if samples else 0.0
    return GateOutcome("self_consistency", agreeing * 2 > len(samples), score, number, details)


def not_run_gate(reason: str, number: int) -> GateOutcome:
    """The samples could not be had (the model failed): not run is not a disagreement, so the gate
    passes and the answer keeps its route; the reason is recorded."""
    return GateOutcome("self_consistency", True, 0.0, number, {"not_run": reason, "samples": 0})
