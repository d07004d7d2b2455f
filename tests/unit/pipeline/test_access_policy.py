"""`rag.pipeline.access.AccessPolicy`: rules from a YAML file → the scope a question reads with."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.errors import ConfigError
from rag.model.answers import Question
from rag.model.types import AccessScope
from rag.pipeline.access import AccessPolicy, AccessRule

POLICY = """\
- platform: slack
  conversation: "T0001/C0HR*"
  groups: [hr-confidential]
- platform: slack
  asker: "U0ADMIN"
  groups: [hr-confidential, finance]
- platform: teams
  groups: [sales]
  knowledge_bases: [sales-kb]
- platform: teams
  conversation: "19:exec*"
  groups: [exec]
  knowledge_bases: [exec-kb]
"""


def policy_from(tmp_path: Path, text: str) -> AccessPolicy:
    path = tmp_path / "access.yaml"
    path.write_text(text, encoding="utf-8")
    return AccessPolicy.from_file(path)


@pytest.fixture
def policy(tmp_path: Path) -> AccessPolicy:
    return policy_from(tmp_path, POLICY)


def test_the_file_is_read_into_rules(policy: AccessPolicy) -> None:
    assert len(policy.rules) == 4
    assert policy.rules[0] == AccessRule(
        groups=frozenset({"hr-confidential"}), platform="slack", conversation="T0001/C0HR*"
    )
    assert policy.rules[2].knowledge_bases == frozenset({"sales-kb"})


def test_an_explicit_scope_wins(policy: AccessPolicy) -> None:
    explicit = AccessScope(frozenset({"engineering"}), frozenset({"docs"}))
    question = Question("q", scope=explicit, platform="slack", conversation="T0001/C0HR42", asker="U0ADMIN")
    assert policy.scope_for(question) is explicit
    public = AccessScope.public()
    assert policy.scope_for(Question("q", scope=public, asker="U0ADMIN")) is public


def test_a_conversation_wildcard_grants_its_groups(policy: AccessPolicy) -> None:
    question = Question("q", platform="slack", conversation="T0001/C0HR42", asker="U0042")
    assert policy.scope_for(question) == AccessScope(frozenset({"hr-confidential"}), None)


@pytest.mark.parametrize(
    ("platform", "conversation"),
    [
        ("slack", "T0001/C0GENERAL"),  # another channel
        ("slack", "T0002/C0HR42"),  # the same channel name in another workspace
        ("teams", "T0001/C0HR42"),  # the rule is for Slack only
        ("slack", None),  # a DM: no conversation to match
    ],
)
def test_the_wildcard_does_not_match_elsewhere(policy: AccessPolicy, platform: str, conversation: str | None) -> None:
    scope = policy.scope_for(Question("q", platform=platform, conversation=conversation))  # type: ignore[arg-type]
    assert "hr-confidential" not in scope.groups


def test_matching_is_case_sensitive(policy: AccessPolicy) -> None:
    scope = policy.scope_for(Question("q", platform="slack", conversation="t0001/c0hr42"))
    assert scope == AccessScope.public()


def test_every_matching_rule_adds_its_groups(policy: AccessPolicy) -> None:
    question = Question("q", platform="slack", conversation="T0001/C0HR42", asker="U0ADMIN", audience="direct")
    assert policy.scope_for(question).groups == {"hr-confidential", "finance"}


def test_an_asker_rule_applies_on_its_own_platform_only(policy: AccessPolicy) -> None:
    slack = Question("q", platform="slack", asker="U0ADMIN", audience="direct")
    assert policy.scope_for(slack).groups == {"hr-confidential", "finance"}
    for platform in ("teams", "web", "cli"):
        elsewhere = Question("q", platform=platform, asker="U0ADMIN", audience="direct")  # type: ignore[arg-type]
        assert not policy.scope_for(elsewhere).groups & {"hr-confidential", "finance"}
    other = Question("q", platform="slack", asker="U0ADMIN2", audience="direct")
    assert policy.scope_for(other) == AccessScope.public()


@pytest.mark.parametrize(
    ("audience", "private_reply", "granted"),
    [
        ("direct", False, True),  # a DM: the asker alone reads it
        ("public", True, True),  # an ephemeral reply in a public channel: the asker alone reads it
        ("private", True, True),
        ("private", False, False),  # a private channel: its other members would read HR's text
        ("public", False, False),
        ("shared", False, False),
        (None, False, False),  # an adapter that does not say who reads: the safe answer
    ],
)
def test_an_askers_own_groups_count_only_where_the_asker_alone_reads_the_answer(
    policy: AccessPolicy, audience: str | None, private_reply: bool, granted: bool
) -> None:
    question = Question(
        "q",
        platform="slack",
        conversation="T0001/C0GENERAL",
        asker="U0ADMIN",
        audience=audience,  # type: ignore[arg-type]
        private_reply=private_reply,
    )
    assert policy.scope_for(question).groups == ({"hr-confidential", "finance"} if granted else set())


def test_knowledge_bases_limit_the_scope(policy: AccessPolicy) -> None:
    scope = policy.scope_for(Question("q", platform="teams", conversation="19:general"))
    assert scope == AccessScope(frozenset({"sales"}), frozenset({"sales-kb"}))


def test_limits_of_several_matching_rules_are_united(policy: AccessPolicy) -> None:
    scope = policy.scope_for(Question("q", platform="teams", conversation="19:exec-board"))
    assert scope.groups == {"sales", "exec"}
    assert scope.knowledge_bases == frozenset({"sales-kb", "exec-kb"})


def test_no_matching_rule_means_public_documents_in_every_knowledge_base(policy: AccessPolicy) -> None:
    scope = policy.scope_for(Question("q", platform="web", conversation="browser", asker="someone"))
    assert scope == AccessScope.public()
    assert scope.knowledge_bases is None
    assert scope.can_read(())
    assert not scope.can_read(("hr-confidential",))


def test_without_rules_every_question_is_public() -> None:
    assert AccessPolicy().scope_for(Question("q", platform="slack", asker="U0ADMIN")) == AccessScope.public()


def test_an_empty_file_has_no_rules(tmp_path: Path) -> None:
    assert policy_from(tmp_path, "").rules == ()


def test_a_rule_without_groups_grants_nothing(tmp_path: Path) -> None:
    policy = policy_from(tmp_path, "- platform: web\n  knowledge_bases: [public-kb]\n")
    assert policy.scope_for(Question("q", platform="web")) == AccessScope(frozenset(), frozenset({"public-kb"}))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("platform: slack\ngroups: [hr]\n", "must hold a list of rules"),
        ("- slack\n", "rule 1: each rule is a mapping"),
        ("- platform: web\n  groups: [a]\n- platfrom: slack\n  groups: [hr]\n", r"rule 2: unknown keys \['platfrom'\]"),
        ("- platform: slack\n  groups: hr-confidential\n", "rule 1: groups must be a list"),
        ("- platform: slack\n  groups: [hr, 3]\n", "rule 1: groups must be a list"),
        ("- platform: slack\n  groups: [hr]\n  knowledge_bases: hr-kb\n", "rule 1: knowledge_bases must be a list"),
        ("- platform: slack\n  groups: [hr]\n  asker: 42\n", "rule 1: asker must be a string"),
        ("- asker: U0ADMIN\n  groups: [hr]\n", "rule 1 has no platform: every rule names one of slack, teams, web"),
        ("- platform: '*'\n  groups: [hr]\n", "rule 1 names platform '\\*'"),
        ("- platform: cli\n  groups: [hr]\n", "rule 1 names platform 'cli'"),
        ("- platform: web\n  conversation: 'web/*'\n  groups: [hr]\n", "a web rule cannot name a conversation"),
        ("- groups: [hr\n", "cannot read"),
    ],
)
def test_malformed_files_name_the_setting(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        policy_from(tmp_path, text)
    assert str(raised.value).startswith("CANDOR_ACCESS_POLICY")


def test_a_missing_file_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^CANDOR_ACCESS_POLICY: cannot read"):
        AccessPolicy.from_file(tmp_path / "missing.yaml")


@pytest.mark.parametrize("audience", ["public", "shared"])
def test_a_public_or_shared_conversation_never_gets_groups(policy: AccessPolicy, audience: str) -> None:
    # The rule grants hr-confidential to C0HR*, and the asker is an admin: a public channel still reads public only.
    question = Question(
        "q",
        platform="slack",
        conversation="T0001/C0HR42",
        asker="U0ADMIN",
        audience=audience,  # type: ignore[arg-type]
    )
    assert policy.scope_for(question) == AccessScope(frozenset(), None)


def test_a_public_channel_keeps_the_knowledge_base_limits(tmp_path: Path) -> None:
    policy = policy_from(tmp_path, "- platform: slack\n  groups: [staff]\n  knowledge_bases: [handbook]\n")
    question = Question("q", platform="slack", conversation="T0001/C0GENERAL", audience="public")
    assert policy.scope_for(question) == AccessScope(frozenset(), frozenset({"handbook"}))


@pytest.mark.parametrize("audience", ["private", "direct", None])
def test_private_and_direct_conversations_keep_their_groups(policy: AccessPolicy, audience: str | None) -> None:
    question = Question("q", platform="slack", conversation="T0001/C0HR42", audience=audience)  # type: ignore[arg-type]
    assert policy.scope_for(question) == AccessScope(frozenset({"hr-confidential"}), None)


def test_an_anonymous_asker_gets_no_groups_but_keeps_the_knowledge_base_limits(tmp_path: Path) -> None:
    policy = policy_from(
        tmp_path,
        "- platform: web\n  knowledge_bases: [help-centre]\n"
        "- platform: web\n  groups: [staff]\n  knowledge_bases: [help-centre]\n"
        '- platform: web\n  asker: "web-*"\n  groups: [hr-confidential]\n',
    )
    browser = Question("q", platform="web", asker="web-0011", audience="direct", private_reply=True, anonymous=True)
    assert policy.scope_for(browser) == AccessScope(frozenset(), frozenset({"help-centre"}))
    person = Question("q", platform="web", asker="web-0011", audience="direct", private_reply=True)
    assert policy.scope_for(person).groups == {"staff", "hr-confidential"}


ASKER_WITHOUT_BASES = """\
- platform: slack
  groups: [staff]
  knowledge_bases: [handbook]
