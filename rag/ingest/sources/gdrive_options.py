"""The settings of a Google Drive source (`kind: gdrive` in the sources file), checked: each wrong
one is refused with its name and what it should be (rag/ingest/sources/gdrive.py reads them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from rag.errors import SyncError
from rag.ingest.sources.gdrive_access import PermissionMap


@dataclass(frozen=True, slots=True)
class GoogleDriveOptions:
    folders: tuple[str, ...]
    drives: tuple[str, ...]
    permissions: PermissionMap
    subject: str | None = None
    api_url: str = "https://www.googleapis.com"
    page_size: int = 100
    max_documents: int = 5000
    timeout_seconds: float = 30.0
    max_wait_seconds: float = 60.0
    max_bytes: int = 50_000_000
    """The largest answer read (a file, an export, a listing's JSON): a larger file is skipped, with its size."""

    @classmethod
    def parse(cls, options: Mapping[str, Any], where: str) -> GoogleDriveOptions:
        known = {
            "folders", "drives", "permissions", "subject", "api_url", "page_size", "max_documents",
            "timeout_seconds", "max_wait_seconds", "max_bytes",
        }  # fmt: skip
        unknown = sorted(set(options) - known)
        if unknown:
            raise SyncError(f"{where}: unknown gdrive settings {unknown} (known: {sorted(known)})")
        folders = _ids(options.get("folders"), f"{where}: folders")
        drives = _ids(options.get("drives"), f"{where}: drives")
        if not folders and not drives:
            raise SyncError(f"{where}: a gdrive source needs `folders` (folder ids) or `drives` (shared drive ids)")
        subject = options.get("subject")
        if subject is not None and (not isinstance(subject, str) or "@" not in subject):
            raise SyncError(f"{where}: `subject` is the email address of the user to act as (domain-wide delegation)")
        api_url = str(options.get("api_url") or "https://www.googleapis.com").rstrip("/")
        if urlsplit(api_url).scheme not in ("http", "https") or not urlsplit(api_url).netloc:
            raise SyncError(f"{where}: `api_url` must be a URL, like https://www.googleapis.com")
        try:
            made = cls(
                folders=folders,
                drives=drives,
                permissions=PermissionMap.parse(options.get("permissions"), where),
                subject=subject.strip() if isinstance(subject, str) else None,
                api_url=api_url,
                page_size=int(options.get("page_size", 100)),
                max_documents=int(options.get("max_documents", 5000)),
                timeout_seconds=float(options.get("timeout_seconds", 30.0)),
                max_wait_seconds=float(options.get("max_wait_seconds", 60.0)),
                max_bytes=int(options.get("max_bytes", 50_000_000)),
            )
        except (TypeError, ValueError) as exc:
            raise SyncError(f"{where}: a gdrive setting is not a number: {exc}") from exc
        if not 1 <= made.page_size <= 1000 or made.max_documents < 1 or made.timeout_seconds <= 0:
            raise SyncError(f"{where}: page_size is 1-1000; max_documents and timeout_seconds must be positive")
        if made.max_wait_seconds < 0 or made.max_bytes < 1:
            raise SyncError(f"{where}: max_wait_seconds cannot be negative, max_bytes must be positive")
        return made


def _ids(value: object, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    listed = [value] if isinstance(value, str) else value
    if not isinstance(listed, list) or not all(isinstance(v, str) and v.strip() for v in listed):
        raise SyncError(f"{where} must list ids (the part of a folder's or drive's URL after /folders/)")
    return tuple(dict.fromkeys(v.strip() for v in listed))
