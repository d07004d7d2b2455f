"""The demo behind `make demo`: ingest the sample handbook into the embedded database, then ask it
questions and show the passages Candor would answer from, with their sources and dates.

Runs against CANDOR_HOME (default: the platform's data directory; /var/lib/candor as root).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from rag.config import load_settings
from rag.errors import CandorError
from rag.runtime import open_candor
from rag.types import AccessScope

SAMPLE = Path(__file__).resolve().parents[1] / "sample" / "handbook"
KB = "handbook"
QUESTIONS = [
    ("How many days of annual leave do full-time employees get?", ()),
    ("What is the monthly price of the Team plan?", ()),
    ("How long does Beacon Pro keep monitoring data?", ()),
    ("Which plan includes single sign-on?", ()),
    ("What is the salary band for an L3 engineer?", ()),
    ("What is the salary band for an L3 engineer?", ("hr-confidential",)),
]


async def main() -> int:
    settings = load_settings()
    print(f"Candor demo: knowledge base '{KB}' in {settings.home}")
    async with open_candor(settings) as candor:
        kb = await candor.knowledge_base(KB, create=True)
        assert kb is not None
        report = await candor.ingestor().ingest([SAMPLE], kb=kb)
        print(
            f"ingested {SAMPLE}: {report.added} added, {report.updated} updated, {report.unchanged} unchanged, "
            f"{len(report.skipped)} skipped; {report.chunks} chunks, {report.embedded} texts embedded\n"
        )
        for question, groups in QUESTIONS:
            scope = AccessScope(frozenset(groups), frozenset([KB]))
            passages = await candor.retriever.run(question, scope, k=2)
            who = f"  [as {', '.join(groups)}]" if groups else "  [public]"
            print(f"Q: {question}{who}")
            for passage in passages:
                dated = f", {passage.effective_date}" if passage.effective_date else ""
                text = " ".join(passage.text.split())
                print(f"   {passage.dense_score:.2f}  {Path(passage.document).name}{dated} | {passage.heading}")
                print(f"         {text[:160]}{'…' if len(text) > 160 else ''}")
            print()
    print('Try it yourself:  .venv/bin/candor search "What is the uptime credit for Business customers?" --kb handbook')
    return 0


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main()))
    except CandorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
