"""Who may read a Google Drive file, in Candor's access groups: pure functions, no network.

Drive shares a file through its permissions: each names a reader by `type` (`user` or `group`, by
email address; `domain`, by domain; `anyone`, everyone with the link) and a `role` (every role, from
`reader` to `owner`, can open the file). The source's `permissions:` maps readers to access groups:

    permissions:
      users: {ana@example.com: [hr]}           # by email address (case does not matter)
      groups: {hr-team@example.com: [hr]}       # a Google group, by its email address
      domains: {example.com: [staff]}           # everyone in a Workspace domain
      anyone: []                                # a file anyone can open: public ([]) or these groups

The rules, in order:

- a file's groups are the union of the groups its mapped readers map to: anyone who may open it in
  Drive and holds one of those groups may read it in Candor;
- a reader with no mapping (its owner, a colleague it was shared with, the service account itself)
  is left out, logged once per principal: that person can still open the file in Drive, just not
  through Candor. Leaving a reader out only ever narrows who may read, never widens it;
- a permission for `anyone` gives the `anyone:` mapping's groups, `[]` meaning public; when
  `anyone` is not configured it gives the source's `access` (which is public when that is empty);
  only this makes a file public: `users`, `groups` and `domains` must map to at least one group;
- a file none of whose readers maps is readable by no one (`NO_ONE`, logged), never public;
- a permission Drive marks `deleted` (its account is gone) reads nothing and is ignored.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag.errors import SyncError
from rag.model.types import NO_ONE

log = logging.getLogger("candor.sync.gdrive")

PRINCIPAL_TYPES = ("user", "group", "domain", "anyone")


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
        return f"{self.type} {self.principal}".strip()


@dataclass(frozen=True, slots=True)
class PermissionMap:
    users: Mapping[str, tuple[str, ...]]
    groups: Mapping[str, tuple[str, ...]]
    domains: Mapping[str, tuple[str, ...]]
    anyone: tuple[str, ...] | None = None
    """`anyone:`'s groups (`()`: public), or None when not configured (the source's `access` applies)."""

    @classmethod
    def parse(cls, value: object, where: str) -> PermissionMap:
        if value is None:
            value = {}
        known = {"users", "groups", "domains", "anyone"}
        if not isinstance(value, dict) or set(value) - known:
            raise SyncError(f"{where}: `permissions` has `users`, `groups`, `domains` and `anyone` (got {value!r})")
        anyone = value.get("anyone")
        if anyone is not None:
            anyone = _groups(anyone, f"{where}: permissions.anyone", empty=True)
        return cls(
            _principals(value.get("users"), f"{where}: permissions.users"),
            _principals(value.get("groups"), f"{where}: permissions.groups"),
            _principals(value.get("domains"), f"{where}: permissions.domains"),
            anyone,
        )

    def groups_of(self, permission: Permission, source_access: Sequence[str]) -> tuple[str, ...] | None:
        """The groups one reader maps to (`()`: public, for `anyone` only), or None: no mapping."""
        if permission.type == "anyone":
            return self.anyone if self.anyone is not None else tuple(sorted(set(source_access)))
        table = {"user": self.users, "group": self.groups, "domain": self.domains}.get(permission.type)
        return None if table is None else table.get(permission.principal)


@dataclass(frozen=True, slots=True)
class FileAccess:
    groups: tuple[str, ...]
    """`()` public, `(NO_ONE,)` no one, else the access groups that may read."""
    unmapped: tuple[str, ...] = ()
    """The readers left out (no mapping), described as `type principal`."""


def file_access(
    permissions: Iterable[Permission], mapping: PermissionMap, source_access: Sequence[str] = ()
) -> FileAccess:
    """Who may read a file with these permissions (the rules in the module's docstring)."""
    groups: set[str] = set()
    public = False
    unmapped: list[str] = []
    for permission in permissions:
        found = mapping.groups_of(permission, source_access)
        if found is None:
            unmapped.append(permission.describe())
        elif not found:
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
                    "not through Candor)",
                    self.where,
                    principal,
                )
        if access.groups == (NO_ONE,):
            log.warning(
                "%s: %r is readable by no one in Candor: none of its readers (%s) has an access group mapped",
                self.where,
                title,
                ", ".join(access.unmapped) or "none",
            )


def _principals(value: object, where: str) -> dict[str, tuple[str, ...]]:
    """Email addresses or domains (lower-cased) → access groups, at least one each."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SyncError(f"{where} must map email addresses or domains to access groups")
    return {str(key).strip().lower(): _groups(groups, f"{where}.{key}", empty=False) for key, groups in value.items()}


def _groups(value: object, where: str, *, empty: bool) -> tuple[str, ...]:
    listed = [value] if isinstance(value, str) else value
    if not isinstance(listed, list) or not all(isinstance(g, str) and g.strip() for g in listed):
        raise SyncError(f"{where} must be an access group or a list of them")
    if not listed and not empty:
        raise SyncError(f"{where} maps to no access group: only `anyone: []` makes a file public")
    return tuple(sorted({g.strip() for g in listed}))
