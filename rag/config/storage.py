"""Where Candor keeps its data: the data directory, the database (embedded or external, with an
optional hot standby) and the connections to it."""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import Self

import platformdirs
from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings

from rag.config.environment import _env


def _default_home() -> Path:
    """The platform's data folder for the user (`~/.local/share/candor` on Linux), or `/var/lib/candor`
    as root."""
    # As root the embedded Postgres runs as a separate `pgserver` user and makes every parent of
    # its data directory world-traversable; /root must not become that, so root gets a path made
    # for the purpose.
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/lib/candor")
    return Path(platformdirs.user_data_dir("candor", appauthor=False))


class StorageSettings(BaseSettings):
    """Storage: the data directory and the database."""

    # --- storage -------------------------------------------------------------------------
    home: Path = Field(default_factory=_default_home, validation_alias=_env("CANDOR_HOME"))
    """CANDOR_HOME: data directory; the embedded Postgres lives in `<home>/pgdata`."""
    models_dir: Path | None = Field(None, validation_alias=_env("CANDOR_MODELS_DIR"))
    """CANDOR_MODELS_DIR: where the embedder's ONNX exports are kept (default `<home>/models`); a
    container image or several homes can share one, made once. One folder per variant, each with its
    manifest (`candor-export.json`)."""
    database_url: SecretStr | None = Field(None, validation_alias=_env("CANDOR_DATABASE_URL"))
    """CANDOR_DATABASE_URL: an existing Postgres (with pgvector) to use instead of the embedded one."""
    database_read_url: SecretStr | None = Field(None, validation_alias=_env("CANDOR_DATABASE_READ_URL"))
    """CANDOR_DATABASE_READ_URL: a hot standby of CANDOR_DATABASE_URL for the hybrid searches (the
    answer path's heaviest reads); writes, the chat ledger and every other read stay on the
    primary, and a search the standby cannot take runs on the primary (docs/scaling.md)."""
    db_retry_seconds: float = Field(10.0, ge=0, le=600, validation_alias=_env("CANDOR_DB_RETRY_SECONDS"))
    """CANDOR_DB_RETRY_SECONDS: how long a question, a claim, a trace or a vote waits for a
    database that went away (a restart, a failover) before it fails or is spooled; 0: fail at once.
    Only connection failures are retried, never a statement Postgres refused."""
    db_pool_size: int = Field(20, ge=1, le=100, validation_alias=_env("CANDOR_DB_POOL_SIZE"))
    """CANDOR_DB_POOL_SIZE: database connections each process keeps; never more (searches have a
    quarter as many of their own, at least 2). `candor serve` opens them at start-up; a request that
    finds all in use waits for one (statements are short) rather than opening one more in the middle
    of a burst. Cover the Slack/Teams events you expect at once plus CANDOR_ANSWER_CONCURRENCY; mind
    the server's max_connections across replicas."""

    db_shared_buffers_mb: int | None = Field(
        None, ge=16, le=1_048_576, validation_alias=_env("CANDOR_DB_SHARED_BUFFERS_MB")
    )
    """CANDOR_DB_SHARED_BUFFERS_MB: the embedded Postgres' page cache (`shared_buffers`); by default a
    quarter of the memory this process may use, between 128 MB and 2 GB. Postgres' own 128 MB holds
    less than the vector index of ~70k chunks, and a search that reads index pages from the operating
    system costs ~1 ms more. Written to `<pgdata>/candor.conf` at every start, with JIT compilation
    off, and applied when the embedded server starts (not while another process
    keeps it running); an external server (CANDOR_DATABASE_URL) is left as it is."""

    @field_validator("home", mode="after")
    @classmethod
    def _absolute_home(cls, value: Path) -> Path:
        return value.expanduser().resolve()

    @model_validator(mode="after")
    def _standby_needs_a_primary(self) -> Self:
        if self.database_read_url is not None and self.database_url is None:
            raise ValueError("CANDOR_DATABASE_READ_URL is a standby of CANDOR_DATABASE_URL, which is not set")
        return self

    @cached_property
    def pgdata(self) -> Path:
        return self.home / "pgdata"

    @property
    def model_cache(self) -> Path:
        return (self.models_dir or self.home / "models").expanduser().resolve()

    @property
    def search_pool_size(self) -> int:
        """Connections kept for hybrid searches besides CANDOR_DB_POOL_SIZE: a quarter as many, at
        least 2 (rag/store/database.py says why searches have their own)."""
        return max(2, self.db_pool_size // 4)
