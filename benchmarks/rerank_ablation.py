"""Reranker ablation: hit@1 / hit@5 of the retrieval order against the order after the reranker.

Sets: sample/dev.yaml and sample/golden.yaml over the cached handbook home (answerable questions
with golden sources), and the 508 answerable SQuAD 2.0 questions over all 124 paragraphs at once
(the per-paragraph home of benchmarks/squad_kb.py, searched across every knowledge base). The
shortlist is the pipeline's (CANDOR_SHORTLIST, 20); a hit is the gold document (handbook) or
paragraph (SQuAD) at rank 1 / within the first 5.

    python benchmarks/rerank_ablation.py
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import handbook_kb
from benchmarks.common import REPO, load_squad
from benchmarks.squad_kb import ensure_knowledge_bases, kb_name, prepare_home
from rag.config import load_settings
from rag.insights.evaluation.golden import load_golden
from rag.insights.evaluation.run import stem
from rag.model.types import AccessScope, Passage
from rag.runtime import Candor, open_candor

COMMAND = "HF_HUB_OFFLINE=1 python benchmarks/rerank_ablation.py"


class Tally:
    def __init__(self) -> None:
        self.n = 0
        self.counts = {"retrieval@1": 0, "retrieval@5": 0, "rerank@1": 0, "rerank@5": 0}

    def add(self, gold: set[str], retrieved: Sequence[str], reranked: Sequence[str]) -> None:
        self.n += 1
        self.counts["retrieval@1"] += bool(retrieved[:1]) and retrieved[0] in gold
        self.counts["retrieval@5"] += bool(set(retrieved[:5]) & gold)
        self.counts["rerank@1"] += bool(reranked[:1]) and reranked[0] in gold
        self.counts["rerank@5"] += bool(set(reranked[:5]) & gold)

    def line(self, label: str) -> str:
        cells = "  ".join(f"{k} {v}/{self.n} ({v / self.n:.3f})" for k, v in self.counts.items())
        return f"{label:<40} {cells}"


async def orders(candor: Candor, text: str, scope: AccessScope, key: str) -> tuple[list[str], list[str]]:
    k = candor.settings.shortlist
    retrieved = await candor.retriever.run(text, scope, k=k)
    reranked = [r.passage for r in await candor.rerank(text, scope, k=k)]

    def keys(passages: Sequence[Passage]) -> list[str]:
        return [stem(p.document) if key == "document" else p.knowledge_base for p in passages]

    return keys(retrieved), keys(reranked)


async def handbook() -> list[str]:
    lines = []
    settings = load_settings(home=handbook_kb.prepare_home(), database_url=None)
    async with open_candor(settings) as candor:
        await handbook_kb.ensure_handbook(candor)
        for name in ("dev", "golden"):
            tally = Tally()
            for item in load_golden(REPO / "sample" / f"{name}.yaml"):
                if not item.sources:
                    continue
                retrieved, reranked = await orders(candor, item.question, handbook_kb.scope_for(item), "document")
                tally.add(set(item.sources), retrieved, reranked)
            lines.append(tally.line(f"sample/{name}.yaml"))
    return lines


async def squad() -> list[str]:
    paragraphs, questions = load_squad()
    settings = load_settings(home=prepare_home(), database_url=None)
    tally = Tally()
    async with open_candor(settings) as candor:
        await ensure_knowledge_bases(candor, paragraphs, progress=lambda line: None)
        everything = AccessScope.public()
        for q in questions:
            if q.answerable:
                retrieved, reranked = await orders(candor, q.question, everything, "kb")
                tally.add({kb_name(q.paragraph_id)}, retrieved, reranked)
    return [tally.line("squad2-1000 answerable, all paragraphs")]


def main() -> None:
    lines = asyncio.run(handbook()) + asyncio.run(squad())
    print("\n".join(lines))
    print(f"\nreproduce: {COMMAND}")


if __name__ == "__main__":
    main()
