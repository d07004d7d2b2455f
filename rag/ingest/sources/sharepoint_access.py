"""Who may read a SharePoint or OneDrive item, in Candor's access groups: pure functions, no network.

Graph lists an item's permissions (`GET /drives/{d}/items/{i}/permissions`): each one a grant to
people (`grantedToV2` / `grantedToIdentitiesV2`: an Entra `user` or `group`, a SharePoint `siteUser`
or `siteGroup` such as "Finance Members") or a sharing link (`link.scope`: `anonymous`,
`organization`, or `users`, whose people are in `grantedToIdentitiesV2`). The list is the item's
*effective* permissions: those it inherits from its folder, library and site come back with it
(marked `inheritedFrom` where Graph fills it in; SharePoint libraries often leave it out but still
list them), so no walk up the folders is needed, and an item whose inheritance is broken lists only
its own. The rules, each a grant adding readers (SharePoint's permissions are a union too):

- an item's access groups are the union of the groups its readers map to under the source's
  `permissions:` (`groups` by Entra id or display name, `site_groups` by name, login name or id,
  `users` by Entra id, email or login name, `organization` and `anonymous` for sharing links);
- a reader with no mapping (a person, a group nobody mapped, an application) is left out, logged
  once per principal by the connector: an unmapped reader narrows the audience, never widens it;
- an item none of whose readers maps to a group (no permissions at all, only unmapped people, links
  mapped to `[]`) is readable by no one (`NO_ONE`), never public;
- an item is public (`()`) only when one of its readers maps to the word `public` (an `anonymous`
  link with `anonymous: public`, say); one such grant is enough, as it is in SharePoint;
- a grant whose roles do not include reading (an unknown role, "limited access") adds no one, nor
  does one whose `expirationDateTime` has passed (an expired sharing link opens nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from rag.model.types import NO_ONE

PUBLIC: Literal["public"] = "public"
"""What a mapping says for readers who make an item public (`anonymous: public`)."""

Kind = Literal["user", "group", "site_group", "organization", "anonymous"]
Readers = tuple[str, ...] | Literal["public"]
"""The access groups a principal maps to, or `public`."""

_READING_ROLES = frozenset({"read", "write", "owner", "member"})


@dataclass(frozen=True, slots=True)
class Principal:
    """One reader a permission names: its kind, the keys a mapping may know it by (ids, emails,
    names, most stable first) and how a log line names it."""

    kind: Kind
    keys: tuple[str, ...]
    label: str


def reads(roles: Iterable[object]) -> bool:
    """Whether a permission's roles let its holders read the item (`read`, `write`, `owner`, and
    SharePoint's own `sp.*` levels but limited access, which opens no file)."""
    for role in roles:
        name = str(role).lower()
        if name in _READING_ROLES or (name.startswith("sp.") and "limited" not in name):
            return True
    return False


def principals(permission: Mapping[str, Any], now: datetime | None = None) -> list[Principal]:
    """The readers one permission (Graph's `permission` resource) grants; none when its roles do not
    include reading or it expired before `now`."""
    if not reads(permission.get("roles") or []) or _expired(permission.get("expirationDateTime"), now):
        return []
    found: list[Principal] = []
    link = permission.get("link")
    if isinstance(link, Mapping):
        scope = str(link.get("scope") or "")
        if scope == "anonymous":
            found.append(Principal("anonymous", ("anonymous",), "an anyone-with-the-link sharing link"))
        elif scope == "organization":
            found.append(Principal("organization", ("organization",), "an organization-wide sharing link"))
    identities: list[object] = []
    single = permission.get("grantedToV2") or permission.get("grantedTo")
    if single:
        identities.append(single)
    many = permission.get("grantedToIdentitiesV2") or permission.get("grantedToIdentities") or []
    if isinstance(many, list):
        identities.extend(many)
    for identity in identities:
        if isinstance(identity, Mapping):
            found.extend(_identity(identity))
    return found


def _expired(value: object, now: datetime | None) -> bool:
    if not isinstance(value, str) or not value:
        return False
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment <= (now or datetime.now(UTC))


def _identity(identity_set: Mapping[str, Any]) -> list[Principal]:
    found: list[Principal] = []
    facets: tuple[tuple[str, Kind, tuple[str, ...]], ...] = (
        ("user", "user", ("id", "email", "loginName")),
        ("siteUser", "user", ("email", "loginName", "id")),
        ("group", "group", ("id", "displayName", "email")),
        ("siteGroup", "site_group", ("displayName", "loginName", "id")),
    )
    for facet, kind, fields in facets:
        value = identity_set.get(facet)
        if not isinstance(value, Mapping):
            continue
        keys = tuple(str(value[f]) for f in fields if value.get(f) not in (None, ""))
        name = str(value.get("displayName") or value.get("email") or (keys[0] if keys else "?"))
        label = {"user": "user", "group": "group", "site_group": "SharePoint group"}[kind]
        found.append(Principal(kind, keys, f"{label} {name}" + (f" ({keys[0]})" if keys and keys[0] != name else "")))
    return found


@dataclass(frozen=True, slots=True)
class PermissionMap:
    """The source's `permissions:`. Keys are matched without regard to case (emails, names)."""

    groups: Mapping[str, Readers]
    """An Entra group's object id or display name → access groups."""
    site_groups: Mapping[str, Readers]
    """A SharePoint group's name ("Finance Members"), login name or id → access groups."""
    users: Mapping[str, Readers]
    """A user's Entra object id, email or login name → access groups."""
    organization: Readers | None = None
    """Readers of an organization-wide sharing link; None: such links add no one."""
    anonymous: Readers | None = None
    """Readers of an anyone-with-the-link sharing link; None: such links add no one."""

    def __post_init__(self) -> None:
        for name in ("groups", "site_groups", "users"):
            table: Mapping[str, Readers] = getattr(self, name)
            object.__setattr__(self, name, {key.casefold(): value for key, value in table.items()})

    def readers(self, principal: Principal) -> Readers | None:
        """What `principal` maps to, or None when the mapping does not know it."""
        if principal.kind == "organization":
            return self.organization
        if principal.kind == "anonymous":
            return self.anonymous
        table = {"user": self.users, "group": self.groups, "site_group": self.site_groups}[principal.kind]
        for key in principal.keys:
            found = table.get(key.casefold())
            if found is not None:
                return found
        return None


def item_access(
    permissions: Sequence[Mapping[str, Any]], mapping: PermissionMap, now: datetime | None = None
) -> tuple[tuple[str, ...], list[Principal]]:
    """The access groups of an item with these (effective) permissions: `()` public, `(NO_ONE,)` no
    one, else the union of its mapped readers' groups; and the readers that have no mapping."""
    groups: set[str] = set()
    unmapped: list[Principal] = []
    public = False
    for permission in permissions:
        for principal in principals(permission, now):
            readers = mapping.readers(principal)
            if readers is None:
                if principal not in unmapped:
                    unmapped.append(principal)
            elif readers == PUBLIC:
                public = True
            else:
                groups.update(readers)
    if public:
        return (), unmapped
    if not groups:
        return (NO_ONE,), unmapped
    return tuple(sorted(groups)), unmapped
