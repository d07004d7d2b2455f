"""Real evidence for the answer-stage contracts: small Markdown documents, ingested and retrieved.

The reranker and synthesizer contracts run on passages the real ingest pipeline chunked and the
real hybrid retriever found (with their stored sentence vectors), never on hand-built `Passage`s,
so a model-backed implementation sees what it will see in production.

The documents set the traps the contracts are about: a passage that mentions the Team plan's user
limit in passing next to the one that states it, two sibling products stating different values for
the same limit, and facts written as Markdown list items with bold text.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from rag.model.evidence import Query
from rag.model.types import AccessScope, Passage
from rag.runtime import Candor
from rag.store.evidence import term_frequencies
from rag.store.postgres import KnowledgeBase

DOCUMENTS = {
    "team-plan.md": """---
title: Team Plan
---
# Team plan

The Team plan costs $15 per user per month on monthly billing.
The Team plan costs $13 per user per month on annual billing.
The Team plan supports a maximum of 50 users.
The Team plan includes 100 monitors and the Beacon product.
""",
    "our-plans.md": """---
title: Our Plans
---
# Our plans

The Team plan is popular with growing teams and has a generous user limit.
Team plan admins can add and remove users whenever their team changes.
Our sales team can help you choose the right plan.
""",
    "beacon-spec.md": """---
title: Beacon Product Specification
---
# Beacon product specification

Beacon is the Northwind monitoring product for small teams.
The minimum check interval in Beacon is 60 seconds.
Beacon keeps check results for 90 days.
""",
    "beacon-pro-spec.md": """---
title: Beacon Pro Product Specification
---
# Beacon Pro product specification

Beacon Pro is the Northwind monitoring product for larger engineering organisations.
The minimum check interval in Beacon Pro is 30 seconds.
Beacon Pro keeps check results for 365 days.
""",
    "leave-policy.md": """---
title: Leave Policy
---
# Leave policy

## Annual leave

Every full-time employee gets 25 days of paid annual leave per calendar year.
Up to 5 unused days can be carried over into the next year.

## Parental leave

Parental leave is paid at the full salary:

- **Primary carers** receive 16 weeks of paid parental leave
- **Secondary carers** receive 4 weeks of paid parental leave

Parental leave must start within 12 months of the birth or adoption.
""",
}

TEAM_PLAN_USERS = "What is the user limit on the Team plan?"
BEACON_PRO_INTERVAL = "What is the minimum check interval in Beacon Pro?"
PRIMARY_CARER_LEAVE = "How many weeks of parental leave do primary carers get?"
ANNUAL_LEAVE = "How many days of annual leave does a full-time employee get?"
PENSION = "How much does the company pay into my pension each month?"
"""No document says anything about pensions."""


async def ingest_corpus(candor: Candor, folder: Path) -> KnowledgeBase:
    """`DOCUMENTS` in a fresh knowledge base, with the planner's word statistics refreshed."""
    kb = await candor.knowledge_base(f"contract-{uuid.uuid4().hex[:10]}", create=True)
    assert kb is not None
    for name, text in DOCUMENTS.items():
        (folder / name).write_text(text)
    report = await candor.ingestor().ingest([folder], kb=kb)
    assert (report.added, report.ok) == (len(DOCUMENTS), True)
    await candor.store.analyze()
    return kb


async def retrieve(candor: Candor, kb: KnowledgeBase, text: str, *, k: int = 10) -> tuple[Query, list[Passage]]:
    """The query as the pipeline probes it (vector and word rarity) and the passages retrieved for it."""
    vector = (await candor.embedder.embed([text]))[0]
    query = Query(text, vector, await term_frequencies(candor.store, text, {kb.name}))
    passages = await candor.retriever.run(text, AccessScope(frozenset(), frozenset({kb.name})), k=k, vector=vector)
    return query, passages


def document_of(passage: Passage) -> str:
    """The file name a passage came from ("beacon-pro-spec.md")."""
    return Path(passage.document).name
