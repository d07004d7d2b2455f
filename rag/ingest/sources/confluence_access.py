"""Who may read a Confluence page, in Candor's access groups: pure functions, no network.

A page's read restrictions name Confluence groups and users; the source's `permissions` map each to
Candor access groups. Confluence applies the read restrictions of every ancestor too (a page under
a restricted page, or in a restricted folder, is as restricted as its parent), so a page's groups
are those every restricted level of its ancestry allows (the intersection: a reader must pass each
level). The ancestry holds pages and the folders, whiteboards, databases and embeds between them.
Then:

- no restricted level: the space's groups (`space_access` for that space if configured, else who
  Confluence's space permissions let read the space, see `space_groups`, else the source's `access`);
- a restriction that names a group or user the mapping does not know: `NO_ONE` (logged), never public;
- restricted levels whose groups have nothing in common: `NO_ONE`;
- a restriction that could not be read (a 5xx): unknown (`None`). The connector then stores the page
  as readable by no one until it can be read again: keeping the groups it had would keep it open to
  readers a restriction added meanwhile may have shut out.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag.model.types import NO_ONE

log = logging.getLogger("candor.sync.confluence")


@dataclass(frozen=True, slots=True)
class Restriction:
    """The read restriction set on one page itself (not inherited): Confluence groups (by name and
    id) and users (by account id). Both empty: the page sets none."""

    groups: tuple[tuple[str, str], ...] = ()
    """(name, id) of each group."""
    users: tuple[tuple[str, str], ...] = ()
    """(account id, display name) of each user."""

    @property
    def restricts(self) -> bool:
        return bool(self.groups or self.users)

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> Restriction:
        """From `GET /wiki/rest/api/content/{id}/restriction/byOperation/read` (expanded with
        `restrictions.group,restrictions.user`)."""
        restrictions = data.get("restrictions") or {}
        groups = (restrictions.get("group") or {}).get("results") or []
        users = (restrictions.get("user") or {}).get("results") or []
        return cls(
            tuple((str(g.get("name", "")), str(g.get("id", ""))) for g in groups if isinstance(g, dict)),
            tuple((str(u.get("accountId", "")), str(u.get("displayName", ""))) for u in users if isinstance(u, dict)),
        )


UNREADABLE = "unreadable"
"""A page (or folder) whose restriction could not be read: its effective access is unknown."""


@dataclass(frozen=True, slots=True)
class PermissionMap:
    groups: Mapping[str, tuple[str, ...]]
    """A Confluence group's name or id → Candor access groups."""
    users: Mapping[str, tuple[str, ...]]
    """A Confluence user's account id → Candor access groups."""

    def mapped(self, restriction: Restriction) -> tuple[tuple[str, ...], list[str]]:
        """The Candor groups the restriction allows, and what it names that has no mapping."""
        allowed: set[str] = set()
        unmapped: list[str] = []
        for name, group_id in restriction.groups:
            found = self.groups.get(name) or self.groups.get(group_id)
            if found is None:
                unmapped.append(f"group {name or group_id}")
            else:
                allowed.update(found)
        for account_id, display in restriction.users:
            found = self.users.get(account_id)
            if found is None:
                unmapped.append(f"user {account_id}" + (f" ({display})" if display else ""))
            else:
                allowed.update(found)
        return tuple(sorted(allowed)), unmapped


