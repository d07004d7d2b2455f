"""Closing the loop: questions handed to a person (`handoffs`) and experts' answers kept as documents
(`curated`). `Loop` is what the chat adapters and `candor answers` use: one object over both, which
also chooses the knowledge base a curated answer goes to."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from rag.errors import ConfigError
from rag.loop.curated import CuratedAnswers
from rag.loop.handoffs import Handoffs
from rag.model.loop import CuratedAnswer, CuratedDraft, Handoff, HandoffReason
from rag.store.postgres import KnowledgeBase

FindBase = Callable[[str], Awaitable[KnowledgeBase | None]]


class Loop:
    def __init__(self, handoffs: Handoffs, curated: CuratedAnswers, *, knowledge_base: FindBase, default_kb: str):
        self.handoffs = handoffs
        self.curated = curated
        self._knowledge_base = knowledge_base
        self.default_kb = default_kb

    async def hand_off(
        self, trace_id: str, *, platform: str, asker: str, reason: HandoffReason, reply_to: Mapping[str, Any]
    ) -> tuple[Handoff, bool]:
        return await self.handoffs.open(trace_id, platform=platform, asker=asker, reason=reason, reply_to=reply_to)

    async def handoff(self, handoff_id: str) -> Handoff:
        return await self.handoffs.get(handoff_id)

    async def claim_triage(self, handoff_id: str) -> bool:
        return await self.handoffs.claim_triage(handoff_id)

    async def unclaim_triage(self, handoff_id: str) -> None:
        await self.handoffs.unclaim_triage(handoff_id)

    async def note_triage(self, handoff_id: str, triage: Mapping[str, Any]) -> None:
        await self.handoffs.note_triage(handoff_id, triage)

    async def reply_to_handoff(self, handoff_id: str, reply: str, *, by: str, by_name: str) -> tuple[Handoff, bool]:
        return await self.handoffs.reply(handoff_id, reply, by=by, by_name=by_name)

    async def curate(self, draft: CuratedDraft, *, kb: str | None = None) -> CuratedAnswer:
        """Keep an expert's answer. Its knowledge base: `kb`; else, for one saved from a hand-off,
        the first base the question was searched in (so the next asker there finds it); else the
        default one."""
        name = kb
        if draft.handoff_id is not None:
            handoff = await self.handoffs.get(draft.handoff_id)
            draft = replace(draft, trace_id=draft.trace_id or handoff.trace_id)
            if name is None and handoff.knowledge_bases:
                name = handoff.knowledge_bases[0]
        name = name or self.default_kb
        base = await self._knowledge_base(name)
        if base is None:
            raise ConfigError(f"no knowledge base called {name!r}")
        curated = await self.curated.add(draft, base)
        if draft.handoff_id is not None:
            await self.handoffs.link_curated(draft.handoff_id, curated.id)
        return curated


__all__ = ["CuratedAnswers", "Handoffs", "Loop"]
