"""Who may read a Confluence page (restrictions, their ancestors', the space's groups) and the
confluence settings' checks, without a network or a database."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.errors import SyncError
from rag.ingest.sources.config import parse_sources
from rag.ingest.sources.confluence_access import (
    UNREADABLE,
    PermissionMap,
    Restriction,
    SpaceReaders,
    page_access,
    space_groups,
)
from rag.ingest.sources.confluence_options import ConfluenceOptions
from rag.ingest.sources.registry import connector_for
from rag.model.types import NO_ONE

MAP = PermissionMap({"sre": ("sre-team",), "id-hr": ("hr",), "admins": ("hr", "sre-team")}, {"acc-1": ("hr",)})
TREE = {"home": None, "ops": "home", "bridge": "ops", "pager": "bridge"}


def access(page: str, own: dict[str, Restriction | str], space: tuple[str, ...] = ()) -> tuple[str, ...] | None:
    return page_access(page, TREE, own, MAP, space)


def test_an_unrestricted_page_gets_its_space_s_groups() -> None:
    assert access("pager", {}) == ()
    assert access("pager", {}, ("staff",)) == ("staff",)
    assert access("pager", {"home": Restriction()}) == ()  # a restriction naming no one restricts nothing


def test_a_restriction_maps_groups_by_name_or_id_and_users_by_account() -> None:
    own: dict[str, Restriction | str] = {"bridge": Restriction((("hr-managers", "id-hr"),), (("acc-1", "Ana"),))}
    assert access("bridge", own, ("staff",)) == ("hr",)
    assert access("ops", own, ("staff",)) == ("staff",)  # above the restriction


def test_an_ancestor_s_restriction_is_inherited_and_levels_intersect() -> None:
    own: dict[str, Restriction | str] = {
        "ops": Restriction((("admins", "g1"),)),
        "bridge": Restriction((("sre", "g2"),)),
    }
    assert access("pager", own) == ("sre-team",)
    assert access("bridge", own) == ("sre-team",)
    own["bridge"] = Restriction(users=(("acc-1", ""),))
    assert access("pager", own) == ("hr",)
    own["home"] = Restriction((("sre", "g2"),))
    assert access("pager", own) == (NO_ONE,)  # hr at one level, sre-team at another: no one passes both


def test_anything_unmapped_restricts_to_no_one_and_an_unreadable_restriction_is_unknown() -> None:
    mixed: dict[str, Restriction | str] = {"bridge": Restriction((("sre", "g2"), ("contractors", "g9")))}
    assert access("bridge", mixed) == (NO_ONE,)
    assert access("pager", mixed) == (NO_ONE,)
    assert access("pager", {"bridge": Restriction(users=(("acc-404", "Bo"),))}) == (NO_ONE,)
    assert access("pager", {"ops": UNREADABLE}) is None
    assert access("home", {"ops": UNREADABLE}) == ()


def test_a_folder_s_restriction_applies_to_the_pages_in_it_at_every_depth() -> None:
    # home > folder "managers" (restricted) > page "reviews" and folder "calibration" > page "guide"
    tree = {"home": None, "managers": "home", "reviews": "managers", "calibration": "managers", "guide": "calibration"}
    own: dict[str, Restriction | str] = {"managers": Restriction((("hr-managers", "id-hr"),))}
    assert page_access("reviews", tree, own, MAP, ("staff",)) == ("hr",)  # not the space's staff
    assert page_access("guide", tree, own, MAP, ("staff",)) == ("hr",)
    assert page_access("home", tree, own, MAP, ("staff",)) == ("staff",)  # above the folder
    own["calibration"] = Restriction((("sre", "g2"),))
    assert page_access("guide", tree, own, MAP, ("staff",)) == (NO_ONE,)  # hr, then sre-team: no one
    assert page_access("guide", tree, {"calibration": UNREADABLE}, MAP, ("staff",)) is None
    assert page_access("reviews", tree, {"calibration": UNREADABLE}, MAP, ("staff",)) == ("staff",)


def test_restrictions_are_read_from_the_api_s_shape() -> None:
    data = {
        "operation": "read",
        "restrictions": {
            "user": {"results": [{"type": "known", "accountId": "acc-1", "displayName": "Ana"}], "size": 1},
            "group": {"results": [{"type": "group", "name": "sre", "id": "g2"}], "size": 1},
        },
    }
    assert Restriction.parse(data) == Restriction((("sre", "g2"),), (("acc-1", "Ana"),))
    assert not Restriction.parse({"restrictions": {"user": {"results": []}, "group": {}}}).restricts


def test_confluence_settings_are_checked() -> None:
    options = ConfluenceOptions.parse(
        {
            "base_url": "https://example.atlassian.net/wiki/",
            "spaces": ["ENG", "HR", "ENG"],
            "space_access": {"HR": "staff"},
            "permissions": {"groups": {"hr-managers": ["hr"]}},
        },
        "wiki",
    )
    assert options.base_url == "https://example.atlassian.net/wiki" and options.spaces == ("ENG", "HR")
    assert options.space_access == {"HR": ("staff",)} and options.body_format == "storage"
    assert options.permissions.groups == {"hr-managers": ("hr",)} and options.permissions.users == {}
    assert options.space_permissions and options.blog_posts and options.concurrency == 4  # the defaults


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"spaces": ["ENG"]}, "base_url"),
        ({"base_url": "https://x.atlassian.net/wiki"}, "`spaces` must list"),
        ({"base_url": "https://x.atlassian.net/wiki", "spaces": ["ENG"], "space_access": {"HR": ["a"]}}, "not in"),
        ({"base_url": "https://x.atlassian.net/wiki", "spaces": ["ENG"], "permissions": {"roles": {}}}, "permissions"),
        ({"base_url": "https://x.atlassian.net/wiki", "spaces": ["ENG"], "body_format": "adf"}, "body_format"),
        ({"base_url": "https://x.atlassian.net/wiki", "spaces": ["ENG"], "sitemap": "x"}, "unknown confluence"),
        ({"base_url": "https://x.atlassian.net/wiki", "spaces": ["ENG"], "concurrency": 0}, "1 to 16"),
        (
            {"base_url": "https://x.atlassian.net/wiki", "spaces": ["ENG"], "permissions": {"groups": {"g": [1]}}},
            "access group",
        ),
    ],
)
def test_bad_confluence_settings_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(SyncError, match=message):
        ConfluenceOptions.parse(options, "wiki")


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("max_documents", 0),
        ("timeout_seconds", 0),
        ("timeout_seconds", float("nan")),
        ("max_wait_seconds", -1),
        ("max_wait_seconds", float("nan")),
    ],
)
def test_an_out_of_range_number_names_its_own_setting(setting: str, value: float) -> None:
    options = {"base_url": "https://x.atlassian.net/wiki", "spaces": ["ENG"], setting: value}
    with pytest.raises(SyncError) as refused:
        ConfluenceOptions.parse(options, "wiki")
    others = {"max_documents", "timeout_seconds", "max_wait_seconds"} - {setting}
    assert f"`{setting}`" in str(refused.value)
    assert not [other for other in others if other in str(refused.value)], str(refused.value)


def test_a_confluence_source_needs_an_email_and_a_token_by_variable() -> None:
    [wiki] = parse_sources(
        {
            "sources": [
                {
                    "name": "wiki",
                    "kind": "confluence",
                    "base_url": "https://x.atlassian.net/wiki",
                    "spaces": ["ENG"],
                    "credentials": {"token": "WIKI_TOKEN"},
                }
            ]
        }
    )
    with pytest.raises(SyncError, match="missing: email") as raised:
        connector_for(wiki, {"WIKI_TOKEN": "ATATT-secret"})
    assert "ATATT-secret" not in str(raised.value)


def grant(kind: str, ident: str, key: str = "read", target: str = "space") -> dict[str, object]:
    return {"id": "1", "principal": {"type": kind, "id": ident}, "operation": {"key": key, "targetType": target}}


def test_space_readers_are_read_from_the_api_s_shape() -> None:
    readers = SpaceReaders.parse(
        [
            grant("group", "g1"),
            grant("group", "g2", "create", "page"),  # not a read: ignored
            grant("user", "acc-1"),
            grant("role", "ANONYMOUS", "export"),  # anonymous, but not to read
            {"principal": {"type": "group"}, "operation": {"key": "read", "targetType": "space"}},  # no id
        ]
    )
    assert readers == SpaceReaders(("g1",), ("acc-1",), anonymous=False)
    assert SpaceReaders.parse([grant("role", "anonymous")]).anonymous


def test_a_space_s_groups_are_its_mapped_readers_and_never_public_unless_anonymous() -> None:
    names = {"g1": "sre", "g2": "everyone", "g3": ""}
    assert space_groups(SpaceReaders(anonymous=True), names, MAP) == ()
    assert space_groups(SpaceReaders(("g1", "g2"), ("acc-1",)), names, MAP) == ("hr", "sre-team")  # g2 left out
    assert space_groups(SpaceReaders(("id-hr",)), {}, MAP) == ("hr",)  # by id when the name is unknown
    assert space_groups(SpaceReaders(("g2", "g3"), ("someone",)), names, MAP) == (NO_ONE,)
    assert space_groups(SpaceReaders(), names, MAP) == (NO_ONE,)  # nobody may read it


PRINCIPALS = st.sampled_from(["sre", "id-hr", "admins", "acc-1", "stranger", "g-x", "everyone"])


@given(st.lists(PRINCIPALS, max_size=6), st.lists(PRINCIPALS, max_size=4), st.booleans())
def test_a_space_s_groups_never_exceed_what_its_readers_map_to(
    groups: list[str], users: list[str], anonymous: bool
) -> None:
    found = space_groups(SpaceReaders(tuple(groups), tuple(users), anonymous), {}, MAP)
    if anonymous:
        assert found == ()
        return
    mapped = {g for name in groups for g in MAP.groups.get(name, ())} | {
        g for name in users for g in MAP.users.get(name, ())
    }
    assert found == (tuple(sorted(mapped)) if mapped else (NO_ONE,))
    assert found != ()  # public only through anonymous read
