"""Who may read a SharePoint or OneDrive item (Graph's permissions mapped to access groups), a site
page's text, and the sharepoint settings' checks, without a network or a database."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.errors import SyncError
from rag.ingest.sources.config import parse_sources
from rag.ingest.sources.registry import connector_for
from rag.ingest.sources.sharepoint import page_html
from rag.ingest.sources.sharepoint_access import PUBLIC, PermissionMap, Principal, item_access, principals
from rag.ingest.sources.sharepoint_options import GRAPH_URL, SharePointOptions
from rag.model.types import NO_ONE

Json = dict[str, Any]


def site_group(name: str, role: str = "read") -> Json:
    return {"roles": [role], "grantedToV2": {"siteGroup": {"displayName": name, "id": "7", "loginName": name}}}


def group(name: str, group_id: str) -> Json:
    return {"roles": ["read"], "grantedToV2": {"group": {"displayName": name, "id": group_id}}}


def user(user_id: str, email: str = "") -> Json:
    return {"roles": ["write"], "grantedToV2": {"user": {"id": user_id, "displayName": user_id, "email": email}}}


def link(scope: str, *people: str) -> Json:
    return {
        "roles": ["read"],
        "link": {"scope": scope, "type": "view"},
        "grantedToIdentitiesV2": [{"user": {"id": p, "displayName": p}} for p in people],
    }


MAP = PermissionMap(
    groups={"Finance Leadership": ("finance-leads",), "g-hr": ("hr",)},
    site_groups={"Finance Members": ("finance",), "Finance Visitors": ("staff",), "Empty": ()},
    users={"ANA@contoso.com": ("hr",), "u-bo": ("finance",)},
    organization=("staff",),
    anonymous=PUBLIC,
)


def access(*permissions: Json, mapping: PermissionMap = MAP) -> tuple[str, ...]:
    return item_access(list(permissions), mapping)[0]


def test_an_item_s_groups_are_the_union_of_its_mapped_readers() -> None:
    assert access(site_group("Finance Members", "write"), site_group("Finance Visitors")) == ("finance", "staff")
    assert access(group("Finance Leadership", "g-1")) == ("finance-leads",)  # by display name
    assert access(group("People", "g-hr")) == ("hr",)  # by Entra id
    assert access(user("u-9", "ana@CONTOSO.com")) == ("hr",)  # by email, whatever its case
    assert access(user("u-bo"), site_group("Finance Visitors")) == ("finance", "staff")


def test_an_unmapped_reader_is_left_out_and_logged_by_name() -> None:
    groups, unmapped = item_access([site_group("Finance Members"), user("u-dana", "dana@contoso.com")], MAP)
    assert groups == ("finance",)
    assert [p.kind for p in unmapped] == ["user"] and "u-dana" in unmapped[0].label


def test_an_item_none_of_whose_readers_maps_is_readable_by_no_one() -> None:
    assert access(user("u-dana"), user("u-lee")) == (NO_ONE,)
    assert access() == (NO_ONE,)  # no permissions at all
    assert access(site_group("Empty")) == (NO_ONE,)  # mapped to no group
    assert access(link("organization"), mapping=PermissionMap({}, {}, {})) == (NO_ONE,)  # links unmapped


def test_sharing_links_map_by_scope_and_only_a_public_mapping_makes_an_item_public() -> None:
    assert access(site_group("Finance Members"), link("anonymous")) == ()
    assert access(link("organization")) == ("staff",)
    assert access(link("users", "u-bo", "u-stranger")) == ("finance",)  # the people it was sent to
    no_anonymous = PermissionMap({}, {"Finance Members": ("finance",)}, {}, anonymous=("guests",))
    assert access(site_group("Finance Members"), link("anonymous"), mapping=no_anonymous) == ("finance", "guests")


def test_a_grant_without_a_reading_role_adds_no_one() -> None:
    assert access({**site_group("Finance Visitors"), "roles": ["sp.limited access"]}) == (NO_ONE,)
    assert access({**site_group("Finance Visitors"), "roles": ["sp.full control"]}) == ("staff",)
    assert principals({**link("anonymous"), "roles": []}) == []


def test_an_expired_sharing_link_opens_nothing() -> None:
    now = datetime(2026, 3, 1, tzinfo=UTC)
    expired = {**link("anonymous"), "expirationDateTime": "2026-02-28T23:59:59Z"}
    valid = {**link("anonymous"), "expirationDateTime": "2026-03-02T00:00:00Z"}
    members = site_group("Finance Members")
    assert item_access([members, expired], MAP, now)[0] == ("finance",)
    assert item_access([members, valid], MAP, now)[0] == ()
    assert item_access([expired], MAP, now)[0] == (NO_ONE,)


def test_permissions_are_read_from_graph_s_shapes() -> None:
    permission = {
        "id": "aGV5",
        "roles": ["read"],
        "grantedToV2": {
            "siteUser": {"displayName": "Ana", "email": "ana@contoso.com", "id": "12", "loginName": "i:0#"}
        },
        "grantedToIdentitiesV2": [{"group": {"displayName": "People", "id": "g-hr"}}, {"application": {"id": "app"}}],
        "inheritedFrom": {"driveId": "b!x", "id": "01ROOT"},
    }
    found = principals(permission)
    assert [(p.kind, p.keys[0]) for p in found] == [("user", "ana@contoso.com"), ("group", "g-hr")]
    assert access(permission) == ("hr",)


PEOPLE = [
    Principal("user", ("u-1",), "user 1"),
    Principal("user", ("u-2", "two@x.test"), "user 2"),
    Principal("group", ("g-1",), "group 1"),
    Principal("site_group", ("Members",), "site group"),
    Principal("organization", ("organization",), "org link"),
    Principal("anonymous", ("anonymous",), "anyone link"),
]
GROUPS = st.lists(st.sampled_from(["hr", "finance", "staff", "sre"]), max_size=3).map(lambda g: tuple(sorted(set(g))))
READERS = st.one_of(st.none(), GROUPS, st.just(PUBLIC))


def as_permission(principal: Principal, role: str) -> Json:
    if principal.kind in ("organization", "anonymous"):
        return {"roles": [role], "link": {"scope": principal.kind}}
    facet = {"user": "user", "group": "group", "site_group": "siteGroup"}[principal.kind]
    key = "displayName" if principal.kind == "site_group" else "id"
    return {"roles": [role], "grantedToV2": {facet: {key: principal.keys[0]}}}


@given(
    granted=st.lists(
        st.tuples(st.sampled_from(PEOPLE), st.sampled_from(["read", "write", "owner", "sp.limited access"]))
    ),
    mapped=st.lists(READERS, min_size=len(PEOPLE), max_size=len(PEOPLE)),
)
def test_groups_never_exceed_the_mapped_readers_and_public_needs_a_public_grant(
    granted: list[tuple[Principal, str]], mapped: list[Any]
) -> None:
    tables: dict[str, dict[str, Any]] = {"user": {}, "group": {}, "site_group": {}}
    for principal, readers in zip(PEOPLE[:4], mapped[:4], strict=True):
        if readers is not None:
            tables[principal.kind][principal.keys[0]] = readers
    mapping = PermissionMap(tables["group"], tables["site_group"], tables["user"], mapped[4], mapped[5])
    result, _ = item_access([as_permission(p, role) for p, role in granted], mapping)

    reading = [p for p, role in granted if role != "sp.limited access"]
    readers = [mapping.readers(p) for p in reading]
    allowed = {g for r in readers if r is not None and r != PUBLIC for g in r}
    if result == ():
        assert PUBLIC in readers  # public only through a grant mapped to public
    elif result == (NO_ONE,):
        assert not allowed and PUBLIC not in readers
    else:
        assert set(result) == allowed and PUBLIC not in readers and NO_ONE not in result


def test_a_page_s_text_web_parts_are_its_html_in_reading_order() -> None:
    canvas = {
        "horizontalSections": [
            {"columns": [{"webparts": [{"@odata.type": "#microsoft.graph.textWebPart", "innerHtml": "<p>one</p>"}]}]},
            {"columns": [
                {"webparts": [{"@odata.type": "#microsoft.graph.standardWebPart", "webPartType": "image"}]},
                {"webparts": [{"@odata.type": "#microsoft.graph.textWebPart", "innerHtml": "<p>two</p>"}]},
            ]},
        ],
        "verticalSection": {"webparts": [{"@odata.type": "#microsoft.graph.textWebPart", "innerHtml": "<p>three</p>"}]},
    }  # fmt: skip
    assert page_html(canvas) == ["<p>one</p>", "<p>two</p>", "<p>three</p>"]
    assert page_html({}) == []


def test_sharepoint_settings_are_checked() -> None:
    options = SharePointOptions.parse(
        {
            "sites": ["contoso.sharepoint.com:/sites/Finance", "contoso.sharepoint.com:/sites/Finance"],
            "libraries": ["Documents"],
            "site_pages": ["staff"],
            "permissions": {"site_groups": {"Finance Members": "finance"}, "anonymous": "public", "organization": []},
        },
        "intranet",
    )
    assert options.sites == ("contoso.sharepoint.com:/sites/Finance",) and options.graph_url == GRAPH_URL
    assert options.site_pages == ("staff",) and options.drives == ()
    assert options.permissions.site_groups == {"finance members": ("finance",)}
    assert (options.permissions.anonymous, options.permissions.organization) == (PUBLIC, ())


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "name `sites`"),
        ({"drives": ["b!x"], "libraries": ["Documents"]}, "no site is named"),
        ({"sites": ["x:/sites/a"], "permissions": {"roles": {}}}, "permissions has"),
        ({"sites": ["x:/sites/a"], "permissions": {"anonymous": ["public", "staff"]}}, "write `public` alone"),
        ({"sites": ["x:/sites/a"], "permissions": {"users": {"a@b": [1]}}}, "access group"),
        ({"sites": ["x:/sites/a"], "site_pages": "staff"}, "site_pages"),
        ({"sites": ["x:/sites/a"], "graph_url": "graph.microsoft.com"}, "graph_url"),
        ({"sites": ["x:/sites/a"], "spaces": ["ENG"]}, "unknown sharepoint"),
        ({"sites": ["x:/sites/a"], "max_documents": "many"}, "not a number"),
    ],
)
def test_bad_sharepoint_settings_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(SyncError, match=message):
        SharePointOptions.parse(options, "intranet")


def test_a_sharepoint_source_takes_no_access_and_needs_three_credentials_by_variable() -> None:
    base = {"name": "intranet", "kind": "sharepoint", "sites": ["x:/sites/a"]}
    [given_access] = parse_sources({"sources": [{**base, "access": ["staff"], "credentials": {}}]})
    with pytest.raises(SyncError, match="instead of giving `access`"):
        connector_for(given_access, {})
    [partial] = parse_sources({"sources": [{**base, "credentials": {"tenant_id": "SP_T", "client_secret": "SP_S"}}]})
    with pytest.raises(SyncError, match="missing: client_id") as raised:
        connector_for(partial, {"SP_T": "tenant-guid", "SP_S": "secret-value"})
    assert "secret-value" not in str(raised.value)
    with pytest.raises(SyncError, match="looks like a secret written inline"):
        parse_sources({"sources": [{**base, "client_secret": "secret-value"}]})
