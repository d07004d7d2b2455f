"""Who may read a Google Drive file, in Candor's access groups: pure functions, no network.

Drive shares a file through its permissions: each names a reader by `type` (`user` or `group`, by
email address; `domain`, by domain; `anyone`, everyone with the link) and a `role` (every role, from
`reader` to `owner`, can open the file). The source's `permissions:` maps readers to access groups:

    permissions:
      users: {ana@example.com: [hr]}           # by email address (case does not matter)
      groups: {hr-team@example.com: [hr]}       # a Google group, by its email address
      domains: {example.com: [staff]}           # everyone in a Workspace domain
      anyone: public                            # a file anyone with the link can open: public (or groups)

The rules, in order, the same as a SharePoint source's (`sharepoint_access`), so a habit carried
from one to the other never opens a file wider than meant:

- a file's groups are the union of the groups its mapped readers map to: anyone who may open it in
  Drive and holds one of those groups may read it in Candor;
- a reader with no mapping (its owner, a colleague it was shared with, the service account itself,
  and a link anyone can open when `anyone` is not set) is left out, logged once per principal: that
  person can still open the file in Drive, just not through Candor. Leaving a reader out only ever
  narrows who may read, never widens it;
- a file is public only when one of its readers maps to the word `public` (`anyone: public`, say),
  written alone as SharePoint's mapping spells it; nothing else, not `[]` nor an unset mapping,
  makes a file public;
- a file none of whose readers maps is readable by no one (`NO_ONE`, logged), never public;
- a permission Drive marks `deleted` (its account is gone) reads nothing and is ignored.

The source's own `access` is refused (`gdrive.py`): Drive's permissions decide who reads each file.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rag.errors import SyncError
from rag.ingest.sources.sharepoint_access import PUBLIC, Readers
from rag.model.types import NO_ONE

log = logging.getLogger("candor.sync.gdrive")

PRINCIPAL_TYPES = ("user", "group", "domain", "anyone")
ANYONE_WITH_THE_LINK = "anyone with the link"
"""How a log line names a permission for `anyone`."""


@dataclass(frozen=True, slots=True)
class Permission:
    """One reader of a file: its type, and its email address (`user`, `group`) or domain."""

    type: str
    principal: str = ""
    role: str = "reader"

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> Permission | None:
        """From a Drive v3 `Permission` resource; None for one Drive marks `deleted`."""
        if data.get("deleted"):
            return None
        kind = str(data.get("type") or "")
        if kind in ("user", "group"):
            principal = str(data.get("emailAddress") or data.get("id") or "")
        elif kind == "domain":
            principal = str(data.get("domain") or "")
        else:
            principal = ""
        return cls(kind, principal.strip().lower(), str(data.get("role") or "reader"))

    def describe(self) -> str:
        if self.type == "anyone":
            return ANYONE_WITH_THE_LINK
        return f"{self.type} {self.principal}".strip()


@dataclass(frozen=True, slots=True)
class PermissionMap:
    users: Mapping[str, Readers]
    groups: Mapping[str, Readers]
    domains: Mapping[str, Readers]
    anyone: Readers | None = None
    """What a link anyone can open maps to (`public`, or groups); None when not configured: such a
    link adds no one, as an unset `anonymous` link does in a SharePoint source."""

    @classmethod
    def parse(cls, value: object, where: str) -> PermissionMap:
        if value is None:
            value = {}
        known = {"users", "groups", "domains", "anyone"}
        if not isinstance(value, dict) or set(value) - known:
            raise SyncError(f"{where}: `permissions` has `users`, `groups`, `domains` and `anyone` (got {value!r})")
        anyone = value.get("anyone")
        return cls(
            _principals(value.get("users"), f"{where}: permissions.users"),
            _principals(value.get("groups"), f"{where}: permissions.groups"),
            _principals(value.get("domains"), f"{where}: permissions.domains"),
            None if anyone is None else _readers(anyone, f"{where}: permissions.anyone"),
        )

    def groups_of(self, permission: Permission) -> Readers | None:
        """What one reader maps to (`public`, or its groups), or None: no mapping, the reader is left out."""
        if permission.type == "anyone":
            return self.anyone
        table = {"user": self.users, "group": self.groups, "domain": self.domains}.get(permission.type)
        return None if table is None else table.get(permission.principal)


@dataclass(frozen=True, slots=True)
class FileAccess:
    groups: tuple[str, ...]
    """`()` public, `(NO_ONE,)` no one, else the access groups that may read."""
    unmapped: tuple[str, ...] = ()
    """The readers left out (no mapping), described as `type principal` (or `anyone with the link`)."""


def file_access(permissions: Iterable[Permission], mapping: PermissionMap) -> FileAccess:
    """Who may read a file with these permissions (the rules in the module's docstring)."""
    groups: set[str] = set()
    public = False
    unmapped: list[str] = []
    for permission in permissions:
        found = mapping.groups_of(permission)
        if found is None:
            unmapped.append(permission.describe())
        elif found == PUBLIC:
            public = True
        else:
            groups.update(found)
    left_out = tuple(dict.fromkeys(unmapped))
    if public:
        return FileAccess((), left_out)
    if not groups:
        return FileAccess((NO_ONE,), left_out)
    return FileAccess(tuple(sorted(groups)), left_out)


class UnmappedLog:
    """Logs each reader with no mapping once per sync (not once per file it can read), and each file
    that no mapped reader can read."""

    def __init__(self, where: str) -> None:
        self.where = where
        self._seen: set[str] = set()

    def note(self, title: str, access: FileAccess) -> None:
        for principal in access.unmapped:
            if principal not in self._seen:
                self._seen.add(principal)
                log.info(
                    "%s: %s has no access group mapped: left out (it can still open its files in Drive, "
                    "not through Candor%s)",
                    self.where,
                    principal,
                    "; `anyone: public` makes such files public" if principal == ANYONE_WITH_THE_LINK else "",
                )
        if access.groups == (NO_ONE,):
            log.warning(
                "%s: %r is readable by no one in Candor: none of its readers (%s) has an access group mapped",
                self.where,
                title,
                ", ".join(access.unmapped) or "none",
            )


def _principals(value: object, where: str) -> dict[str, Readers]:
    """Email addresses or domains (lower-cased) → `public` or access groups (at least one)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SyncError(f"{where} must map email addresses or domains to access groups")
    return {str(key).strip().lower(): _readers(groups, f"{where}.{key}") for key, groups in value.items()}


def _readers(value: object, where: str) -> Readers:
    """`public` (written alone, as a SharePoint source's mapping spells it), one access group, or a list
    of them. `[]` is refused rather than read: it once meant public for `anyone`, and a mapping that
    silently changed meaning would surprise whoever wrote it."""
    if value == PUBLIC:
        return PUBLIC
    listed = [value] if isinstance(value, str) else value
    if not isinstance(listed, list) or not all(isinstance(g, str) and g.strip() for g in listed):
        raise SyncError(f"{where} must be an access group, a list of them, or `public`")
    if PUBLIC in (g.strip() for g in listed):
        raise SyncError(f"{where}: write `public` alone (not in a list) to make these readers' files public")
    if not listed:
        raise SyncError(
            f"{where} maps to no access group: write `public` to make these readers' files public, or leave "
            "the reader out (an unmapped reader adds no one)"
        )
    return tuple(sorted({g.strip() for g in listed}))
