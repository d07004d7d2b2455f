"""The offline verifier on sentences real language models wrote (issue 38): eval/verifier/model_sentences.jsonl.

Each line is one sentence a model wrote in `benchmarks/model_answers.py` (Qwen2.5-Coder 1.5B, as
naive RAG's answer or as a sentence Candor delivered), with the passages it cites, labelled by a
helper that saw only the sentence and its evidence (never Candor's code, rules or verdicts):
"supported" (every value and name stated by the evidence for the same thing), "unsupported" (with
the kind: a value missing, a value the evidence gives for another thing, an entity missing or
swapped, an added detail or scope, a negation) or "not-a-claim" (a list number, a lead-in; left out).

Reported: how many unsupported sentences the verifier passes (false accepts: what would reach a
user) and how many supported ones it rejects (false rejects: right answers lost), per kind.

    HF_HUB_OFFLINE=1 python benchmarks/model_sentences.py            # the offline verifier
    HF_HUB_OFFLINE=1 python benchmarks/model_sentences.py --scorer   # model_answers.py's independent check
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag.backends.embeddings import build_embedder
from rag.config import load_settings, offline_model_environment
from rag.model.ports import Verifier
from rag.pipeline.critic import EvidenceVerifier

LABELLED = Path(__file__).resolve().parents[1] / "eval" / "verifier" / "model_sentences.jsonl"


@dataclass(frozen=True, slots=True)
class Labelled:
    id: str
    writer: str
    sentence: str
    evidence: tuple[str, ...]
    label: str
    kind: str | None


def load(path: Path = LABELLED) -> list[Labelled]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [
        Labelled(r["id"], r["writer"], r["sentence"], tuple(e["text"] for e in r["evidence"]), r["label"], r["kind"])
        for r in rows
        if r["label"] != "not-a-claim"
    ]


@dataclass(frozen=True, slots=True)
class Confusion:
    false_accepts: tuple[Labelled, ...]
    false_rejects: tuple[Labelled, ...]
    unsupported: int
    supported: int


async def confusion(verifier: Verifier, pairs: list[Labelled]) -> Confusion:
    verdicts = [(await verifier.verify(p.sentence, list(p.evidence))).passed for p in pairs]
    accepts = tuple(p for p, ok in zip(pairs, verdicts, strict=True) if ok and p.label == "unsupported")
    rejects = tuple(p for p, ok in zip(pairs, verdicts, strict=True) if not ok and p.label == "supported")
    return Confusion(
        accepts, rejects, sum(p.label == "unsupported" for p in pairs), sum(p.label == "supported" for p in pairs)
    )


def scorer_agreement(pairs: list[Labelled]) -> None:
    """The benchmark's independent value check (benchmarks/model_answers.py, `stands_for`) against the
    labels, on the sentences that state a value (the only ones it reads)."""
    from benchmarks.model_answers import facts, stands_for

    valued = [p for p in pairs if facts(p.sentence)]
    flagged = [p for p in valued if not stands_for(p.sentence, p.evidence)]
    bad = [p for p in valued if p.label == "unsupported"]
    print(f"{len(valued)} labelled sentences state a value; {len(bad)} of them are unsupported")
    print(f"unsupported the scorer flags: {sum(p.label == 'unsupported' for p in flagged)}/{len(bad)}")
    print(f"supported the scorer flags: {sum(p.label == 'supported' for p in flagged)}/{len(valued) - len(bad)}")
    for p in flagged:
        print(f"  flagged {p.id} ({p.label}): {p.sentence}")


async def main() -> None:
    offline_model_environment()
    pairs = load()
    if "--scorer" in sys.argv:
        scorer_agreement(pairs)
        return
    verifier = EvidenceVerifier(build_embedder(load_settings()))
    found = await confusion(verifier, pairs)
    print(f"{len(pairs)} labelled sentences ({found.supported} supported, {found.unsupported} unsupported)")
    print(f"unsupported the verifier passes (false accepts): {len(found.false_accepts)}/{found.unsupported}")
    print(f"supported the verifier rejects (false rejects): {len(found.false_rejects)}/{found.supported}")
    print("false accepts by kind:", dict(Counter(p.kind for p in found.false_accepts)))
    for p in found.false_accepts:
        print(f"  accepted {p.id} [{p.kind}]: {p.sentence}")
    for p in found.false_rejects:
        print(f"  rejected {p.id}: {p.sentence}")


if __name__ == "__main__":
    asyncio.run(main())
