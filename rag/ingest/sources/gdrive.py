"""Google Drive: the files of the configured folders (every depth) and shared drives, read as a service
account (its JSON key in an environment variable named in the sources file; `subject:` to act as a
Workspace user through domain-wide delegation). The HTTP side is `gdrive_api`; who may read what is
worked out in `gdrive_access`; the source's settings are checked in `gdrive_options`.

The listing checks each configured shared drive (`drives.get`) and folder (`files.get`) exists, then
lists a shared drive's files in one query (`corpora=drive`, `driveId`) and a folder's by walking its
subfolders (`'<id>' in parents`), always with `trashed = false`: a file moved to the trash is no
longer listed, and so deleted. A file's readers come from the listing's `permissions` field, or, for
items of a shared drive (whose listings do not carry it), from `permissions.list`; they are read on
every run, so a sharing change is applied even when the file did not change.

What is synced: Google Docs (exported as HTML, `files.export`), PDFs, plain text, Markdown and HTML
files (downloaded, `alt=media`). Sheets, Slides, images, shortcuts and everything else are counted
and named in one log line per run, not one per file. A file is stored under `gdrive:<file id>` (a
renamed or moved file is updated, not duplicated), cited by its `webViewLink`, titled by its name,
dated by its `modifiedTime`. A file whose `version` (or, without one, `modifiedTime` and
`md5Checksum`) is the one stored last time is not downloaded at all.

Errors: a folder or shared drive that vanished (404), a refused key, a listing that fails or one Drive
says is incomplete (`incompleteSearch`) raises `SourceError` and removes nothing; a file that fails (a
5xx, an export Google refuses) is one skipped line and its stored version stays. A file whose
permissions cannot be read is not skipped: its stored version might keep groups wider than Drive's
new ones, so it is listed as readable by no one (logged), as a Confluence page whose restrictions
cannot be read is, until its permissions can be read again.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from rag.errors import ItemError, SourceError, SyncError
from rag.ingest.sources.base import Fetched, Format, Gone, ItemState, NotModified, Outcome, SourceDocument
from rag.ingest.sources.common import moment
from rag.ingest.sources.gdrive_access import FileAccess, Permission, UnmappedLog, file_access
from rag.ingest.sources.gdrive_api import DriveApi, Reply
from rag.ingest.sources.gdrive_options import GoogleDriveOptions
from rag.ingest.sources.guard import Network
from rag.model.types import NO_ONE

log = logging.getLogger("candor.sync.gdrive")

FOLDER = "application/vnd.google-apps.folder"
GOOGLE_DOC = "application/vnd.google-apps.document"
_DOWNLOADED: Mapping[str, Format] = {
    "application/pdf": "pdf",
    "text/plain": "txt",
    "text/markdown": "md",
    "text/x-markdown": "md",
    "text/html": "html",
}
_SKIPPED = {
    "application/vnd.google-apps.spreadsheet": "Google Sheets",
    "application/vnd.google-apps.presentation": "Google Slides",
    "application/vnd.google-apps.drawing": "Google Drawings",
    "application/vnd.google-apps.form": "Google Forms",
    "application/vnd.google-apps.shortcut": "shortcuts",
}
_FILE_FIELDS = "id,name,mimeType,webViewLink,modifiedTime,version,md5Checksum,driveId,trashed"
_PERMISSION = "permissions(id,type,role,emailAddress,domain,deleted)"
_LIST_FIELDS = f"nextPageToken,incompleteSearch,files({_FILE_FIELDS},{_PERMISSION})"
_PERMISSION_FIELDS = f"nextPageToken,{_PERMISSION}"
_ALL_DRIVES = {"supportsAllDrives": "true", "includeItemsFromAllDrives": "true"}


@dataclass(frozen=True, slots=True)
class _Item:
    """What the listing learnt of a file, for its fetch."""

    file_id: str
    format: Format
    export: bool
    revision: Mapping[str, str]
    """`version`, or `modifiedTime` and `md5Checksum`: equal to last time's, the file is unchanged."""


