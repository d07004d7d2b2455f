"""What Candor believes about a document: title, URL, effective date, authority, access groups.

Source trust lives here. A document's own claims are checked before they are stored:
- `authority` from front matter is capped by the knowledge base's `max_authority`;
- an effective date in the future is recorded as declared but not trusted (flagged `future`),
  so no document can win every conflict by dating itself ahead;
- where the date came from (front matter, text, file time) is kept with it;
- access groups from the front matter replace the command line's, but a document can never make
  itself public: with no groups of its own it gets the command line's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from rag.errors import CorruptFile, WiderAccess
from rag.ingest.blocks import ChunkDraft, ParsedDocument
from rag.ingest.dates import DateSource, find_effective_date, parse_date_value
from rag.model.types import clean_text

MAX_METADATA_VALUES = 2_000
"""Front-matter values kept per document: YAML aliases can make a few hundred bytes expand to millions."""
_INT4 = 2**31 - 1

DATE_KEYS = ("effective_date", "effective", "date", "last_updated", "updated")


@dataclass(frozen=True, slots=True)
class DocumentFacts:
    title: str
    url: str | None
    format: str
    effective_date: date | None
    declared_date: date | None
    date_source: DateSource | None
    date_flag: str | None
    authority: int
    declared_authority: int | None
    access_groups: tuple[str, ...]
    metadata: dict[str, Any]
    chunks: list[ChunkDraft]


def document_facts(
    path: Path,
    parsed: ParsedDocument,
    chunks: list[ChunkDraft],
    *,
    cli_access: Sequence[str],
    max_authority: int,
    file_date: date,
    today: date,
) -> DocumentFacts:
    meta = _bounded(path, parsed.metadata)  # first: a value made of aliases expands when read
    declared, source = _declared_date(meta, parsed.text, file_date)
    trusted = declared if declared is None or declared <= today else None
    declared_authority = _as_int(meta.get("authority"))
    authority = max(0, min(declared_authority if declared_authority is not None else 0, max_authority))
    groups = _audience(path, _groups(meta.get("access")), cli_access)
    url = clean_text(str(meta.get("url") or "")).strip()
    return DocumentFacts(
        title=clean_text(str(meta.get("title") or "")).strip() or clean_text(parsed.title or "") or path.stem,
        url=url or None,
        format=path.suffix.lower().lstrip(".") or "txt",
        effective_date=trusted,
        declared_date=declared,
        date_source=source,
        date_flag="future" if declared is not None and trusted is None else None,
        authority=authority,
        declared_authority=declared_authority,
        access_groups=groups,
        metadata={k: v for k, v in meta.items() if k not in {"title", "url", "access"}},
        chunks=chunks,
    )


def _audience(path: Path, own: tuple[str, ...], given: Sequence[str]) -> tuple[str, ...]:
    """The document's access groups: `--access` for the run, or the document's own list, which may
    choose among the groups `--access` gives but never name another (a file in an HR folder cannot
    make itself readable to everyone, nor to a group the operator did not give the folder)."""
    allowed = set(given)
    if not allowed:
        return own
    if not own:
        return tuple(sorted(allowed))
    beyond = sorted(set(own) - allowed)
    if beyond:
        raise WiderAccess(path, f"it names {beyond}; --access gave {sorted(allowed)}")
    return own


def _declared_date(meta: dict[str, Any], text: str, file_date: date) -> tuple[date | None, DateSource]:
    for key in DATE_KEYS:
        if key in meta:
            parsed = parse_date_value(meta[key])
            if parsed is not None:
                return parsed, "front_matter"
    found = find_effective_date(text)
    if found is not None:
        return found, "text"
    return file_date, "file_time"


def _as_int(value: object) -> int | None:
    """An integer the database can hold, or None (ignored: the authority is capped anyway)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = int(str(value).strip())
    except ValueError:
        return None
    return number if -_INT4 <= number <= _INT4 else None


def _bounded(path: Path, metadata: dict[str, Any]) -> dict[str, Any]:
    """The front-matter values with clean strings, or CorruptFile past MAX_METADATA_VALUES
    (counting a value as often as aliases repeat it, as reading it or storing it as JSON would)."""
    budget = MAX_METADATA_VALUES

    def walk(value: Any) -> Any:
        nonlocal budget
        budget -= 1
        if budget < 0:
            raise CorruptFile(path, f"front matter holds more than {MAX_METADATA_VALUES} values")
        if isinstance(value, str):
            return clean_text(value)
        if isinstance(value, dict):
            return {clean_text(str(k)): walk(v) for k, v in value.items()}
        if isinstance(value, list | tuple | set):
            return [walk(v) for v in value]
        return value

    return {clean_text(str(k)): walk(v) for k, v in metadata.items()}


def _groups(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list | tuple | set) else str(value).split(",")
    return tuple(sorted({str(item).strip() for item in items if str(item).strip()}))
