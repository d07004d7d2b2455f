"""Candor's Teams endpoint served for integration tests, as `candor serve` serves it: the real app
(`bot.server.build_app`) with a `TeamsAdapter` mounted, on 127.0.0.1, a free port.

    kb = await ingest_handbook(candor, "teams-auth")      # once per module: the sample handbook
    core = teams_core(candor, kb, tmp_path)               # Candor whose access policy lets Teams read kb
    adapter = TeamsAdapter(config, core, ledger, auth_overrides=...)
    async with serve_teams(core, adapter) as url:
        status = await post_activity(url, activity, token)
"""

from __future__ import annotations

import dataclasses
import uuid
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import aiohttp

from bot.teams.app import TeamsAdapter
from rag.runtime import Candor, build_answerer
from rag.store.postgres import KnowledgeBase
from tests.conftest import SAMPLE
from tests.serving import serve_adapter


async def ingest_handbook(candor: Candor, prefix: str) -> KnowledgeBase:
    """A fresh knowledge base named `<prefix>-<random>` holding the sample handbook."""
    kb = await candor.knowledge_base(f"{prefix}-{uuid.uuid4().hex[:8]}", create=True)
    assert kb is not None
    assert (await candor.ingestor().ingest([SAMPLE], kb=kb)).ok
    await candor.store.analyze()
    return kb


def teams_core(candor: Candor, kb: KnowledgeBase, folder: Path) -> Candor:
    """`candor` with an access policy (written into `folder`) that gives the Teams platform `kb`."""
    policy = folder / "access.yaml"
    policy.write_text(f'- platform: teams\n  knowledge_bases: ["{kb.name}"]\n', encoding="utf-8")
    settings = candor.settings.model_copy(update={"access_policy": policy})
    answerer = build_answerer(settings, candor.store, candor.embedder, candor.retriever, tracker=candor.tracker)
    # one fake user asks here far more often than any person would: the rate limits have their own
    # tests (tests/integration/tracking/test_limits.py, tests/integration/security/)
    return dataclasses.replace(candor, settings=settings, answerer=answerer, limits=None)


def serve_teams(core: Candor, adapter: TeamsAdapter) -> AbstractAsyncContextManager[str]:
    """Serve `candor serve`'s app with `adapter` mounted; its base URL ("http://127.0.0.1:<port>")."""
    return serve_adapter(core, adapter)


async def post_activity(url: str, activity: dict[str, Any], token: str | None = None) -> int:
    """POST `activity` to `<url>/api/messages` (with `Authorization: Bearer <token>` if given); the status."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/api/messages", json=activity, headers=headers) as r,
    ):
        await r.read()
        return r.status
