"""Shared fixtures: one real embedded Postgres and one real MiniLM embedder per test session.

The embedder is the one a new user gets (the default backend, int8 ONNX for this CPU), exported
once per run into a models folder every test shares, the `candor` processes the tests start
included (`CANDOR_MODELS_DIR`, kept by `tests.cli.process_env`). The torch backend has a contract
suite of its own (tests/contract/test_embedder_contract.py).

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


@pytest.fixture(scope="session", autouse=True)
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The run's one models folder, also for the `candor` processes tests start."""
    folder = tmp_path_factory.mktemp("models")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CANDOR_MODELS_DIR", str(folder))
        yield folder


@pytest.fixture(scope="session")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("candor-home")


@pytest.fixture(scope="session")
def settings(home: Path, models_dir: Path) -> Settings:
    """The defaults a new user gets, on the session's home and models folder."""
    return load_settings(home=home, models_dir=models_dir, database_url=None)


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
