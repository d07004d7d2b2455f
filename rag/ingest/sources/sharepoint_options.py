"""The settings of a `sharepoint` source, checked: which sites, libraries and drives, how their
permissions map to access groups, and where Microsoft's sign-in and Graph endpoints are.

    - name: intranet
      kind: sharepoint
      sites: ["contoso.sharepoint.com:/sites/Finance"]    # or a site id (host,collection-id,web-id)
      libraries: [Documents, Policies]                     # default: every library of each site
      drives: ["b!Xy..."]                                  # OneDrive (or any) drives by id
      site_pages: [staff]                                  # sync the sites' pages, readable by these groups
      permissions:
        groups: {"5a1f...": [finance-leads]}               # Entra group id or display name
        site_groups: {"Finance Members": [finance]}        # SharePoint groups
        users: {"ana@contoso.com": [hr]}                   # Entra id, email or login name
        organization: [staff]                              # organization-wide sharing links
        anonymous: public                                  # anyone-with-the-link: public (or groups)
      credentials: {tenant_id: SP_TENANT, client_id: SP_CLIENT_ID, client_secret: SP_CLIENT_SECRET}

The source's own `access` is refused: every item's readers come from SharePoint, mapped here. Site
pages are the one exception, because Graph v1.0 has no permissions endpoint for a site page: their
groups are `site_pages` (say `[]` to make them public), and without it pages are not synced.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from rag.errors import SyncError
from rag.ingest.sources.sharepoint_access import PUBLIC, PermissionMap, Readers

GRAPH_URL = "https://graph.microsoft.com/v1.0"
AUTHORITY = "https://login.microsoftonline.com"
SCOPE = "https://graph.microsoft.com/.default"
_KNOWN = frozenset(
    {
        "sites", "libraries", "drives", "site_pages", "permissions", "graph_url", "authority", "scope",
        "max_documents", "timeout_seconds", "max_wait_seconds", "max_bytes",
    }
)  # fmt: skip
_PERMISSION_KEYS = frozenset({"groups", "site_groups", "users", "organization", "anonymous"})


@dataclass(frozen=True, slots=True)
class SharePointOptions:
    sites: tuple[str, ...]
    libraries: tuple[str, ...]
    drives: tuple[str, ...]
    site_pages: tuple[str, ...] | None
    permissions: PermissionMap
    graph_url: str = GRAPH_URL
    authority: str = AUTHORITY
    scope: str = SCOPE
    max_documents: int = 5000
    timeout_seconds: float = 30.0
    max_wait_seconds: float = 60.0
    max_bytes: int = 50_000_000
    """The largest answer read (a file, a page's JSON): a larger one is skipped, with its size."""

    @classmethod
    def parse(cls, options: Mapping[str, Any], where: str, *, access: tuple[str, ...] = ()) -> SharePointOptions:
        unknown = sorted(set(options) - _KNOWN)
        if unknown:
            raise SyncError(f"{where}: unknown sharepoint settings {unknown} (known: {sorted(_KNOWN)})")
        if access:
            raise SyncError(
                f"{where}: a sharepoint source takes its readers from SharePoint's permissions: map them "
                "under `permissions:` instead of giving `access`"
            )
        sites = _names(options.get("sites"), f"{where}: `sites`", "sites like contoso.sharepoint.com:/sites/Finance")
        drives = _names(options.get("drives"), f"{where}: `drives`", "drive ids")
        if not sites and not drives:
            raise SyncError(f"{where}: name `sites` (like contoso.sharepoint.com:/sites/Finance) or `drives` to sync")
        libraries = _names(options.get("libraries"), f"{where}: `libraries`", "document library names")
        if libraries and not sites:
            raise SyncError(f"{where}: `libraries` picks libraries of `sites`, and no site is named")
        pages = options.get("site_pages")
        if pages is not None and not (isinstance(pages, list) and all(isinstance(g, str) and g.strip() for g in pages)):
            raise SyncError(f"{where}: `site_pages` lists the access groups that may read the sites' pages ([]: all)")
        urls = {key: str(options.get(key) or default).rstrip("/") for key, default in (
            ("graph_url", GRAPH_URL), ("authority", AUTHORITY))}  # fmt: skip
        for key, value in urls.items():
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                example = GRAPH_URL if key == "graph_url" else AUTHORITY
                raise SyncError(f"{where}: `{key}` must be a URL, like {example}")
        try:
            made = cls(
                sites=sites,
                libraries=libraries,
                drives=drives,
                site_pages=None if pages is None else tuple(sorted({g.strip() for g in pages})),
                permissions=_permissions(options.get("permissions"), f"{where}: permissions"),
                graph_url=urls["graph_url"],
                authority=urls["authority"],
                scope=str(options.get("scope") or SCOPE),
                max_documents=int(options.get("max_documents", 5000)),
                timeout_seconds=float(options.get("timeout_seconds", 30.0)),
                max_wait_seconds=float(options.get("max_wait_seconds", 60.0)),
                max_bytes=int(options.get("max_bytes", 50_000_000)),
            )
        except (TypeError, ValueError) as exc:
            raise SyncError(f"{where}: a sharepoint setting is not a number: {exc}") from exc
        if made.max_documents < 1 or made.timeout_seconds <= 0 or made.max_wait_seconds < 0 or made.max_bytes < 1:
            raise SyncError(f"{where}: max_documents, timeout_seconds and max_bytes must be positive")
        return made


def _names(value: object, where: str, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise SyncError(f"{where} must list {what}")
    return tuple(dict.fromkeys(v.strip() for v in value))


def _permissions(value: object, where: str) -> PermissionMap:
    if value is None:
        value = {}
    if not isinstance(value, dict) or set(value) - _PERMISSION_KEYS:
        raise SyncError(f"{where} has {', '.join(sorted(_PERMISSION_KEYS))}, each mapping to access groups")
    tables: dict[str, dict[str, Readers]] = {}
    for key in ("groups", "site_groups", "users"):
        table = value.get(key) or {}
        if not isinstance(table, dict):
            raise SyncError(f"{where}.{key} must map names to access groups")
        tables[key] = {str(name): _readers(groups, f"{where}.{key}.{name}") for name, groups in table.items()}
    links = {
        key: None if value.get(key) is None else _readers(value[key], f"{where}.{key}")
        for key in ("organization", "anonymous")
    }
    return PermissionMap(
        tables["groups"], tables["site_groups"], tables["users"], links["organization"], links["anonymous"]
    )


def _readers(value: object, where: str) -> Readers:
    """`public`, one access group, or a list of them (`[]`: these readers add no group)."""
    if value == PUBLIC:
        return PUBLIC
    listed = [value] if isinstance(value, str) else value
    if not isinstance(listed, list) or not all(isinstance(g, str) and g.strip() for g in listed):
        raise SyncError(f"{where} must be an access group, a list of them, or `public`")
    if PUBLIC in listed:
        raise SyncError(f"{where}: write `public` alone (not in a list) to make these readers' items public")
    return tuple(sorted({g.strip() for g in listed}))
