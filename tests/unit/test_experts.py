"""The pure part of the expert role: the roster read from CANDOR_EXPERTS, who may read a kept answer,
and a curated answer's authority per knowledge base."""

from __future__ import annotations

import pytest

from rag.config import load_settings
from rag.errors import ConfigError
from rag.experts import Experts, cited_groups, curated_authority, default_readers, reader_groups
from rag.model.loop import CitedDocument

HR = CitedDocument("Salary bands", ("hr-confidential",))
HR_FINANCE = CitedDocument("Payroll calendar", ("finance", "hr-confidential"))
FINANCE = CitedDocument("Budget", ("finance",))
PUBLIC = CitedDocument("Office guide")


def test_the_roster_reads_users_with_names_and_groups_per_platform() -> None:
    experts = Experts.parse(
        "slack:U0123ABCD=Ana  Diaz, slack-group:S0456EFGH, teams:8d1f-aa=Bo, teams-team:19:x@thread.tacv2"
    )
    assert experts.listed("slack", "U0123ABCD") and not experts.listed("slack", "U9")
    assert experts.name_of("slack", "U0123ABCD") == "Ana Diaz" and experts.name_of("teams", "8d1f-aa") == "Bo"
    assert experts.groups_of("slack") == ("S0456EFGH",) and experts.groups_of("teams") == ("19:x@thread.tacv2",)
    assert experts.configured("slack") and experts.configured("teams")
    assert not Experts.parse(None).configured("slack")
    assert not Experts.parse("teams:8d1f").configured("slack")  # Teams experts answer no Slack hand-off


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("U0123ABCD", "is not slack:<user id>"),
        ("discord:1234", "is not slack:<user id>"),
        ("slack:ana", "is not a Slack user id"),
        ("slack-group:U0123ABCD", "is not a Slack user group id"),
        ("slack-group:S0456EFGH=Support", "a name is given to a user"),
    ],
)
def test_a_malformed_expert_is_refused_at_start_up_naming_it(
    spec: str, says: str, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match=says):
        Experts.parse(spec)
    monkeypatch.setenv("CANDOR_EXPERTS", spec)
    with pytest.raises(ConfigError, match="CANDOR_EXPERTS"):
        load_settings(home=tmp_path)  # type: ignore[arg-type]


def test_the_cited_documents_readers_are_the_groups_they_all_share() -> None:
    assert cited_groups([HR, HR_FINANCE]) == ("hr-confidential",)  # not finance: it cannot read the salaries
    assert cited_groups([HR, PUBLIC]) == ("hr-confidential",)
    assert cited_groups([PUBLIC]) == ()
    assert cited_groups([HR, FINANCE]) is None  # no group list is that narrow


def test_everyone_is_only_ever_an_explicit_choice() -> None:
    assert default_readers([HR]) == "cited" and default_readers([PUBLIC]) == "cited"
    assert default_readers([]) is None and default_readers([HR, FINANCE]) is None
    assert reader_groups("cited", [], [HR, HR_FINANCE]) == ("hr-confidential",)
    assert reader_groups("groups", [" ops ", "hr", "ops", ""], [HR]) == ("hr", "ops")
    assert reader_groups("everyone", ["ignored"], [HR]) == ()
    for choice, named, cited, says in [
        (None, [], [HR], "choose who may read"),
        ("", ["hr"], [HR], "choose who may read"),
        ("cited", [], [], "cited no document"),
        ("cited", [], [HR, FINANCE], r"different groups \(finance, hr-confidential\)"),
        ("groups", [" ", ""], [HR], "name at least one access group"),
    ]:
        with pytest.raises(ConfigError, match=says):
            reader_groups(choice, named, cited)


def test_a_curated_answer_weighs_as_an_ordinary_document_unless_set_per_base() -> None:
    assert curated_authority(None, "hr") == 0 and curated_authority("0", "hr") == 0
    assert curated_authority("2", "anything") == 2
    assert (curated_authority("hr=3, *=1", "hr"), curated_authority("hr=3, *=1", "it")) == (3, 1)
    assert curated_authority("hr=3", "it") == 0
    for bad in ("hr=high", "-1"):
        with pytest.raises(ConfigError, match="CANDOR_CURATED_AUTHORITY"):
            curated_authority(bad, "hr")