- platform: slack
  asker: "U0ADMIN"
  groups: [finance]
"""


@pytest.mark.parametrize(
    ("audience", "private_reply", "groups", "bases"),
    [
        # the admin's rule counts only where the admin alone reads the answer: there it opens every base
        ("direct", False, {"staff", "finance"}, None),
        # (a reply to the admin alone in a public channel: the platform's rule grants nothing there,
        # and its list still limits)
        ("public", True, {"finance"}, frozenset({"handbook"})),
        # elsewhere it grants nothing, and so opens nothing: the platform's limit stands
        ("private", False, {"staff"}, frozenset({"handbook"})),
        ("public", False, set(), frozenset({"handbook"})),
        ("shared", False, set(), frozenset({"handbook"})),
    ],
)
def test_a_rule_that_grants_no_groups_here_does_not_widen_the_knowledge_bases(
    tmp_path: Path, audience: str, private_reply: bool, groups: set[str], bases: frozenset[str] | None
) -> None:
    policy = policy_from(tmp_path, ASKER_WITHOUT_BASES)
    question = Question(
        "q",
        platform="slack",
        conversation="T0001/C0GENERAL",
        asker="U0ADMIN",
        audience=audience,  # type: ignore[arg-type]
        private_reply=private_reply,
    )
    assert policy.scope_for(question) == AccessScope(frozenset(groups), bases)


def test_a_rule_that_grants_nothing_here_only_narrows_with_its_own_list(tmp_path: Path) -> None:
    policy = policy_from(
        tmp_path,
        ASKER_WITHOUT_BASES + '- platform: slack\n  asker: "U0ADMIN"\n  groups: [hr]\n  knowledge_bases: [hr-kb]\n',
    )
    public = Question("q", platform="slack", conversation="T0001/C0GENERAL", asker="U0ADMIN", audience="public")
    # neither admin rule counts in a public channel: hr-kb is not added to the platform's handbook
    assert policy.scope_for(public).knowledge_bases == frozenset()
    direct = Question("q", platform="slack", conversation="T0001/D0ADMIN", asker="U0ADMIN", audience="direct")
    assert policy.scope_for(direct) == AccessScope(frozenset({"staff", "finance", "hr"}), None)