class GoogleDrive:
    """A `Connector` for the folders and shared drives one service account can read."""

    kind = "gdrive"

    def __init__(
        self,
        options: GoogleDriveOptions,
        *,
        name: str,
        credentials: Mapping[str, str],
        variables: Mapping[str, str],
        access: Sequence[str] = (),
        network: Network | None = None,
    ) -> None:
        """`access` is the sources file's top-level `access`, refused when given: every file's readers
        come from Drive, and a list there would read as if it decided who may read (it once decided
        what a file anyone with the link can open got). `network`: how Drive is reached (default:
        the guard, no internal addresses)."""
        if access:
            raise SyncError(
                f"source {name!r}: a gdrive source takes its readers from Drive's permissions: map them under "
                "`permissions:` instead of giving `access` (`anyone: public` for files anyone with the link can open)"
            )
        if "service_account" not in credentials:
            raise SyncError(
                f"source {name!r}: a gdrive source needs `credentials: {{service_account: VARIABLE}}`, the "
                "variable holding a service account's JSON key"
            )
        variable = f"${variables['service_account']}"
        key = _key(credentials["service_account"])
        try:
            if key is None:
                raise ValueError
            self.api = DriveApi(
                key,
                subject=options.subject,
                api_url=options.api_url,
                refused=f"check the service account key in {variable} (revoked or deleted?) and that the folders "
                "and shared drives are shared with it",
                timeout_seconds=options.timeout_seconds,
                max_wait_seconds=options.max_wait_seconds,
                max_bytes=options.max_bytes,
                network=network,
            )
        except ValueError as exc:
            raise SyncError(
                f"source {name!r}: {variable} does not hold a service account's JSON key (the key file's contents, "
                "with type, client_email, private_key and token_uri)"
            ) from exc
        self.options = options
        self.name = name
        self.max_documents = options.max_documents
        self.not_synced: Counter[str] = Counter()
        self._items: dict[str, _Item] = {}
        self._unmapped = UnmappedLog(f"source {name!r}")

    # --- the Connector Protocol ------------------------------------------------------------

    async def listing(self) -> Sequence[SourceDocument]:
        try:
            return await self._listing()
        except ItemError as exc:
            raise SourceError(f"source {self.name!r}: {exc}") from exc

    async def fetch(self, document: SourceDocument, previous: ItemState | None) -> Outcome:
        item = self._items.get(document.id)
        if item is None:
            raise ItemError("not in this run's listing")
        if previous is not None and _unchanged(previous.values.get("revision"), item.revision):
            return NotModified(document)
        if item.export:
            reply = await self.api.get(
                f"/drive/v3/files/{quote(item.file_id, safe='')}/export", {"mimeType": "text/html"}
            )
        else:
            reply = await self.api.get(
                f"/drive/v3/files/{quote(item.file_id, safe='')}", {"alt": "media", "supportsAllDrives": "true"}
            )
        if reply.status in (404, 410):
            return Gone(document, reply.describe())
        if reply.status != 200:
            raise ItemError(_fetch_failure(reply))
        data = _with_title(reply.body, document.title) if item.export else reply.body
        if item.format == "pdf" and not data.startswith(b"%PDF"):
            raise ItemError("the file is not a PDF, though Drive says it is")
        return Fetched(document, data, item.format, {"revision": dict(item.revision)})

    async def aclose(self) -> None:
        await self.api.aclose()

    # --- listing ---------------------------------------------------------------------------

    async def _listing(self) -> list[SourceDocument]:
        files: dict[str, dict[str, Any]] = {}
        for drive_id in self.options.drives:
            for found in await self._drive(drive_id):
                files.setdefault(str(found["id"]), found)
        for folder_id in self.options.folders:
            for found in await self._folder(folder_id):
                files.setdefault(str(found["id"]), found)
        skipped = self.not_synced
        skipped.clear()
        documents = []
        for found in files.values():
            mime = str(found.get("mimeType") or "")
            if mime == FOLDER:
                continue
            name = str(found.get("name") or found["id"])
            form = _format(mime, name)
            if form is None:
                skipped[_SKIPPED.get(mime) or ("images" if mime.startswith("image/") else mime or "unknown")] += 1
                continue
            documents.append(await self._document(found, form, export=mime == GOOGLE_DOC))
        if skipped:
            named = ", ".join(f"{count} {label}" for label, count in sorted(skipped.items()))
            total = sum(skipped.values())
            log.info("source %r: %d files are not documents Candor reads, not synced: %s", self.name, total, named)
        return documents

    async def _drive(self, drive_id: str) -> list[dict[str, Any]]:
        reply, _ = await self.api.get_json(f"/drive/v3/drives/{quote(drive_id, safe='')}", {"fields": "id,name"})
        if reply.status == 404:
            raise ItemError(f"no shared drive {drive_id} (deleted, or the service account is no longer a member?)")
        if reply.status != 200:
            raise ItemError(f"{_listing_failure(reply, self.api.refused)} for the shared drive {drive_id}")
        query = {"q": "trashed = false", "corpora": "drive", "driveId": drive_id, **_ALL_DRIVES}
        return await self._list(query)

    async def _folder(self, folder_id: str) -> list[dict[str, Any]]:
        reply, folder = await self.api.get_json(
            f"/drive/v3/files/{quote(folder_id, safe='')}",
            {"supportsAllDrives": "true", "fields": "id,name,mimeType,trashed,driveId"},
        )
        if reply.status == 404:
            raise ItemError(f"no folder {folder_id} (deleted, or no longer shared with the service account?)")
        if reply.status != 200:
            raise ItemError(f"{_listing_failure(reply, self.api.refused)} for the folder {folder_id}")
        if folder.get("mimeType") != FOLDER:
            raise ItemError(f"{folder_id} ({folder.get('name')!r}) is not a folder")
        if folder.get("trashed"):
            raise ItemError(f"the folder {folder_id} ({folder.get('name')!r}) is in the trash")
        scope = {"corpora": "drive", "driveId": str(folder["driveId"])} if folder.get("driveId") else {}
        found: list[dict[str, Any]] = []
        pending, seen = [folder_id], {folder_id}
        while pending:
            parent = pending.pop(0)
            query = {"q": f"'{_quoted(parent)}' in parents and trashed = false", **scope, **_ALL_DRIVES}
            for child in await self._list(query):
                if child.get("mimeType") == FOLDER:
                    if str(child["id"]) not in seen:
                        seen.add(str(child["id"]))
                        pending.append(str(child["id"]))
                else:
                    found.append(child)
        return found

    async def _list(self, query: Mapping[str, str]) -> list[dict[str, Any]]:
        params = {**query, "fields": _LIST_FIELDS, "pageSize": str(self.options.page_size)}
        listed = await self.api.results("/drive/v3/files", params, "files")
        return [f for f in listed if f.get("id") and not f.get("trashed")]

    async def _document(self, found: Mapping[str, Any], form: Format, *, export: bool) -> SourceDocument:
        file_id = str(found["id"])
        title = str(found.get("name") or file_id)
        listed = found.get("permissions")
        permissions = listed if isinstance(listed, list) else await self._permissions(file_id)
        if permissions is None:  # who may read it is unknown for now: no one, until it can be read again
            access = FileAccess((NO_ONE,))
            log.warning(
                "source %r: %r (file %s) is readable by no one until its permissions can be read",
                self.name,
                title,
                file_id,
            )
        else:
            parsed = [p for p in (Permission.parse(d) for d in permissions if isinstance(d, dict)) if p is not None]
            access = file_access(parsed, self.options.permissions)
            self._unmapped.note(title, access)
        revision = {k: str(found[k]) for k in ("version", "modifiedTime", "md5Checksum") if found.get(k) is not None}
        doc = SourceDocument(
            f"gdrive:{file_id}",
            str(found.get("webViewLink") or f"https://drive.google.com/file/d/{quote(file_id, safe='')}/view"),
            title,
            moment(found.get("modifiedTime")),
            access.groups,
        )
        self._items[doc.id] = _Item(file_id, form, export, revision)
        return doc

    async def _permissions(self, file_id: str) -> list[Any] | None:
        """`permissions.list` of one file (a shared drive's items carry none in listings, nor do files the
        service account cannot share); None when Drive would not give them all: the file is then readable
        by no one, since a stored copy keeping its old groups might be wider than Drive's new ones."""
        found: list[Any] = []
        query = {"supportsAllDrives": "true", "pageSize": "100", "fields": _PERMISSION_FIELDS}
        for _ in range(100):
            reply, data = await self.api.get_json(f"/drive/v3/files/{quote(file_id, safe='')}/permissions", query)
            if reply.status != 200:
                log.warning("source %r: the permissions of file %s: %s", self.name, file_id, reply.describe())
                return None
            found.extend(data.get("permissions") or [])
            if not data.get("nextPageToken"):
                return found
            query = {**query, "pageToken": str(data["nextPageToken"])}
        return None


def _format(mime: str, name: str) -> Format | None:
    if mime == GOOGLE_DOC:
        return "html"
    form = _DOWNLOADED.get(mime)
    if name.lower().endswith((".md", ".markdown")) and (form == "txt" or mime == "application/octet-stream"):
        return "md"
    return form


def _unchanged(previous: object, revision: Mapping[str, str]) -> bool:
    """Last run's revision is this one: the same `version` when Drive gives one, else the same
    `modifiedTime` and `md5Checksum` (a Google Doc has no checksum: its time alone)."""
    if not isinstance(previous, dict) or not revision:
        return False
    if "version" in revision:
        return previous.get("version") == revision["version"]
    return all(previous.get(k) == revision.get(k) for k in ("modifiedTime", "md5Checksum")) and bool(
        revision.get("modifiedTime")
    )


def _fetch_failure(reply: Reply) -> str:
    if reply.reason == "exportSizeLimitExceeded":
        return "Google would not export it as HTML: larger than the 10 MB export limit (exportSizeLimitExceeded)"
    return reply.describe()


def _listing_failure(reply: Reply, refused: str) -> str:
    return f"HTTP 403 ({reply.reason or 'forbidden'}): {refused}" if reply.status == 403 else reply.describe()


def _with_title(html: bytes, title: str) -> bytes:
    """A Doc's HTML export has no `<title>`: its name becomes one (the loader's title)."""
    escaped = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").encode("utf-8")
    tag = b"<title>" + escaped + b"</title>"
    head = html.find(b"<head>")
    if head >= 0:
        return html[: head + 6] + tag + html[head + 6 :]
    return b'<!doctype html><html><head><meta charset="utf-8">' + tag + b"</head><body>" + html + b"</body></html>"


def _key(value: str) -> dict[str, Any] | None:
    """The service account key's JSON, or None when it is not one (its text is never shown)."""
    try:
        key = json.loads(value)
    except ValueError:
        return None
    if not isinstance(key, dict) or key.get("type") != "service_account":
        return None
    return key


def _quoted(file_id: str) -> str:
    """An id inside a Drive query's single quotes."""
    return file_id.replace("\\", "\\\\").replace("'", "\\'")
