"""Who may answer for Candor: the expert role, and who may read what an expert keeps.

Replying to a hand-off, and keeping the reply as a curated answer, is publishing: a curated answer is
a document every reader of its groups is answered from. So only configured experts may do it
(`CANDOR_EXPERTS`); everyone else is refused in the form, and the attempt is logged. The dashboard's
admin (who edits, expires and removes curated answers there) and the operator at `candor answers`
are experts by the access they already hold.

    CANDOR_EXPERTS="slack:U0123ABCD=Ana Diaz, slack-group:S0456EFGH, teams:8d1f...=Ana Diaz, teams-team:19:..."

- ``slack:<user id>`` a Slack user; ``slack-group:<user group id>`` the members of a Slack user group
  (`usergroups.users.list`, scope ``usergroups:read``);
- ``teams:<Entra object id>`` a Teams user; ``teams-team:<team id>`` the members of a Teams team;
- ``=<name>`` after a user: the name their curated answers are signed with ("answered by Ana Diaz"),
  as the operator set it. Without it, the platform's name for the id, read when the answer is kept
  and frozen with it.

Group membership is the platform's to answer; this module is the pure part: the roster and the
reader groups a kept answer gets (`reader_groups`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from rag.errors import ConfigError
from rag.model.loop import CitedDocument

log = logging.getLogger("candor.experts")

Platform = Literal["slack", "teams"]
PLATFORMS: tuple[Platform, ...] = ("slack", "teams")
_KINDS = {"slack": "slack", "slack-group": "slack", "teams": "teams", "teams-team": "teams"}
_SLACK_USER = re.compile(r"[UW][A-Z0-9]{2,}")
_SLACK_GROUP = re.compile(r"S[A-Z0-9]{2,}")


@dataclass(frozen=True, slots=True)
class Experts:
    """The configured experts: users (with the name to sign with, if set) and groups, per platform."""

    users: dict[tuple[Platform, str], str | None] = field(default_factory=dict)
    groups: tuple[tuple[Platform, str], ...] = ()

    @classmethod
    def parse(cls, spec: str | None) -> Experts:
        """Read `CANDOR_EXPERTS`; a malformed entry is a `ConfigError` naming it."""
        users: dict[tuple[Platform, str], str | None] = {}
        groups: list[tuple[Platform, str]] = []
        for raw in (spec or "").split(","):
            entry = raw.strip()
            if not entry:
                continue
            kind, _, rest = entry.partition(":")
            ident, _, name = rest.partition("=")
            kind, ident, name = kind.strip().lower(), ident.strip(), " ".join(name.split())
            platform = _KINDS.get(kind)
            if platform is None or not ident:
                raise ConfigError(
                    f"CANDOR_EXPERTS: {entry!r} is not slack:<user id>, slack-group:<group id>, "
                    "teams:<Entra object id> or teams-team:<team id>"
                )
            if kind == "slack" and not _SLACK_USER.fullmatch(ident):
                raise ConfigError(f"CANDOR_EXPERTS: {ident!r} is not a Slack user id (U0123ABCD)")
            if kind == "slack-group" and not _SLACK_GROUP.fullmatch(ident):
                raise ConfigError(f"CANDOR_EXPERTS: {ident!r} is not a Slack user group id (S0123ABCD)")
            if kind.endswith(("-group", "-team")):
                if name:
                    raise ConfigError(f"CANDOR_EXPERTS: {entry!r}: a name is given to a user, not to a group")
                groups.append((platform, ident))  # type: ignore[arg-type]
            else:
                users[(platform, ident)] = name or None  # type: ignore[index]
        return cls(users, tuple(groups))

    def configured(self, platform: Platform) -> bool:
        """Anyone at all may answer on `platform` (else its triage channel cannot start)."""
        return any(p == platform for p, _ in self.users) or any(p == platform for p, _ in self.groups)

    def listed(self, platform: Platform, user: str) -> bool:
        """`user` is named as an expert (a group's members are the platform's to tell)."""
        return (platform, user) in self.users

    def groups_of(self, platform: Platform) -> tuple[str, ...]:
        return tuple(ident for p, ident in self.groups if p == platform)

    def name_of(self, platform: Platform, user: str) -> str | None:
        """The name the operator gave this expert, if any."""
        return self.users.get((platform, user))


def refused(platform: Platform, user: str, what: str) -> None:
    """Log a non-expert's attempt to answer for Candor (who, where, what)."""
    log.warning("refused: %s is not an expert and tried to %s", user, what, extra={"platform": platform, "user": user})


# --- who may read a kept answer --------------------------------------------------------------------

Readers = Literal["cited", "groups", "everyone"]
READERS: tuple[Readers, ...] = ("cited", "groups", "everyone")


def cited_groups(cited: Sequence[CitedDocument]) -> tuple[str, ...] | None:
    """The groups whose members may read every cited document, as narrow as the cited documents are:
    () when all are public; the groups every restricted one shares; None when they share none (no
    group list is that narrow, since reading needs only one group)."""
    restricted = [set(doc.groups) for doc in cited if doc.groups]
    if not restricted:
        return ()
    common = set.intersection(*restricted)
    return tuple(sorted(common)) if common else None


def default_readers(cited: Sequence[CitedDocument]) -> Readers | None:
    """The choice a form starts with: the cited documents' readers when the answer cited any and
    they share a group (or are all public); otherwise no choice, so the expert must make one."""
    return "cited" if cited and cited_groups(cited) is not None else None


def reader_groups(choice: str | None, named: Sequence[str], cited: Sequence[CitedDocument]) -> tuple[str, ...]:
    """The access groups a kept answer gets; a `ConfigError` saying what to choose when the choice
    cannot be honoured. Everyone is only ever an explicit choice."""
    if choice == "everyone":
        return ()
    if choice == "groups":
        groups = tuple(sorted({g.strip() for g in named if g.strip()}))
        if not groups:
            raise ConfigError("name at least one access group, or choose another option for who may read it")
        return groups
    if choice == "cited":
        if not cited:
            raise ConfigError("the answer cited no document: name the access groups, or choose everyone")
        narrow = cited_groups(cited)
        if narrow is None:
            every = sorted({g for doc in cited for g in doc.groups})
            raise ConfigError(
                f"the cited documents are readable by different groups ({', '.join(every)}): name the groups"
            )
        return narrow
    raise ConfigError("choose who may read the curated answer")


# --- how much a kept answer weighs in a conflict ---------------------------------------------------


def curated_authority(spec: str | None, kb: str) -> int:
    """`CANDOR_CURATED_AUTHORITY` for the knowledge base `kb`: a number for every base ("0", the
    default: the same as an ordinary document), or ``name=number`` pairs with ``*=number`` for the
    rest ("hr=2, *=0"). Capped by the base's ceiling where it is used."""
    table = parse_authority(spec)
    return table.get(kb, table.get("*", 0))


def parse_authority(spec: str | None) -> dict[str, int]:
    table: dict[str, int] = {}
    for raw in (spec or "0").split(","):
        entry = raw.strip()
        if not entry:
            continue
        name, _, value = entry.rpartition("=")
        try:
            number = int(value.strip())
        except ValueError:
            raise ConfigError(f"CANDOR_CURATED_AUTHORITY: {entry!r} is not a number or name=number") from None
        if number < 0:
            raise ConfigError(f"CANDOR_CURATED_AUTHORITY: {entry!r} is negative")
        table[name.strip() or "*"] = number
    return table
