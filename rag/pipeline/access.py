"""`AccessPolicy`: where a question came from → the knowledge bases and access groups it may read.

Adapters only report the platform, the conversation ("T123/C456" for a Slack channel, a Teams
conversation id, ...), the asker as the platform authenticated them, who can read the conversation
(`Question.audience`) and whether the reply is shown to the asker alone (`Question.private_reply`);
the policy decides. Rules come from a YAML file (`CANDOR_ACCESS_POLICY`); each names its `platform`
(slack, teams or web), may match on `conversation` and `asker` (shell-style wildcards), grants
`groups` and, optionally, limits `knowledge_bases`:

    - platform: slack
      conversation: "T0001/C0HR*"
      groups: [hr-confidential]
    - platform: slack
      asker: "U0ADMIN"
      groups: [hr-confidential, finance]

Every matching rule adds its groups where it counts (below). Knowledge bases: the rules that count
here, and those that grant no groups at all (a rule that only names `knowledge_bases`), open the
union of their lists, or every knowledge base when one of them has no list; a matching rule whose
groups do not count here opens nothing: its list, if it has one, only narrows what the others open,
and without a list it changes nothing (an asker's rule without `knowledge_bases`, asked in a public
channel, does not open every knowledge base for them). When no rule opens any, the question starts
from every knowledge base, narrowed by those lists. Without a file, or when no rule matches, a
question reads public documents only, in every knowledge base.

Who reads the answer decides which rules count:
- a rule naming an `asker` grants that person's groups only where nobody else reads the answer: a
  direct message, or a reply shown to the asker alone (a Slack ephemeral reply, the chat page). In a
  private channel or a group chat it does not count: one HR person's question would post restricted
  text to everyone there;
- a rule about the conversation (or the whole platform) counts in private channels, group chats and
  direct messages;
- in a public or shared conversation (a public Slack channel, a Slack Connect channel) no rule about
  the conversation or the platform counts: everyone there, guests of other organisations included,
  would read the answer (a reply to the asker alone still gets the asker's own rules).
A chat page conversation is chosen by the browser, so a `web` rule may name askers only (the
identity an authenticating proxy vouched for); an anonymous question (`Question.anonymous`: a
browser's cookie id) gets no groups from any rule, only the knowledge-base limits of the rules
about its platform.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

import yaml

from rag.errors import ConfigError
from rag.model.answers import Question
from rag.model.types import AccessScope


@dataclass(frozen=True, slots=True)
class AccessRule:
    groups: frozenset[str]
    knowledge_bases: frozenset[str] | None = None
    platform: str | None = None
    conversation: str | None = None
    asker: str | None = None

    def matches(self, question: Question) -> bool:
        return (
            _match(self.platform, question.platform)
            and _match(self.conversation, question.conversation)
            and _match(self.asker, None if question.anonymous else question.asker)
        )

    def grants_groups_to(self, question: Question) -> bool:
        """Matches, and everyone who reads the answer is covered by what the rule is about."""
        if question.anonymous or not self.matches(question):
            return False
        if self.asker is not None:
            return question.audience == "direct" or question.private_reply
        return question.audience not in OPEN_AUDIENCES


def _match(pattern: str | None, value: str | None) -> bool:
    return pattern is None or (value is not None and fnmatchcase(value, pattern))


OPEN_AUDIENCES = frozenset({"public", "shared"})
PLATFORMS = ("slack", "teams", "web")


class AccessPolicy:
    def __init__(self, rules: Sequence[AccessRule] = ()) -> None:
        self.rules = tuple(rules)

    @classmethod
    def from_file(cls, path: Path) -> AccessPolicy:
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"CANDOR_ACCESS_POLICY: cannot read {path}: {exc}") from exc
        if loaded is None:
            return cls()
        if not isinstance(loaded, list):
            raise ConfigError(f"CANDOR_ACCESS_POLICY: {path} must hold a list of rules")
        return cls([_rule(entry, path, i) for i, entry in enumerate(loaded, 1)])

    def scope_for(self, question: Question) -> AccessScope:
        """The scope a question gets; a scope the caller set explicitly wins."""
        if question.scope is not None:
            return question.scope
        matching = [rule for rule in self.rules if rule.matches(question)]
        counting = [rule for rule in matching if rule.grants_groups_to(question)]
        groups = frozenset().union(*(rule.groups for rule in counting))
        opening = [rule for rule in matching if rule in counting or not rule.groups]
        bases = _opened(opening)
        for rule in matching:  # a rule whose groups do not count here may narrow, never widen
            if rule not in opening and rule.knowledge_bases is not None:
                bases = rule.knowledge_bases if bases is None else bases & rule.knowledge_bases
        return AccessScope(groups, bases)


def _opened(rules: Sequence[AccessRule]) -> frozenset[str] | None:
    """The knowledge bases `rules` open: the union of their lists; None (every one) when there are
    no rules, or one of them has no list."""
    if not rules or any(rule.knowledge_bases is None for rule in rules):
        return None
    return frozenset().union(*(rule.knowledge_bases or () for rule in rules))


def _rule(entry: object, path: Path, number: int) -> AccessRule:
    where = f"CANDOR_ACCESS_POLICY: {path}, rule {number}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: each rule is a mapping")
    unknown = set(entry) - {"platform", "conversation", "asker", "groups", "knowledge_bases"}
    if unknown:
        raise ConfigError(f"{where}: unknown keys {sorted(unknown)}")
    groups = entry.get("groups", [])
    bases = entry.get("knowledge_bases")
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        raise ConfigError(f"{where}: groups must be a list of names")
    if bases is not None and (not isinstance(bases, list) or not all(isinstance(b, str) for b in bases)):
        raise ConfigError(f"{where}: knowledge_bases must be a list of names")
    for key in ("platform", "conversation", "asker"):
        if entry.get(key) is not None and not isinstance(entry[key], str):
            raise ConfigError(f"{where}: {key} must be a string")
    platform = entry.get("platform")
    if platform not in PLATFORMS:
        named = "has no platform" if platform is None else f"names platform {platform!r}"
        raise ConfigError(f"{where} {named}: every rule names one of {', '.join(PLATFORMS)}")
    if platform == "web" and entry.get("conversation") is not None:
        raise ConfigError(f"{where}: a web rule cannot name a conversation (the browser chooses it); name an asker")
    return AccessRule(
        groups=frozenset(groups),
        knowledge_bases=None if bases is None else frozenset(bases),
        platform=entry.get("platform"),
        conversation=entry.get("conversation"),
        asker=entry.get("asker"),
    )
