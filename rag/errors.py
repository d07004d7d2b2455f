"""Every error Candor raises on purpose, in one tree.

Vendor errors (psycopg, SQLAlchemy, sentence-transformers, openai, pypdf, ...) are translated
where they enter with ``raise X from exc``; adapters catch `CandorError` in one place and turn
it into a friendly message.

    CandorError
    ├── ConfigError                 a setting is missing, malformed or inconsistent
    ├── StoreError                  the database could not do what was asked
    │   ├── DatabaseUnavailable     cannot start or reach Postgres
    │   ├── MigrationError          the schema could not be brought up to date
    │   └── EmbeddingMismatch       stored vectors come from another embedder (re-embed needed)
    ├── SyncError                   a configured source (candor sync) could not be synced as asked
    │   ├── SourceError             its listing failed (unreachable, 5xx): nothing stored is removed
    │   └── ItemError               one of its documents could not be fetched or read (the sync goes on)
    ├── IngestError                 one file could not be ingested (the run goes on)
    │   ├── UnsupportedFile         not a format Candor reads (binary, unknown extension)
    │   ├── EmptyFile               nothing to index once parsed
    │   ├── UnreadableFile          permissions, encoding, I/O
    │   ├── CorruptFile             the parser rejected the content
    │   ├── WiderAccess             its own access list names a group --access did not give
    │   └── OutsideRoot             a symlink pointing out of the ingested folder
    ├── EmbeddingError              the embedder failed or returned the wrong shape
    ├── CrossEncoderError           a cross-encoder (reranker, verifier) failed to score its pairs
    ├── RetrievalError              a search request is invalid (empty query, bad k, ...)
    ├── QuestionError               a question cannot be answered as asked (empty, too long)
    │   └── RateLimited             its asker or conversation asked too many questions just now
    ├── TrackingError               a trace, feedback or eval run could not be stored
    │   └── UnknownTrace            feedback names a trace that does not exist
    ├── DeliveryError               a chat platform did not take a reply (after retries)
    ├── NotFound                    a hand-off, curated answer, source or document named does not exist
    ├── LLMError                    a language model could not give a usable reply (after retries)
    │   ├── LLMUnavailable          unreachable, failing, out of time, or its circuit breaker is open
    │   └── LLMOutputError          its reply was not JSON, broke the schema, or was cut off
    ├── EvalError                   a golden file is missing or malformed
    ├── FileWriteError              an export or a report page could not be written (no folder, no room)
    └── AuditError                  an audit of the answers could not run or finish (its verifier went away)
        └── LabelFileError          a file of human labels has malformed rows (each named by its line)
"""

from __future__ import annotations

from pathlib import Path


class CandorError(Exception):
    """Base class: anything Candor raises deliberately."""


class ConfigError(CandorError):
    """A setting is missing, malformed or inconsistent."""


class StoreError(CandorError):
    """The database could not do what was asked."""


class DatabaseUnavailable(StoreError):
    """Postgres could not be started or reached."""


class MigrationError(StoreError):
    """The schema could not be brought up to date."""


class EmbeddingMismatch(StoreError):
    """The stored vectors were made by a different embedder than the configured one."""


class SyncError(CandorError):
    """A configured source cannot be synced as asked (a bad sources file, an unknown source name)."""


class SourceError(SyncError):
    """A source could not be listed (unreachable, a 5xx, expired credentials): the sync of that
    source stops and removes nothing."""


class ItemError(SyncError):
    """One document of a source could not be fetched or read: skipped with this reason, the sync goes on."""


class IngestError(CandorError):
    """One file could not be ingested; the ingest run carries on without it."""

    reason = "could not be ingested"

    def __init__(self, path: Path | str, detail: str = "") -> None:
        self.path = Path(path)
        self.detail = detail
        message = f"{self.path}: {self.reason}"
        if detail:
            message += f" ({detail})"
        super().__init__(message)


class UnsupportedFile(IngestError):
    reason = "not a supported document"


class EmptyFile(IngestError):
    reason = "no text to index"


class UnreadableFile(IngestError):
    reason = "cannot be read"


class CorruptFile(IngestError):
    reason = "corrupt or malformed"


class WiderAccess(IngestError):
    reason = "its front-matter access names a group --access did not give (a file cannot widen its audience)"


class OutsideRoot(IngestError):
    reason = "points outside the ingested folder"


class EmbeddingError(CandorError):
    """The embedder failed or returned vectors of the wrong shape."""


class CrossEncoderError(CandorError):
    """A cross-encoder model failed while scoring pairs (a broken model on disk, out of memory, ...).

    A model that cannot be opened at all is a `ConfigError`: the setting names something unusable."""


class RetrievalError(CandorError):
    """A search request is invalid."""


class QuestionError(CandorError):
    """A question cannot be answered as asked: empty, too long, or nothing left after markup."""


class RateLimited(QuestionError):
    """The asker or the conversation asked more questions than the limit allows in a minute."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class TrackingError(CandorError):
    """A trace, feedback or eval run could not be stored (it is spooled to disk, not lost)."""


class UnknownTrace(TrackingError):
    """Feedback names a trace id that was never recorded."""


class DeliveryError(CandorError):
    """A chat platform did not take a reply, after retries (throttled, failing or unreachable)."""


class NotFound(CandorError):
    """A hand-off, a curated answer, a source or a document named does not exist (or no longer does)."""


class LLMError(CandorError):
    """A language model could not give a usable reply, after retries: the stage falls back or abstains."""


class LLMUnavailable(LLMError):
    """The endpoint is unreachable, failing or slower than the answer's budget, or its circuit is open."""


class LLMOutputError(LLMError):
    """The model's reply was not JSON, broke the schema, contradicted itself or was cut off."""


class EvalError(CandorError):
    """A golden file is missing or malformed."""


class FileWriteError(CandorError):
    """An export, a label sheet or a report page could not be written: its folder is missing, it may
    not be written there, or the disk is full (`rag.insights.files`). Nothing partial is left at the path."""


class AuditError(CandorError):
    """An audit of the answers could not run or finish: its verifier went away, its window is empty."""


class LabelFileError(AuditError):
    """A file of human labels has rows that cannot be stored; `problems` names each by its line."""

    def __init__(self, message: str, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems
