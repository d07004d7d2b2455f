"""The settings of a Confluence source (`kind: confluence` in the sources file), checked: each wrong
one is refused with its name and what it should be (rag/ingest/sources/confluence.py reads them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from rag.errors import SyncError
from rag.ingest.sources.confluence_access import PermissionMap

BodyFormat = Literal["storage", "export_view"]


@dataclass(frozen=True, slots=True)
class ConfluenceOptions:
    base_url: str
    spaces: tuple[str, ...]
    space_access: Mapping[str, tuple[str, ...]]
    permissions: PermissionMap
    attachments: bool = True
    body_format: BodyFormat = "storage"
    space_permissions: bool = True
    """Read who may read each space from Confluence (for spaces not in `space_access`)."""
    blog_posts: bool = True
    concurrency: int = 4
    """Requests one listing makes at once (restrictions, attachments)."""
    max_documents: int = 5000
    timeout_seconds: float = 30.0
    max_wait_seconds: float = 60.0
    max_bytes: int = 50_000_000
    """The largest answer read (a page's JSON, an attachment): a larger one is skipped, with its size."""

    @classmethod
    def parse(cls, options: Mapping[str, Any], where: str) -> ConfluenceOptions:
        known = {
            "base_url", "spaces", "space_access", "space_permissions", "permissions", "attachments",
            "blog_posts", "body_format", "max_documents", "timeout_seconds", "max_wait_seconds", "concurrency",
            "max_bytes",
        }  # fmt: skip
        unknown = sorted(set(options) - known)
        if unknown:
            raise SyncError(f"{where}: unknown confluence settings {unknown} (known: {sorted(known)})")
        base_url = str(options.get("base_url") or "").rstrip("/")
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise SyncError(f"{where}: `base_url` must be the site's URL, like https://example.atlassian.net/wiki")
        spaces = options.get("spaces")
        if not isinstance(spaces, list) or not spaces or not all(isinstance(s, str) and s.strip() for s in spaces):
            raise SyncError(f"{where}: `spaces` must list the keys of the spaces to sync, like [ENG, HR]")
        keys = tuple(dict.fromkeys(s.strip() for s in spaces))
        space_access = _groups_map(options.get("space_access"), f"{where}: space_access")
        strays = sorted(set(space_access) - set(keys))
        if strays:
            raise SyncError(f"{where}: space_access names spaces that are not in `spaces`: {strays}")
        permissions = options.get("permissions") or {}
        if not isinstance(permissions, dict) or set(permissions) - {"groups", "users"}:
            raise SyncError(f"{where}: `permissions` has `groups` and `users`, each mapping to access groups")
        body_format = options.get("body_format", "storage")
        if body_format not in ("storage", "export_view"):
            raise SyncError(f"{where}: `body_format` is storage or export_view (got {body_format!r})")
        try:
            made = cls(
                base_url=base_url,
                spaces=keys,
                space_access=space_access,
                permissions=PermissionMap(
                    _groups_map(permissions.get("groups"), f"{where}: permissions.groups"),
                    _groups_map(permissions.get("users"), f"{where}: permissions.users"),
                ),
                attachments=bool(options.get("attachments", True)),
                body_format=body_format,
                space_permissions=bool(options.get("space_permissions", True)),
                blog_posts=bool(options.get("blog_posts", True)),
                concurrency=int(options.get("concurrency", 4)),
                max_documents=int(options.get("max_documents", 5000)),
                timeout_seconds=float(options.get("timeout_seconds", 30.0)),
                max_wait_seconds=float(options.get("max_wait_seconds", 60.0)),
                max_bytes=int(options.get("max_bytes", 50_000_000)),
            )
        except (TypeError, ValueError) as exc:
            raise SyncError(f"{where}: a confluence setting is not a number: {exc}") from exc
        # Each check names its own setting, so the line points at the one to fix; `not x > 0` also refuses NaN.
        if made.max_documents < 1:
            raise SyncError(f"{where}: `max_documents` must be at least 1 (got {made.max_documents})")
        if not made.timeout_seconds > 0:
            raise SyncError(f"{where}: `timeout_seconds` must be positive (got {made.timeout_seconds:g})")
        if not made.max_wait_seconds >= 0:
            raise SyncError(f"{where}: `max_wait_seconds` cannot be negative (got {made.max_wait_seconds:g})")
        if made.max_bytes < 1:
            raise SyncError(f"{where}: `max_bytes` must be at least 1 (got {made.max_bytes})")
        if not 1 <= made.concurrency <= 16:
            raise SyncError(f"{where}: `concurrency` is 1 to 16 requests at once (got {made.concurrency})")
        return made


def _groups_map(value: object, where: str) -> dict[str, tuple[str, ...]]:
    """A mapping of names to access groups (a name or a list of names each)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SyncError(f"{where} must map names to access groups")
    found: dict[str, tuple[str, ...]] = {}
    for key, groups in value.items():
        listed = [groups] if isinstance(groups, str) else groups
        if not isinstance(listed, list) or not all(isinstance(g, str) and g.strip() for g in listed):
            raise SyncError(f"{where}.{key} must be an access group or a list of them")
        found[str(key)] = tuple(sorted({g.strip() for g in listed}))
    return found
