"""Shared fixtures: one real embedded Postgres and one real MiniLM embedder per test session.

Tests isolate themselves by knowledge base (`kb` fixture: a fresh, uniquely named one), not by
database, because starting Postgres costs seconds. Tests that need a database of their own (the
migration and process tests) start one under their own `tmp_path`.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from rag.config import Settings, load_settings
from rag.runtime import Candor, open_candor
from rag.store.postgres import KnowledgeBase
from tests.tiny_cross_encoders import TinyCrossEncoders, build_all

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample" / "handbook"

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("candor-home")


@pytest.fixture(scope="session")
def settings(home: Path) -> Settings:
    return load_settings(home=home, database_url=None, embedder="minilm", embedder_backend="torch")


@pytest.fixture(scope="session")
async def candor(settings: Settings) -> AsyncIterator[Candor]:
    async with open_candor(settings) as opened:
        yield opened


@pytest.fixture(scope="session")
def tiny_cross_encoders(tmp_path_factory: pytest.TempPathFactory) -> TinyCrossEncoders:
    """Tiny random cross-encoders saved on disk, built once: they prove plumbing, never quality."""
    return build_all(tmp_path_factory.mktemp("tiny-cross-encoders"))


@pytest.fixture
async def kb(candor: Candor) -> KnowledgeBase:
    made = await candor.knowledge_base(f"kb-{uuid.uuid4().hex[:10]}", create=True)
    assert made is not None
    return made


@pytest.fixture
def docs(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "docs"
    folder.mkdir()
    yield folder
