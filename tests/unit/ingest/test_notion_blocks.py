"""A Notion page's blocks as Markdown (rag/ingest/sources/notion_blocks.py), read back by the real
Markdown loader `candor ingest` uses: any text survives as that text (escaping), lists keep their
nesting, tables their header, and a database row's properties come first. No network."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.ingest.loaders import load_document
from rag.ingest.sources.notion_blocks import escape, property_lines, render_page, rich_text, title_of

MARKUP = [*"*_`[]()<>#|~&!\\-+=.:1 \n", "**", "- ", "1. ", "# ", "---", "```", "&amp;", "<b>", "[x](y)"]
text = st.lists(
    st.sampled_from(MARKUP) | st.text(st.characters(blacklist_categories=("Cc", "Cs", "Cf", "Co", "Cn", "Zl", "Zp"))),
    max_size=8,
).map("".join)
word = st.text(st.characters(whitelist_categories=("Ll", "Lu", "Nd")), min_size=1, max_size=6)
marks = st.fixed_dictionaries({k: st.booleans() for k in ("bold", "italic", "strikethrough", "code")})


def rt(content: str, href: str | None = None, **annotations: bool) -> dict[str, Any]:
    return {
        "type": "text",
        "text": {"content": content, "link": {"url": href} if href else None},
        "annotations": {"underline": False, "color": "default", **annotations},
        "plain_text": content,
        "href": href,
    }


def block(
    kind: str, *runs: dict[str, Any], children: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    made: dict[str, Any] = {"type": kind, kind: {"rich_text": list(runs), **extra}, "has_children": bool(children)}
    if children:
        made["children"] = children
    return made


def read(markdown: str) -> list[tuple[str, str, int]]:
    """What the loader makes of the Markdown: (kind, text, level) of each block (a last paragraph
    added, so a page of nothing but its title is still a document)."""
    parsed = load_document(Path("page.md"), (markdown + "\nEnd of page.\n").encode())
    assert parsed.blocks[-1].text == "End of page."
    return [(b.kind, b.text, b.level) for b in parsed.blocks[:-1]]


def squeeze(value: str) -> str:
    return " ".join(value.split())


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(text, marks, st.none() | st.just("https://example.com/a b(c)")), min_size=1, max_size=5))
def test_any_rich_text_reads_back_as_its_own_text(runs: list[tuple[str, dict[str, bool], str | None]]) -> None:
    items = [rt(content, href, **annotations) for content, annotations, href in runs]
    expected = squeeze("".join(content for content, _, _ in runs))
    found = read(render_page("Page", [], [block("paragraph", *items)]))
    assert found[0] == ("heading", "Page", 1)
    assert [b[1] for b in found[1:]] == ([expected] if expected else [])


@settings(max_examples=200)
@given(text)
def test_escaped_text_is_read_as_itself_anywhere_in_a_list(content: str) -> None:
    page = render_page("T", [], [block("bulleted_list_item", rt("item"), children=[block("quote", rt(content))])])
    texts = [b[1] for b in read(page)[1:]]
    assert squeeze(" ".join(texts)) == squeeze("item " + content)


KINDS = ("bulleted_list_item", "numbered_list_item", "to_do", "toggle")


@st.composite
def trees(draw: st.DrawFn, depth: int = 0) -> list[dict[str, Any]]:
    items = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(KINDS))
        children = draw(trees(depth + 1)) if depth < 2 and draw(st.booleans()) else None
        label = draw(word) + draw(text.filter(lambda t: "\n" not in t))
        items.append(block(kind, rt(label), children=children, checked=draw(st.booleans())))
    return items


def outline(items: list[dict[str, Any]], level: int = 1) -> list[tuple[str, int]]:
    found = []
    for item in items:
        data = item[item["type"]]
        prefix = ("[x] " if data["checked"] else "[ ] ") if item["type"] == "to_do" else ""
        found.append((squeeze(prefix + data["rich_text"][0]["plain_text"]), level))
        found.extend(outline(item.get("children", []), level + 1))
    return found


@settings(max_examples=200)
@given(trees())
def test_lists_keep_their_nesting(items: list[dict[str, Any]]) -> None:
    found = [(text, level) for kind, text, level in read(render_page("T", [], items))[1:]]
    assert found == outline(items)


@settings(max_examples=150)
@given(
    st.lists(word, min_size=1, max_size=4).flatmap(
        lambda header: st.tuples(
            st.just(header), st.lists(st.lists(text, min_size=len(header), max_size=len(header)), max_size=4)
        )
    )
)
def test_tables_are_markdown_tables_read_with_their_header(table: tuple[list[str], list[list[str]]]) -> None:
    header, rows = table
    cells = [{"type": "table_row", "table_row": {"cells": [[rt(c)] for c in row]}} for row in [header, *rows]]
    page = render_page("T", [], [{"type": "table", "table": {"has_column_header": True}, "children": cells}])
    expected = ["; ".join(f"{h}: {squeeze(c)}" for h, c in zip(header, row, strict=True) if squeeze(c)) for row in rows]
    assert [text for kind, text, _ in read(page)[1:] if kind == "table_row"] == [e for e in expected if e]


def test_formats_links_and_code_are_kept_where_markdown_reads_them() -> None:
    items = [rt("Every change needs "), rt("two", bold=True), rt(" reviews; run "), rt("make `test`", code=True)]
    items += [rt(" or see "), rt("the guide", href="https://example.com/guide"), rt(" (*not* 3)", italic=True)]
    assert rich_text(items) == (
        "Every change needs **two** reviews; run `` make `test` `` or see "
        "[the guide](<https://example.com/guide>) (\\*not\\* 3)"
    )  # the italic run starts on "(": left plain rather than risk a stray "*"
    assert rich_text([rt("a", bold=True), rt("b", italic=True)]) == "**a**b"  # back to back: the second stays plain
    assert rich_text([rt("line one\nline two")]) == "line one\\\nline two"
    assert escape("# not a heading") == "\\# not a heading" and escape("1. not a list") == "1\\. not a list"


def test_a_page_renders_every_block_kind() -> None:
    blocks = [
        block("heading_1", rt("Release rules")),
        block("paragraph", rt("Deploys are frozen on Fridays.")),
        block("toggle", rt("Staging"), children=[block("paragraph", rt("Restarts on Sundays."))]),
        block("callout", rt("Refunds within 14 days."), icon={"type": "emoji", "emoji": "💡"}),
        {"type": "code", "code": {"rich_text": [rt("print('```')")], "language": "python"}},
        {"type": "divider", "divider": {}},
        {"id": "c0ffee00-0000-4000-8000-000000000001", "type": "child_page", "child_page": {"title": "Runbook"}},
        {"id": "c0ffee00-0000-4000-8000-000000000002", "type": "child_page", "child_page": {"title": "Salary bands"}},
        {"type": "pdf", "pdf": {"type": "file", "name": "guide.pdf", "file": {"url": "https://s3.test/x?sig=1"}}},
        {"type": "unsupported", "unsupported": {}},
    ]
    links = {"c0ffee00-0000-4000-8000-000000000001": "https://www.notion.so/acme/Runbook-c0ffee"}
    page = render_page("Deployments", [("Status", "Live")], blocks, links)
    assert page.startswith("# Deployments\n\n- Status: Live\n\n## Release rules\n\nDeploys are frozen on Fridays.")
    assert "- Staging\n\n  Restarts on Sundays." in page and "> 💡 Refunds within 14 days." in page
    assert "````python\nprint('```')\n````" in page and "\n---\n" in page
    assert "[Runbook](<https://www.notion.so/acme/Runbook-c0ffee>)" in page
    assert "Salary bands" not in page  # a child page it may not name is left out
    assert "PDF: guide.pdf" in page and "s3.test" not in page  # the file's URL expires: never stored
    kinds = [kind for kind, _, _ in read(page)]
    assert kinds.count("code") == 1 and ("heading", "Release rules", 2) in read(page)


def test_a_rows_properties_are_read_by_type_and_its_title_comes_from_the_title_property() -> None:
    properties = {
        "Name": {"type": "title", "title": [rt("Checkout outage")]},
        "Severity": {"type": "select", "select": {"name": "SEV1"}},
        "Status": {"type": "status", "status": {"name": "Resolved"}},
        "Services": {"type": "multi_select", "multi_select": [{"name": "web"}, {"name": "api"}]},
        "Date": {"type": "date", "date": {"start": "2026-01-02", "end": "2026-01-03"}},
        "Paged": {"type": "checkbox", "checkbox": True},
        "Minutes": {"type": "number", "number": 42},
        "Owner": {"type": "people", "people": [{"object": "user", "id": "u1", "name": "Ana"}]},
        "Key": {"type": "unique_id", "unique_id": {"prefix": "INC", "number": 7}},
        "Notes": {"type": "rich_text", "rich_text": []},
        "Related": {"type": "relation", "relation": [{"id": "x"}]},
    }
    assert title_of(properties) == "Checkout outage"
    assert property_lines(properties) == [
        ("Severity", "SEV1"),
        ("Status", "Resolved"),
        ("Services", "web, api"),
        ("Date", "2026-01-02 → 2026-01-03"),
        ("Paged", "Yes"),
        ("Minutes", "42"),
        ("Owner", "Ana"),
        ("Key", "INC-7"),
    ]


def mention(title: str, page_id: str) -> dict[str, Any]:
    return {
        "type": "mention",
        "mention": {"type": "page", "page": {"id": page_id}},
        "plain_text": title,
        "href": f"https://www.notion.so/{page_id.replace('-', '')}",
        "annotations": {},
    }


def test_a_mention_of_a_page_the_readers_may_not_open_names_no_title() -> None:
    shared, closed = "1a2b3c4d-0000-4000-8000-000000000001", "1a2b3c4d-0000-4000-8000-000000000002"
    items = [rt("See "), mention("Onboarding", shared), rt(" and "), mention("Layoffs 2027", closed), rt(".")]
    links = {shared.replace("-", ""): "https://wiki.example/onboarding"}  # ids with or without dashes
    assert rich_text(items, links) == "See [Onboarding](<https://wiki.example/onboarding>) and a page."
    assert "Layoffs" in rich_text(items)  # no `links` given: every page may be named (a renderer's default)
    table = block("table", children=[block("table_row", cells=[[mention("Layoffs 2027", closed)]])])
    page = render_page("Notes", [], [{**table, "table": {"has_column_header": False}}], links)
    assert "Layoffs" not in page