def page_access(
    page_id: str,
    parents: Mapping[str, str | None],
    own: Mapping[str, Restriction | str],
    permissions: PermissionMap,
    space_groups: Sequence[str],
    *,
    where: str = "confluence",
) -> tuple[str, ...] | None:
    """The access groups of `page_id` (`()`: public, `(NO_ONE,)`: no one), or None when a
    restriction on it or an ancestor could not be read. `parents` maps a page to its parent: a page
    of the same listing, or a container (a folder, whiteboard, database or embed, which Confluence
    restricts as it does a page), itself mapped to its parent; `own` holds each one's own
    restriction or `UNREADABLE`. An ancestor `parents` holds but `own` does not restricts nothing,
    so the connector puts every ancestor it names in `own`."""
    levels: list[tuple[str, ...]] = []
    current: str | None = page_id
    seen: set[str] = set()
    while current is not None and current not in seen:
        seen.add(current)
        restriction = own.get(current, Restriction())
        if isinstance(restriction, str):
            return None
        if restriction.restricts:
            groups, unmapped = permissions.mapped(restriction)
            if unmapped:
                origin = "it" if current == page_id else f"its ancestor {current}"
                log.warning(
                    "%s: page %s restricted to no one: %s restricts reading to %s, with no access group mapped",
                    where,
                    page_id,
                    origin,
                    ", ".join(unmapped),
                )
                return (NO_ONE,)
            levels.append(groups)
        current = parents.get(current)
    if not levels:
        return tuple(sorted(set(space_groups)))
    common = set(levels[0]).intersection(*levels[1:])
    if not common:
        log.warning("%s: page %s restricted to no one: its restrictions share no access group", where, page_id)
        return (NO_ONE,)
    return tuple(sorted(common))


ANONYMOUS = "ANONYMOUS"
"""The role a space's permissions name when anyone the site lets in may read it."""


@dataclass(frozen=True, slots=True)
class SpaceReaders:
    """Who a space's permissions let read it (`read` on `space`; other operations are ignored)."""

    groups: tuple[str, ...] = ()
    """Group ids (v2 names principals by id only)."""
    users: tuple[str, ...] = ()
    """Account ids."""
    anonymous: bool = False

    @classmethod
    def parse(cls, results: Sequence[Mapping[str, Any]]) -> SpaceReaders:
        """From the results of `GET /wiki/api/v2/spaces/{id}/permissions`."""
        groups: set[str] = set()
        users: set[str] = set()
        anonymous = False
        for grant in results:
            operation = grant.get("operation") or {}
            if operation.get("key") != "read" or operation.get("targetType") != "space":
                continue
            principal = grant.get("principal") or {}
            kind, ident = str(principal.get("type", "")), str(principal.get("id", ""))
            if kind == "group" and ident:
                groups.add(ident)
            elif kind == "user" and ident:
                users.add(ident)
            elif kind == "role" and ident.upper() == ANONYMOUS:
                anonymous = True
        return cls(tuple(sorted(groups)), tuple(sorted(users)), anonymous)


def space_groups(
    readers: SpaceReaders,
    names: Mapping[str, str],
    permissions: PermissionMap,
    *,
    where: str = "confluence",
    space: str = "",
) -> tuple[str, ...]:
    """The access groups of a space's unrestricted pages, from who its permissions let read it.

    - anonymous read (the `ANONYMOUS` role): public, `()`;
    - otherwise the union of the groups its mapped readers (groups by name, via `names`, or id;
      users by account id) map to. A reader with no mapping is left out (logged): a space is read by
      many (every licensed user's group, admins, guests), and leaving one out only narrows who may
      read through Candor, never widens it; they still read the space in Confluence;
    - no reader maps: `NO_ONE` (logged), never public.

    This differs from a page restriction, where one unmapped name makes the page no one's: a
    restriction is a short list someone chose on purpose, and the issue's rule (an unresolved
    mapping restricts to no one) is kept there to the letter.
    """
    if readers.anonymous:
        return ()
    allowed: set[str] = set()
    left_out: list[str] = []
    for group_id in readers.groups:
        name = names.get(group_id, "")
        found = permissions.groups.get(name) if name else None
        found = found if found is not None else permissions.groups.get(group_id)
        if found is None:
            left_out.append(f"group {name or group_id}")
        else:
            allowed.update(found)
    for account_id in readers.users:
        found = permissions.users.get(account_id)
        if found is None:
            left_out.append(f"user {account_id}")
        else:
            allowed.update(found)
    if left_out:
        log.info(
            "%s: space %s: readers with no access group mapped are left out: %s", where, space, ", ".join(left_out)
        )
    if not allowed:
        log.warning(
            "%s: space %s restricted to no one: none of its readers maps to an access group (%s)",
            where,
            space,
            ", ".join(left_out) or "it has no readers",
        )
        return (NO_ONE,)
    return tuple(sorted(allowed))
