"""Who may read a Notion page, and which pages a source syncs: pure functions, no network.

Notion's API does not say who may read a page. A page object carries no permissions, and no
endpoint lists a page's members or sharing settings: the API reference's page object
(https://developers.notion.com/reference/page) has only `parent`, `properties`, timestamps and
URLs; an integration sees exactly the pages shared with it, whoever else may see them. So
access comes from the sources file, and it must be written down (a workspace is usually internal):

- the source's `access` (required for this kind: `[]` means public) for every page;
- `page_access: {<page, database or data source id>: [groups]}` for that page or database and
  every page below it: the nearest configured ancestor wins (its `parent` ids are walked up to
  the workspace);
- a page whose ancestry passes through a page the integration cannot see cannot be placed. When
  `page_access` names an id the integration cannot see (a configuration line says so), such a page
  might lie below it, so it is readable by **no one** (`NO_ONE`, logged), never given the broader
  `access`; otherwise it gets the nearest configured ancestor it can see, else `access`;
- a page whose place could not be read (a 5xx while resolving a parent block) before a configured
  ancestor is reached is readable by **no one** until it can be read again: the groups it had may be
  wider than those of the place it has now, and the source's `access` may be public. With `roots`,
  such a page may or may not lie below a root (`under_roots` says None): it is kept, readable by no
  one, so that a failing lookup deletes nothing; if it lies elsewhere, the next complete run that
  can read its place removes it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Mapping, Sequence

from rag.model.types import NO_ONE

log = logging.getLogger("candor.sync.notion")

TOP = ""
"""The parent of a page or database at the top of the workspace (or of a teamspace)."""
_HEX_ID = re.compile(r"([0-9a-f]{8})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{12})(?![0-9a-f])")


def notion_id(value: str) -> str | None:
    """A Notion id in its dashed form, from an id with or without dashes or a page's URL (the id is
    its last 32 hex digits); None when there is none."""
    found = _HEX_ID.findall(value.strip().lower().split("?")[0].split("#")[0])
    return "-".join(found[-1]) if found else None


def ancestry(node: str, parents: Mapping[str, str]) -> tuple[list[str], bool]:
    """`node` and its ancestors, nearest first, and whether the walk reached the top of the workspace
    (False: it stopped at an id the integration cannot see). `parents` maps each known page,
    database, data source or block to its parent (`TOP` at the top)."""
    chain: list[str] = []
    current = node
    while current not in chain:
        chain.append(current)
        if current not in parents:
            return chain, False
        parent = parents[current]
        if parent == TOP:
            return chain, True
        current = parent
    return chain, True  # a cycle: stop where it closes


def page_groups(
    node: str,
    parents: Mapping[str, str],
    page_access: Mapping[str, tuple[str, ...]],
    access: Sequence[str],
    *,
    unseen: Collection[str] = (),
    unreadable: Collection[str] = (),
    where: str = "notion",
) -> tuple[str, ...]:
    """The access groups of page (or database) `node`: `()` public, `(NO_ONE,)` no one. `unseen` holds
    the `page_access` ids the integration cannot see; `unreadable` the ids whose parent could not be
    read: a page whose walk up stops at one of those before any configured ancestor might lie below
    any `page_access` id, so it is readable by no one (the caller says so in the log, once per page)."""
    chain, complete = ancestry(node, parents)
    for current in chain:
        if current in page_access:
            return page_access[current]
        if current in unreadable:
            return (NO_ONE,)
    if not complete and unseen:
        log.warning(
            "%s: page %s readable by no one: its ancestry passes through %s, which the integration cannot "
            "see, and page_access names ids it cannot see (%s); share those pages with the integration",
            where,
            node,
            chain[-1],
            ", ".join(sorted(unseen)),
        )
        return (NO_ONE,)
    return tuple(sorted(set(access)))


def under_roots(
    node: str, parents: Mapping[str, str], roots: Collection[str], unreadable: Collection[str] = ()
) -> bool | None:
    """Whether `node` is one of `roots` or lies below one; None when that cannot be told, because the
    walk up stops at an id whose parent could not be read before it meets a root (the caller keeps
    such a page rather than let a failed lookup look like a page that left the roots)."""
    chain, _ = ancestry(node, parents)
    if any(current in roots for current in chain):
        return True
    return None if chain[-1] in unreadable else False


def unread_ancestor(node: str, parents: Mapping[str, str], unreadable: Collection[str]) -> str | None:
    """The id at which `node`'s walk up stops because its parent could not be read, if it does."""
    chain, _ = ancestry(node, parents)
    return chain[-1] if chain[-1] in unreadable else None


def unseen_ids(configured: Collection[str], known: Collection[str]) -> list[str]:
    """The configured ids (of `page_access` or `roots`) that the integration cannot see."""
    return sorted(set(configured) - set(known))
