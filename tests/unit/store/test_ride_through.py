"""Riding through a database that went away: only connection failures are tried again, and only
for as long as allowed."""

from __future__ import annotations

import psycopg
import psycopg.errors
import pytest
from sqlalchemy.exc import IntegrityError, OperationalError

from rag.errors import StoreError
from rag.store.database import is_transient, ride_through


def wrapped(exc: BaseException) -> StoreError:
    """As the store raises them: `StoreError(...) from <driver error>`."""
    try:
        raise StoreError("database error") from exc
    except StoreError as error:
        return error


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (psycopg.OperationalError("connection failed: Connection refused"), True),
        (OperationalError("SELECT 1", {}, psycopg.OperationalError("server closed the connection")), True),
        (wrapped(psycopg.OperationalError("terminating connection due to administrator command")), True),
        (ConnectionResetError("reset by peer"), True),
        (psycopg.errors.QueryCanceled("canceling statement due to statement timeout"), False),
        (IntegrityError("INSERT", {}, psycopg.IntegrityError("duplicate key")), False),
        (wrapped(ValueError("not a trace id")), False),
    ],
)
def test_only_connection_failures_are_transient(error: BaseException, transient: bool) -> None:
    assert is_transient(error) is transient


async def test_a_restart_is_ridden_through() -> None:
    calls = 0

    async def operation() -> str:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise psycopg.OperationalError("the database system is starting up")
        return "done"

    assert await ride_through(operation, within=5.0, what="a test") == "done"
    assert calls == 3


async def test_a_statement_error_fails_at_once() -> None:
    calls = 0

    async def operation() -> None:
        nonlocal calls
        calls += 1
        raise wrapped(IntegrityError("INSERT", {}, psycopg.IntegrityError("violates foreign key")))

    with pytest.raises(StoreError):
        await ride_through(operation, within=5.0, what="a test")
    assert calls == 1


async def test_an_outage_longer_than_allowed_fails_with_its_error() -> None:
    calls = 0

    async def operation() -> None:
        nonlocal calls
        calls += 1
        raise psycopg.OperationalError("connection refused")

    with pytest.raises(psycopg.OperationalError):
        await ride_through(operation, within=0.5, what="a test")
    assert 2 <= calls <= 5  # 0.1 + 0.2 (+ 0.4 would pass the deadline)
    calls = 0
    with pytest.raises(psycopg.OperationalError):
        await ride_through(operation, within=0.0, what="a test")  # CANDOR_DB_RETRY_SECONDS=0
    assert calls == 1
