"""The sources file's checks and a website page's cleaning, without a network or a database."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rag.errors import SyncError
from rag.ingest.sources.common import escape_html, moment
from rag.ingest.sources.config import parse_sources, resolve_credentials
from rag.ingest.sources.sync import narrowed_access
from rag.ingest.sources.website import WebsiteOptions, clean_page, normalise
from rag.model.types import NO_ONE, AccessScope


def test_a_website_source_is_read_with_its_defaults() -> None:
    [source] = parse_sources({"sources": [{"name": "help", "kind": "website", "start_urls": ["https://a.test/"]}]})
    assert (source.kb, source.access, dict(source.credentials)) == (None, (), {})
    options = WebsiteOptions.parse(source.options, "help")
    assert options.start_urls == ("https://a.test/",) and options.max_pages == 500
    assert options.sites == frozenset({"https://a.test"})


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"name": "x", "kind": "website", "password": "hunter2"}, "looks like a secret written inline"),
        ({"name": "x", "kind": "website", "auth": {"api_key": "k"}}, "looks like a secret written inline"),
        ({"name": "x", "kind": "website", "sites": [{"url": "u", "token": "t"}]}, "looks like a secret written inline"),
        ({"name": "x", "kind": "website", "credentials": {"authorization": "Bearer k"}}, "environment variable"),
        ({"name": "x", "kind": "dropbox"}, "not one Candor syncs yet"),
        ({"name": "Bad Name", "kind": "website"}, "`name` must be"),
        ({"name": "x", "kind": "website", "access": "hr"}, "`access` must be a list"),
    ],
)
def test_bad_sources_are_refused_with_the_reason(entry: dict[str, object], message: str) -> None:
    with pytest.raises(SyncError, match=message) as raised:
        parse_sources({"sources": [entry]})
    assert "hunter2" not in str(raised.value)


def test_names_are_unique_and_credentials_come_from_the_environment() -> None:
    one = {"name": "x", "kind": "website", "access": [], "credentials": {"authorization": "X_AUTH"}}
    with pytest.raises(SyncError, match="repeated: x"):
        parse_sources({"sources": [one, one]})
    [source] = parse_sources([one])
    assert resolve_credentials(source, {"X_AUTH": "Bearer t"}) == {"authorization": "Bearer t"}
    with pytest.raises(SyncError, match=r"\$X_AUTH, which is not set"):
        resolve_credentials(source, {})


def test_a_website_read_with_credentials_must_say_who_may_read_it() -> None:
    entry = {"name": "intranet", "kind": "website", "credentials": {"authorization": "X_AUTH"}}
    with pytest.raises(SyncError, match=r"source 'intranet': a website source with `credentials` needs an explicit"):
        parse_sources([entry])
    [public] = parse_sources([{**entry, "access": []}])  # public, said out loud
    [staff] = parse_sources([{**entry, "access": ["staff"]}])
    assert (public.access, staff.access) == ((), ("staff",))
    [anonymous] = parse_sources([{"name": "help", "kind": "website"}])  # no credentials: public by default
    assert anonymous.access == ()


def test_website_settings_are_checked() -> None:
    with pytest.raises(SyncError, match="start_urls` or a `sitemap"):
        WebsiteOptions.parse({}, "w")
    with pytest.raises(SyncError, match="not an http"):
        WebsiteOptions.parse({"start_urls": ["ftp://a.test/"]}, "w")
    with pytest.raises(SyncError, match="unknown website settings"):
        WebsiteOptions.parse({"start_urls": ["https://a.test/"], "depth": 3}, "w")


def test_a_page_keeps_its_main_content_and_gives_its_links() -> None:
    page = b"""<html><head><title>Returns</title><meta name="description" content="How returns work"></head>
    <body><header>Site header</header><nav><a href="/help/">Help</a></nav>
    <div role="navigation"><a href="other#top">Other</a></div>
    <main><article><header><h1>Returns</h1></header><p>Return within 45 days.</p>
    <a href="https://A.test:443/help/x?y=1#frag">x</a><a href="mailto:a@b">mail</a></article></main>
    <aside>Sidebar</aside><p>Outside main</p><footer>Footer</footer><script>var x = 1;</script></body></html>"""
    cleaned, links = clean_page(page, "https://a.test/help/returns")
    text = cleaned.decode()
    assert "Return within 45 days." in text and "<h1>Returns</h1>" in text and "<title>Returns</title>" in text
    assert 'content="How returns work"' in text
    for gone in ("Site header", "Sidebar", "Outside main", "Footer", "var x", ">Help<"):
        assert gone not in text
    assert links == ["https://a.test/help/", "https://a.test/help/other", "https://a.test/help/x?y=1"]


def test_urls_are_normalised_to_one_id() -> None:
    assert normalise("HTTPS://Help.Example.com:443#top") == "https://help.example.com/"
    assert normalise("http://h.test:8080/a?b=1#c") == "http://h.test:8080/a?b=1"


def test_no_scope_ever_holds_the_no_one_group() -> None:
    assert AccessScope(frozenset({NO_ONE, "hr"})).groups == frozenset({"hr"})


def test_a_stale_copy_keeps_only_readers_both_the_old_and_the_new_groups_allow() -> None:
    assert narrowed_access((), ("hr",)) == ("hr",)  # public before: anything now listed is narrower
    assert narrowed_access(("hr", "staff"), ("hr",)) == ("hr",)
    assert narrowed_access(("hr",), ("hr", "staff")) == ("hr",)  # newly wider: not before the content is fetched
    assert narrowed_access(("hr",), ()) == ("hr",)  # newly public: likewise
    assert narrowed_access(("hr",), ("legal",)) == (NO_ONE,)
    assert narrowed_access(("hr",), (NO_ONE,)) == (NO_ONE,)
    assert narrowed_access((NO_ONE,), ("hr",)) == (NO_ONE,)


def test_timestamps_and_titles_are_read_the_one_way_every_source_shares() -> None:
    assert moment("2026-01-10T09:00:00.000Z") == datetime(2026, 1, 10, 9, 0, tzinfo=UTC)
    assert moment("2026-01-10T09:00:00+01:00") == datetime(2026, 1, 10, 8, 0, tzinfo=UTC)
    assert moment("yesterday") is None and moment(None) is None and moment(17) is None
    assert escape_html("R&D <Q3> plan") == "R&amp;D &lt;Q3&gt; plan"
