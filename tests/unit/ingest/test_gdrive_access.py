"""Who may read a Google Drive file (its permissions mapped to access groups, unmapped readers left out,
`anyone` adding no one unless mapped, public only through `public`, no one) and the gdrive settings'
checks, a top-level `access` refused among them, without a network or a database."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.errors import SyncError
from rag.ingest.sources.config import parse_sources
from rag.ingest.sources.gdrive_access import FileAccess, Permission, PermissionMap, UnmappedLog, file_access
from rag.ingest.sources.gdrive_options import GoogleDriveOptions
from rag.ingest.sources.registry import connector_for
from rag.ingest.sources.sharepoint_access import Readers, item_access
from rag.ingest.sources.sharepoint_options import SharePointOptions
from rag.model.types import NO_ONE

MAP = PermissionMap(
    users={"ana@example.com": ("hr",)},
    groups={"hr-team@example.com": ("hr",), "sre@example.com": ("hr", "sre-team")},
    domains={"example.com": ("staff",)},
    anyone=None,
)
ANA, OWNER = Permission("user", "ana@example.com"), Permission("user", "owner@example.com", "owner")
HR, SRE = Permission("group", "hr-team@example.com"), Permission("group", "sre@example.com")
STAFF, ANYONE = Permission("domain", "example.com"), Permission("anyone")


def groups(*permissions: Permission, mapping: PermissionMap = MAP) -> tuple[str, ...]:
    return file_access(permissions, mapping).groups


def test_a_file_s_groups_are_the_union_of_its_mapped_readers_groups() -> None:
    assert groups(ANA) == ("hr",)
    assert groups(HR, STAFF) == ("hr", "staff")
    assert groups(SRE, ANA) == ("hr", "sre-team")


def test_an_unmapped_reader_is_left_out_and_only_narrows() -> None:
    assert file_access([OWNER, STAFF], MAP) == FileAccess(("staff",), ("user owner@example.com",))
    colleague = Permission("user", "bob@example.com")
    assert groups(OWNER, colleague, HR) == groups(HR) == ("hr",)
    assert groups(Permission("domain", "partner.example"), STAFF) == ("staff",)


def test_a_file_no_mapped_reader_can_read_is_no_one_s_never_public() -> None:
    assert groups(OWNER, Permission("user", "cfo@example.com")) == (NO_ONE,)
    assert groups() == (NO_ONE,)  # not shared with anyone Candor knows
    assert groups(Permission("mystery", "x")) == (NO_ONE,)


def test_anyone_with_the_link_adds_no_one_unless_mapped_and_is_public_only_when_mapped_to_public() -> None:
    assert groups(ANYONE) == (NO_ONE,)  # not configured: the link is left out like any unmapped reader
    assert groups(ANYONE, HR) == ("hr",)
    assert file_access([ANYONE, OWNER], MAP).unmapped == ("anyone with the link", "user owner@example.com")
    public = PermissionMap(MAP.users, MAP.groups, MAP.domains, anyone="public")
    assert groups(ANYONE, OWNER, mapping=public) == () and groups(ANYONE, HR, mapping=public) == ()
    assert groups(HR, mapping=public) == ("hr",)  # `anyone: public` opens only files anyone can open
    staff_only = PermissionMap(MAP.users, MAP.groups, MAP.domains, anyone=("staff",))
    assert groups(ANYONE, HR, mapping=staff_only) == ("hr", "staff")
    domain_public = PermissionMap(MAP.users, MAP.groups, {"example.com": "public"})
    assert groups(STAFF, mapping=domain_public) == ()  # any reader mapped to `public`, as in SharePoint
    assert groups(ANYONE, mapping=domain_public) == (NO_ONE,)


def test_drive_and_sharepoint_read_the_same_mapping_the_same_way() -> None:
    """A habit carried from a SharePoint source (`anonymous` unset; `public` written alone) means in
    a Drive source what it means there."""
    anonymous_link = {"roles": ["read"], "link": {"scope": "anonymous"}}
    site = {"sites": ["contoso.sharepoint.com:/sites/F"]}
    for written in (None, "public", ["staff"], "staff"):
        drive = PermissionMap.parse({} if written is None else {"anyone": written}, "drive")
        sharepoint = SharePointOptions.parse({**site, "permissions": {"anonymous": written}}, "sp").permissions
        assert groups(ANYONE, mapping=drive) == item_access([anonymous_link], sharepoint)[0], written
    with pytest.raises(SyncError, match="write `public` alone"):
        SharePointOptions.parse({**site, "permissions": {"anonymous": ["public"]}}, "sp")
    with pytest.raises(SyncError, match="write `public` alone"):
        PermissionMap.parse({"anyone": ["public"]}, "drive")


def test_permissions_are_read_from_the_api_s_shape() -> None:
    user = {"kind": "drive#permission", "id": "1", "type": "user", "emailAddress": "Ana@Example.com", "role": "reader"}
    assert Permission.parse(user) == Permission("user", "ana@example.com", "reader")
    group = {"id": "2", "type": "group", "emailAddress": "hr-team@example.com", "role": "writer"}
    assert Permission.parse(group) == Permission("group", "hr-team@example.com", "writer")
    domain = {"id": "3", "type": "domain", "domain": "example.com", "role": "commenter", "allowFileDiscovery": False}
    assert Permission.parse(domain) == Permission("domain", "example.com", "commenter")
    assert Permission.parse({"id": "anyoneWithLink", "type": "anyone", "role": "reader"}) == Permission("anyone")
    assert Permission.parse({"type": "user", "emailAddress": "gone@example.com", "deleted": True}) is None


def test_each_unmapped_reader_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    notes = UnmappedLog("source 'drive'")
    with caplog.at_level(logging.INFO, logger="candor.sync.gdrive"):
        for title in ("a", "b", "c"):
            notes.note(title, file_access([OWNER, STAFF, ANYONE], MAP))
        notes.note("minutes", file_access([OWNER, Permission("user", "cfo@example.com")], MAP))
    lines = [r.getMessage() for r in caplog.records]
    assert sum("owner@example.com has no access group" in line for line in lines) == 1
    assert sum("cfo@example.com has no access group" in line for line in lines) == 1
    assert [line for line in lines if line.startswith("source 'drive': anyone with the link")] == [
        "source 'drive': anyone with the link has no access group mapped: left out (it can still open its files "
        "in Drive, not through Candor; `anyone: public` makes such files public)"
    ]
    assert [line for line in lines if "readable by no one" in line] == [
        "source 'drive': 'minutes' is readable by no one in Candor: none of its readers "
        "(user owner@example.com, user cfo@example.com) has an access group mapped"
    ]


PRINCIPALS = st.sampled_from(
    [ANA, OWNER, HR, SRE, STAFF, ANYONE, Permission("user", "bob@example.com"), Permission("domain", "other.org")]
)
MAPS = st.sampled_from([None, "public", ("staff",), ("hr", "guests")])


@given(st.lists(PRINCIPALS, max_size=6), MAPS)
def test_groups_come_only_from_mapped_readers_and_public_only_from_public(
    readers: list[Permission], anyone: Readers | None
) -> None:
    mapping = PermissionMap(MAP.users, MAP.groups, MAP.domains, anyone)
    result = file_access(readers, mapping).groups
    mapped = [mapping.groups_of(reader) for reader in readers]
    allowed = {group for found in mapped if found is not None and found != "public" for group in found}
    if result == ():
        assert "public" in mapped  # public only through a reader mapped to `public`
        assert anyone == "public" and ANYONE in readers  # here, only `anyone` can be
    elif result == (NO_ONE,):
        assert all(found is None for found in mapped)
    else:
        assert set(result) == allowed
    if anyone is None:  # an unset `anyone` adds no one: the link is left out, never public
        assert result != ()
        assert (ANYONE in readers) == ("anyone with the link" in file_access(readers, mapping).unmapped)


def test_public_is_written_alone_and_a_mapping_to_no_group_is_refused() -> None:
    assert PermissionMap.parse({"anyone": "public", "domains": {"Example.COM": "staff"}}, "drive") == PermissionMap(
        {}, {}, {"example.com": ("staff",)}, "public"
    )
    assert PermissionMap.parse({"users": {"Ana@example.com": "public"}}, "drive").users == {"ana@example.com": "public"}
    assert PermissionMap.parse({}, "drive").anyone is None
    for empty in ({"anyone": []}, {"users": {"ana@example.com": []}}):
        with pytest.raises(SyncError, match="maps to no access group: write `public`"):
            PermissionMap.parse(empty, "drive")  # `anyone: []` once meant public: refused, not reread
    for listed in (["public"], ["staff", "public"]):
        with pytest.raises(SyncError, match=r"permissions\.anyone: write `public` alone"):
            PermissionMap.parse({"anyone": listed}, "drive")
    with pytest.raises(SyncError, match="`permissions` has"):
        PermissionMap.parse({"roles": {}}, "drive")
    with pytest.raises(SyncError, match="access group"):
        PermissionMap.parse({"groups": {"hr@example.com": [1]}}, "drive")


def test_gdrive_settings_are_checked() -> None:
    options = GoogleDriveOptions.parse(
        {"folders": "1AbC", "drives": ["0AxY", "0AxY"], "subject": "admin@example.com", "permissions": {}}, "drive"
    )
    assert options.folders == ("1AbC",) and options.drives == ("0AxY",) and options.subject == "admin@example.com"
    assert options.api_url == "https://www.googleapis.com" and options.permissions.anyone is None


def test_a_gdrive_source_s_access_is_refused_as_a_sharepoint_source_s_is() -> None:
    """Drive's permissions decide who reads each file; an `access` list would read as if it did (it
    once decided what a file anyone with the link can open got)."""
    entry = {"name": "drive", "kind": "gdrive", "folders": ["1AbC"], "credentials": {"service_account": "GSA"}}
    key = '{"type": "service_account", "client_email": "x@y", "private_key": "k", "token_uri": "https://t"}'
    [drive] = parse_sources({"sources": [{**entry, "access": ["staff"]}]})
    with pytest.raises(SyncError) as raised:
        connector_for(drive, {"GSA": key})
    assert str(raised.value) == (
        "source 'drive': a gdrive source takes its readers from Drive's permissions: map them under "
        "`permissions:` instead of giving `access` (`anyone: public` for files anyone with the link can open)"
    )
    with pytest.raises(SyncError, match="source 'sp': a sharepoint source takes its readers from SharePoint's"):
        SharePointOptions.parse({"sites": ["c.sharepoint.com:/sites/F"]}, "source 'sp'", access=("staff",))
    [unset] = parse_sources({"sources": [entry]})
    [empty] = parse_sources({"sources": [{**entry, "access": []}]})
    assert unset.access == empty.access == ()  # nothing given: nothing to refuse


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "needs `folders`"),
        ({"folders": [""]}, "must list ids"),
        ({"folders": ["1A"], "subject": "admin"}, "subject"),
        ({"folders": ["1A"], "api_url": "googleapis"}, "api_url"),
        ({"folders": ["1A"], "page_size": 5000}, "page_size"),
        ({"folders": ["1A"], "spaces": ["ENG"]}, "unknown gdrive settings"),
    ],
)
def test_bad_gdrive_settings_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(SyncError, match=message):
        GoogleDriveOptions.parse(options, "drive")


def test_a_gdrive_source_needs_a_service_account_key_by_variable() -> None:
    [drive] = parse_sources(
        {"sources": [{"name": "drive", "kind": "gdrive", "folders": ["1AbC"], "credentials": {"key": "GSA_JSON"}}]}
    )
    with pytest.raises(SyncError, match="service_account: VARIABLE"):
        connector_for(drive, {"GSA_JSON": "{}"})
    [drive] = parse_sources(
        {
            "sources": [
                {"name": "drive", "kind": "gdrive", "folders": ["1AbC"], "credentials": {"service_account": "GSA"}}
            ]
        }
    )
    for value in (
        "/etc/keys/sa.json",
        '{"type": "authorized_user", "secret": "s3cr3t"}',
        '{"type": "service_account"}',
    ):
        with pytest.raises(SyncError, match="\\$GSA does not hold a service account's JSON key") as raised:
            connector_for(drive, {"GSA": value})
        assert value not in str(raised.value) and "s3cr3t" not in str(raised.value)
