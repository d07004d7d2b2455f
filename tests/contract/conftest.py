"""Fixtures for the contract suites: a fake OpenAI-compatible server on the test's event loop."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.openai_server import FakeOpenAI

FAKE_DIMENSION = 32
"""Large enough that the fake's hashed bag of words rarely puts two words on one coordinate."""


@pytest.fixture
async def fake_openai() -> AsyncIterator[FakeOpenAI]:
    """A running fake; script failures on it and read `requests`. Its URL is `fake_openai.base_url`."""
    async with FakeOpenAI(dimension=FAKE_DIMENSION) as fake:
        yield fake


@pytest.fixture
def fake_openai_url(fake_openai: FakeOpenAI) -> str:
    """The fake's base URL, "http://127.0.0.1:PORT/v1", for clients that need nothing else."""
    return fake_openai.base_url
