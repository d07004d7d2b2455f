"""The demo behind `make demo`: ingest the sample handbook into the embedded database, then ask it
questions through the full gated pipeline and print each answer with its citations, conflict notes
and route: answered, answered with an unanswered part, a dated conflict, a false premise, an
unanswerable question, and a restricted one asked with and without its access group.

Runs against CANDOR_HOME (default: the platform's data directory; /var/lib/candor as root).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from bot.render.text import render_text
from rag.config import load_settings
from rag.errors import CandorError
from rag.model.answers import Question
from rag.model.types import AccessScope
from rag.runtime import open_candor

SAMPLE = Path(__file__).resolve().parents[1] / "sample" / "handbook"
KB = "handbook"
QUESTIONS = [
    ("How many days of annual leave do full-time employees get?", ()),
    ("How much does the Team plan cost per user per month on monthly billing?", ()),
    ("What is the minimum check interval in Beacon Pro?", ()),
    ("What are the core hours for remote employees, and is there a gym or wellness allowance?", ()),
    ("How many hosts can the NW-900 collector monitor?", ()),
    ("Is there a pension contribution?", ()),
    ("What is the salary band for an L3 Senior Software Engineer?", ()),
    ("What is the salary band for an L3 Senior Software Engineer?", ("hr-confidential",)),
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
        await candor.warm_up()
        for question, groups in QUESTIONS:
            scope = AccessScope(frozenset(groups), frozenset([KB]))
            answer = await candor.answer(Question(question, scope=scope, platform="cli"))
            who = f"  [as {', '.join(groups)}]" if groups else "  [public]"
            print(f"Q: {question}{who}")
            print("   " + render_text(answer).replace("\n", "\n   "))
            print()
    print('Ask your own:   .venv/bin/candor ask "What is the uptime credit for Business customers?" --kb handbook')
    print("Or chat:        .venv/bin/candor serve   (then open http://127.0.0.1:8080/)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main()))
    except CandorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
