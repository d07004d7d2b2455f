"""Who may read a Notion page (the source's `access`, the nearest `page_access` ancestor, no one when
its ancestry cannot be placed), which pages `roots` keep, and the notion settings' checks: pure
functions, no network, no database."""

from __future__ import annotations

import pytest

from rag.errors import SyncError
from rag.ingest.sources.config import parse_sources
from rag.ingest.sources.notion import NotionOptions
from rag.ingest.sources.notion_access import (
    TOP,
    notion_id,
    page_groups,
    under_roots,
    unread_ancestor,
    unseen_ids,
)
from rag.ingest.sources.registry import connector_for
from rag.model.types import NO_ONE

# home ─ people ─ bands ─ bonus;  home ─ eng ─ (toggle block) ─ glossary;  home ─ db ─ ds ─ row;  orphan ─ (unseen)
PARENTS = {
    "home": TOP,
    "people": "home",
    "bands": "people",
    "bonus": "bands",
    "eng": "home",
    "toggle": "eng",
    "glossary": "toggle",
    "db": "home",
    "ds": "db",
    "row": "ds",
    "orphan": "hidden-parent",
}


def groups(node: str, page_access: dict[str, tuple[str, ...]], **kwargs: object) -> tuple[str, ...] | None:
    return page_groups(node, PARENTS, page_access, ("staff",), **kwargs)  # type: ignore[arg-type]


def test_every_page_gets_the_source_s_access_unless_an_ancestor_is_configured() -> None:
    assert groups("glossary", {}) == ("staff",)
    assert groups("row", {}) == ("staff",)
    assert page_groups("row", PARENTS, {}, ()) == ()  # access: [] is public


def test_the_nearest_configured_ancestor_wins_down_any_depth() -> None:
    configured = {"people": ("hr",), "bands": ("hr-leads",), "db": ("sre",)}
    assert groups("people", configured) == ("hr",)
    assert groups("bonus", configured) == ("hr-leads",)  # bands is nearer than people
    assert groups("row", configured) == ("sre",)  # through the data source to its database
    assert groups("glossary", configured) == ("staff",)  # through a block, to a page no rule names
    assert groups("home", configured) == ("staff",)  # above the configured pages
    assert groups("bonus", {"home": ()}) == ()  # a configured public subtree


def test_a_page_that_cannot_be_placed_is_readable_by_no_one_when_a_configured_id_is_unseen() -> None:
    assert groups("orphan", {"people": ("hr",)}) == ("staff",)  # every configured id was seen: nothing hides
    assert groups("orphan", {"missing": ("hr",)}, unseen=["missing"]) == (NO_ONE,)
    assert groups("bonus", {"missing": ("hr",)}, unseen=["missing"]) == ("staff",)  # fully placed
    assert groups("orphan", {"hidden-parent": ("hr",)}) == ("hr",)  # its unseen parent is named by id


# the toggle's own lookup failed: it is not in `parents`, so the walk up from glossary stops there
UNPLACED = {k: v for k, v in PARENTS.items() if k != "toggle"}


def test_a_page_whose_place_could_not_be_read_is_readable_by_no_one() -> None:
    def placed(node: str, page_access: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
        return page_groups(node, UNPLACED, page_access, ("staff",), unreadable={"toggle"})

    assert placed("glossary", {}) == (NO_ONE,)  # not the source's access, whatever it is
    assert page_groups("glossary", UNPLACED, {}, (), unreadable={"toggle"}) == (NO_ONE,)  # never public
    assert placed("glossary", {"eng": ("sre",)}) == (NO_ONE,)  # it may have moved away from eng
    assert placed("glossary", {"glossary": ("sre",)}) == ("sre",)  # its own rule is nearest
    assert placed("bonus", {"people": ("hr",)}) == ("hr",)  # elsewhere, nothing changes
    assert unread_ancestor("glossary", UNPLACED, {"toggle"}) == "toggle"
    assert unread_ancestor("bonus", UNPLACED, {"toggle"}) is None


def test_with_roots_a_page_whose_place_could_not_be_read_is_undecided_not_outside() -> None:
    assert under_roots("glossary", UNPLACED, {"eng"}, {"toggle"}) is None
    assert under_roots("glossary", UNPLACED, {"glossary"}, {"toggle"}) is True  # a root itself
    assert under_roots("bonus", UNPLACED, {"eng"}, {"toggle"}) is False  # placed, and elsewhere
    assert under_roots("orphan", UNPLACED, {"eng"}, {"toggle"}) is False  # not shared is not unread


def test_roots_keep_their_subtrees_and_unseen_ids_are_named() -> None:
    assert under_roots("bonus", PARENTS, {"people"}) and under_roots("people", PARENTS, {"people"})
    assert under_roots("row", PARENTS, {"db"}) and not under_roots("glossary", PARENTS, {"people", "db"})
    assert unseen_ids(["people", "gone"], PARENTS) == ["gone"]
    assert under_roots("a", {"a": "b", "b": "a"}, {"c"}) is False  # a cycle ends the walk


def test_ids_are_read_dashed_or_not_or_from_a_page_s_url() -> None:
    dashed = "59833787-2cf9-4fdf-8782-e53db20768a5"
    assert notion_id("598337872cf94fdf8782e53db20768a5") == dashed
    assert notion_id(f"https://www.notion.so/acme/Release-rules-{dashed.replace('-', '')}?pvs=4") == dashed
    assert notion_id(dashed.upper()) == dashed
    assert notion_id("Release rules") is None


def test_notion_settings_are_checked() -> None:
    options = NotionOptions.parse(
        {"roots": ["598337872cf94fdf8782e53db20768a5"], "page_access": {"598337872cf94fdf8782e53db20768a5": "hr"}},
        "n",
    )
    assert options.roots == ("59833787-2cf9-4fdf-8782-e53db20768a5",)
    assert options.page_access == {"59833787-2cf9-4fdf-8782-e53db20768a5": ("hr",)}
    assert options.requests_per_second == 3.0 and options.base_url == "https://api.notion.com"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"roots": ["Team wiki"]}, "not a Notion id"),
        ({"roots": "598337872cf94fdf8782e53db20768a5"}, "`roots` lists"),
        ({"page_access": {"598337872cf94fdf8782e53db20768a5": [1]}}, "list of access groups"),
        ({"page_access": ["x"]}, "maps page or database ids"),
        ({"requests_per_second": 0}, "must be positive"),
        ({"spaces": ["ENG"]}, "unknown notion settings"),
    ],
)
def test_bad_notion_settings_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(SyncError, match=message):
        NotionOptions.parse(options, "n")


def test_a_notion_source_needs_explicit_access_and_a_token_by_variable() -> None:
    entry: dict[str, object] = {"name": "wiki", "kind": "notion", "credentials": {"token": "NOTION_TOKEN"}}
    with pytest.raises(SyncError, match="needs an explicit `access:`"):
        parse_sources({"sources": [entry]})
    with pytest.raises(SyncError, match="needs an explicit `access:`"):
        parse_sources({"sources": [{**entry, "access": None}]})
    [public] = parse_sources({"sources": [{**entry, "access": []}]})
    assert public.access == ()
    [internal] = parse_sources({"sources": [{**entry, "access": ["staff"], "credentials": {"secret": "WIKI_SECRET"}}]})
    with pytest.raises(SyncError, match="credentials: \\{token: VARIABLE\\}") as raised:
        connector_for(internal, {"WIKI_SECRET": "ntn_secret_value"})
    assert "ntn_secret_value" not in str(raised.value)
