"""Loaders: bytes of each supported format in, blocks and metadata out, errors from one tree."""

from __future__ import annotations

import io
from datetime import date
from pathlib import Path

import pypdf
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.errors import CorruptFile, EmptyFile, IngestError, UnreadableFile, UnsupportedFile
from rag.ingest.blocks import Block
from rag.ingest.loaders import SUPPORTED_SUFFIXES, load_document


def make_pdf(pages: list[list[str]], info: dict[str, str] | None = None) -> bytes:
    """A minimal valid PDF: one Helvetica text line per string, offsets in a correct xref table."""
    kids = b" ".join(b"%d 0 R" % (4 + 2 * index) for index in range(len(pages)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % len(pages),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for index, lines in enumerate(pages):
        operations = [b"BT /F1 12 Tf 14 TL 72 720 Td"]
        for line in lines:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            operations.append(b"(" + escaped.encode("latin-1") + b") Tj T*")
        stream = b"\n".join([*operations, b"ET"])
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * index)
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    info_ref = b""
    if info:
        objects.append(b"<< " + b" ".join(b"/%s (%s)" % (k.encode(), v.encode()) for k, v in info.items()) + b" >>")
        info_ref = b" /Info %d 0 R" % len(objects)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R%s >>\n" % (len(objects) + 1, info_ref)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def encrypted(pdf: bytes, user_password: str) -> bytes:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(pdf)))
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def kinds_and_texts(blocks: list[Block]) -> list[tuple[str, str, int]]:
    return [(block.kind, block.text, block.level) for block in blocks]


# --- Markdown ---------------------------------------------------------------------------------

HANDBOOK_MD = b"""---
Title: Leave Policy
Effective_Date: 2026-01-01
authority: HR
---
# Annual leave

Staff get *25 days* of [paid leave](https://example.com/leave) per year;
see `LEAVE-1` for details.

## How to apply

1. Fill in the **form**
   - Attach the manager's approval
2. Send it to HR

| Plan  | Price  | Notes |
|-------|--------|-------|
| Basic | $12.50 |       |
| Pro   | $20    | yearly |

```python
apply(days=3)
    # indented
```
"""


def test_markdown_front_matter_becomes_lower_cased_metadata_and_title() -> None:
    doc = load_document(Path("leave.md"), HANDBOOK_MD)
    assert doc.title == "Leave Policy"
    assert doc.metadata == {"title": "Leave Policy", "effective_date": date(2026, 1, 1), "authority": "HR"}


def test_markdown_body_becomes_structural_blocks() -> None:
    doc = load_document(Path("leave.md"), HANDBOOK_MD)
    assert kinds_and_texts(doc.blocks) == [
        ("heading", "Annual leave", 1),
        ("paragraph", "Staff get 25 days of paid leave per year; see LEAVE-1 for details.", 0),
        ("heading", "How to apply", 2),
        ("list_item", "Fill in the form", 1),
        ("list_item", "Attach the manager's approval", 2),
        ("list_item", "Send it to HR", 1),
        ("table_row", "Plan: Basic; Price: $12.50", 0),
        ("table_row", "Plan: Pro; Price: $20; Notes: yearly", 0),
        ("code", "apply(days=3)\n    # indented", 0),
    ]


def test_markdown_title_falls_back_to_first_h1_then_none() -> None:
    assert load_document(Path("a.md"), b"Intro.\n\n## Sub\n\ntext\n\n# Main\n").title == "Main"
    assert load_document(Path("a.markdown"), b"Just a paragraph.").title is None


def test_markdown_list_item_with_several_paragraphs_is_one_block() -> None:
    doc = load_document(Path("a.md"), b"- first line\n  continues\n\n  second paragraph\n- next\n")
    assert kinds_and_texts(doc.blocks) == [
        ("list_item", "first line continues second paragraph", 1),
        ("list_item", "next", 1),
    ]


def test_markdown_lines_of_fields_are_one_fact_each_and_wrapped_prose_stays_whole() -> None:
    fields = b"**Beta version:** v2.2-beta\nEU base URL: **https://eu.api.example**\nAU base URL (Enterprise): au\n"
    prose = b"\nNote: the limits below apply\nto every plan, and change: rarely.\n\nOne line: alone.\n"
    doc = load_document(Path("a.md"), fields + prose)
    assert kinds_and_texts(doc.blocks) == [
        ("paragraph", "Beta version: v2.2-beta", 0),
        ("paragraph", "EU base URL: https://eu.api.example", 0),
        ("paragraph", "AU base URL (Enterprise): au", 0),
        ("paragraph", "Note: the limits below apply to every plan, and change: rarely.", 0),
        ("paragraph", "One line: alone.", 0),
    ]


def test_a_field_whose_value_wraps_onto_the_next_line_is_still_one_field() -> None:
    source = (
        b"Minimum top-up: EUR 10.00\nMaximum balance: EUR 250.00\n"
        b"Daily cap (pay-as-you-go): the price of a DayRover; the DayRover+ price if\nyou rode\n"
    )
    doc = load_document(Path("a.md"), source)
    assert kinds_and_texts(doc.blocks) == [
        ("paragraph", "Minimum top-up: EUR 10.00", 0),
        ("paragraph", "Maximum balance: EUR 250.00", 0),
        ("paragraph", "Daily cap (pay-as-you-go): the price of a DayRover; the DayRover+ price if you rode", 0),
    ]


def test_markdown_html_and_images_keep_their_text() -> None:
    doc = load_document(Path("a.md"), b'<div class="note">Call <b>us</b></div>\n\n![the org chart](chart.png)\n')
    assert [block.text for block in doc.blocks] == ["Call us", "the org chart"]


@pytest.mark.parametrize(
    "source",
    [b"---\ntitle: [unclosed\n---\nBody text.\n", b"---\ntitle: a: b: c\n---\nBody.\n"],
)
def test_malformed_front_matter_is_corrupt(source: bytes) -> None:
    with pytest.raises(CorruptFile) as caught:
        load_document(Path("bad.md"), source)
    assert caught.value.path == Path("bad.md")
    assert isinstance(caught.value.__cause__, Exception)


def test_markdown_with_headings_only_is_empty() -> None:
    with pytest.raises(EmptyFile):
        load_document(Path("a.md"), b"---\ntitle: T\n---\n# Only a heading\n\n## And another\n")


# --- Plain text -------------------------------------------------------------------------------

HANDBOOK_TXT = """Refund Policy
=============

Refunds are issued within
14 days of the request.

ELIGIBILITY
Items must be unused.
- receipts are required
  for every item
* gift cards are excluded
1. ask the shop first

Exceptions
----------
Sale items cannot be refunded.
"""


def test_text_paragraphs_lists_and_headings() -> None:
    doc = load_document(Path("refunds.txt"), HANDBOOK_TXT.encode())
    assert doc.title == "Refund Policy"
    assert kinds_and_texts(doc.blocks) == [
        ("heading", "Refund Policy", 1),
        ("paragraph", "Refunds are issued within 14 days of the request.", 0),
        ("heading", "ELIGIBILITY", 2),
        ("paragraph", "Items must be unused.", 0),
        ("list_item", "receipts are required for every item", 1),
        ("list_item", "gift cards are excluded", 1),
        ("list_item", "ask the shop first", 1),
        ("heading", "Exceptions", 2),
        ("paragraph", "Sale items cannot be refunded.", 0),
    ]


LIFECYCLE_TXT = """PRODUCT LIFECYCLE POLICY
Reference: PRD-POL-002
Owner: Product Management

2. DEFINITIONS

End of sale ............... The last day the model is sold. Retailers may
                            sell remaining stock after this date.
Launch date ............... The first day the model was sold.

3. COMMITMENTS

3.1 Routers receive feature updates until the end of sale date.
3.2 Routers receive security updates for 18 months after
    the end of sale date.

Model           Launch       End of sale   End of security updates
--------------  -----------  ------------  -----------------------
NX-6 Pro        2022-09-15   On sale       Not before 2029-03-15
RT-9            2020-05-04   2023-06-30    2024-12-31

Dates are in YYYY-MM-DD format.
"""


def test_text_tables_definitions_and_numbered_clauses_are_read_by_their_layout() -> None:
    doc = load_document(Path("lifecycle.txt"), LIFECYCLE_TXT.encode())
    assert kinds_and_texts(doc.blocks) == [
        ("heading", "PRODUCT LIFECYCLE POLICY", 2),
        ("paragraph", "Reference: PRD-POL-002", 0),
        ("paragraph", "Owner: Product Management", 0),
        ("heading", "2. DEFINITIONS", 2),
        (
            "paragraph",
            "End of sale: The last day the model is sold. Retailers may sell remaining stock after this date.",
            0,
        ),
        ("paragraph", "Launch date: The first day the model was sold.", 0),
        ("heading", "3. COMMITMENTS", 2),
        ("paragraph", "3.1 Routers receive feature updates until the end of sale date.", 0),
        ("paragraph", "3.2 Routers receive security updates for 18 months after the end of sale date.", 0),
        (
            "table_row",
            "Model: NX-6 Pro; Launch: 2022-09-15; End of sale: On sale; End of security updates: Not before 2029-03-15",
            0,
        ),
        (
            "table_row",
            "Model: RT-9; Launch: 2020-05-04; End of sale: 2023-06-30; End of security updates: 2024-12-31",
            0,
        ),
        ("paragraph", "Dates are in YYYY-MM-DD format.", 0),
    ]


def test_text_title_only_when_first_line_is_short() -> None:
    long_first = ("word " * 30).strip() + ".\nSecond line."
    assert load_document(Path("a.text"), long_first.encode()).title is None


def test_text_with_utf8_bom_and_crlf() -> None:
    doc = load_document(Path("a.txt"), b"\xef\xbb\xbfCaf\xc3\xa9 hours\r\n\r\nOpen   daily.\r\n")
    assert doc.title == "Café hours"
    assert [block.text for block in doc.blocks] == ["Café hours", "Open daily."]


def test_text_falls_back_to_cp1252_or_latin1() -> None:
    doc = load_document(Path("a.txt"), "Café prices – 5 €\n\nNaïve façade.".encode("cp1252"))
    assert [block.text for block in doc.blocks] == ["Café prices – 5 €", "Naïve façade."]
    latin1 = "Ärger über Öl und Gebühren, die niemand versteht.\n".encode("latin-1")
    doc = load_document(Path("b.txt"), latin1 + b"\x81")  # 0x81 is not cp1252: latin-1 it is
    assert doc.blocks[0].text.startswith("Ärger über Öl")


def test_text_utf16_with_bom_is_decoded() -> None:
    doc = load_document(Path("a.txt"), "Hello from UTF-16.".encode("utf-16"))
    assert [block.text for block in doc.blocks] == ["Hello from UTF-16."]


def test_control_character_soup_is_unreadable() -> None:
    with pytest.raises(UnreadableFile, match="not UTF-8 text"):
        load_document(Path("a.txt"), bytes(range(1, 32)) * 20 + b"\xff\xfe")


@pytest.mark.parametrize("name", ["a.txt", "a.md", "a.html"])
def test_nul_bytes_mean_binary(name: str) -> None:
    with pytest.raises(UnsupportedFile, match="binary"):
        load_document(Path(name), b"PK\x03\x04\x00\x00\x08\x00" + b"x" * 100)


@pytest.mark.parametrize("name", ["a.txt", "a.md", "a.html", "a.htm", "a.text", "a.markdown"])
@pytest.mark.parametrize("data", [b"", b"  \n\n\t \n", b"\xef\xbb\xbf"])
def test_empty_documents(name: str, data: bytes) -> None:
    with pytest.raises(EmptyFile) as caught:
        load_document(Path(name), data)
    assert caught.value.path == Path(name)


# --- HTML -------------------------------------------------------------------------------------

HANDBOOK_HTML = b"""<!DOCTYPE html>
<html><head>
  <title>Expenses</title>
  <meta name="Effective_Date" content="2026-03-01">
  <meta name="authority" content="Finance">
  <meta charset="utf-8">
  <style>p { color: red }</style><script>track()</script>
</head>
<body>
  <header>Site banner</header><nav><a href="/">Home</a></nav>
  <div class="intro">Read this <em>first</em>.<br>Thanks!<!-- hidden --></div>
  <h1>Expense claims</h1>
  <p>Claims   are paid
     monthly.</p>
  <ul><li>Keep receipts<ul><li>Originals only</li></ul></li><li><p>Submit by the 5th</p></li></ul>
  <table>
    <tr><th>Item</th><th>Limit</th></tr>
    <tr><td>Meals</td><td>$30</td></tr>
    <tr><td>Hotel</td><td>$150</td></tr>
  </table>
  <pre>claim --month 3
  --dry-run</pre>
  <section>Loose text in a section.</section>
  <footer>Copyright</footer>
</body></html>
"""


def test_html_blocks_title_and_meta() -> None:
    doc = load_document(Path("expenses.html"), HANDBOOK_HTML)
    assert doc.title == "Expenses"
    assert doc.metadata == {"effective_date": "2026-03-01", "authority": "Finance"}
    assert kinds_and_texts(doc.blocks) == [
        ("paragraph", "Read this first. Thanks!", 0),
        ("heading", "Expense claims", 1),
        ("paragraph", "Claims are paid monthly.", 0),
        ("list_item", "Keep receipts", 1),
        ("list_item", "Originals only", 2),
        ("list_item", "Submit by the 5th", 1),
        ("table_row", "Item: Meals; Limit: $30", 0),
        ("table_row", "Item: Hotel; Limit: $150", 0),
        ("code", "claim --month 3\n  --dry-run", 0),
        ("paragraph", "Loose text in a section.", 0),
    ]


def test_html_title_falls_back_to_h1_and_text_outside_elements_is_kept() -> None:
    doc = load_document(Path("a.htm"), b"<body><h1>Pricing</h1>Plain text after the heading.</body>")
    assert doc.title == "Pricing"
    assert doc.blocks[-1] == Block("paragraph", "Plain text after the heading.")


def test_html_declared_charset_is_honoured() -> None:
    page = '<meta charset="windows-1252"><p>Café – open</p>'.encode("cp1252")
    assert load_document(Path("a.html"), page).blocks == [Block("paragraph", "Café – open")]


def test_html_with_only_scripts_is_empty() -> None:
    with pytest.raises(EmptyFile):
        load_document(Path("a.html"), b"<html><script>var x = 1;</script><nav>Menu</nav></html>")


# --- PDF --------------------------------------------------------------------------------------


def test_pdf_text_is_extracted() -> None:
    doc = load_document(Path("hello.pdf"), make_pdf([["Hello"]]))
    assert doc.blocks == [Block("paragraph", "Hello")]
    assert doc.title is None


def test_pdf_lines_become_paragraphs_and_list_items_across_pages() -> None:
    pages = [
        [
            "Refunds are issued within fourteen days of the request, always by the",
            "original payment method.",
            "Short closing line.",
            "- receipts are required",
            "- gift cards are excluded",
            "1",
        ],
        ["Sale items cannot be refunded."],
    ]
    doc = load_document(Path("refunds.pdf"), make_pdf(pages, {"Title": "Refund Policy", "Author": "Support"}))
    assert doc.title == "Refund Policy"
    assert doc.metadata == {"title": "Refund Policy", "author": "Support"}
    assert kinds_and_texts(doc.blocks) == [
        ("paragraph", f"{pages[0][0]} {pages[0][1]}", 0),
        ("paragraph", "Short closing line.", 0),
        ("list_item", "receipts are required", 1),
        ("list_item", "gift cards are excluded", 1),
        ("paragraph", "Sale items cannot be refunded.", 0),
    ]


def test_pdf_paragraph_cut_by_a_page_break_is_joined() -> None:
    pages = [["The warranty covers parts and"], ["labour for two years."]]
    doc = load_document(Path("w.pdf"), make_pdf(pages))
    assert doc.blocks == [Block("paragraph", "The warranty covers parts and labour for two years.")]


def test_pdf_encrypted_with_empty_password_opens() -> None:
    doc = load_document(Path("open.pdf"), encrypted(make_pdf([["Hello"]]), ""))
    assert [block.text for block in doc.blocks] == ["Hello"]


def test_pdf_encrypted_with_a_password_is_corrupt() -> None:
    with pytest.raises(CorruptFile, match="encrypted"):
        load_document(Path("locked.pdf"), encrypted(make_pdf([["Hello"]]), "secret"))


@pytest.mark.parametrize(
    "data",
    [b"%PDF-1.4\nthis is not a pdf body", make_pdf([["Hello"]])[:150], b"plain text, not a PDF", b""],
)
def test_corrupt_pdf_bytes(data: bytes) -> None:
    with pytest.raises(CorruptFile) as caught:
        load_document(Path("broken.pdf"), data)
    assert caught.value.path == Path("broken.pdf")


def test_pdf_without_text_is_empty() -> None:
    with pytest.raises(EmptyFile):
        load_document(Path("scan.pdf"), make_pdf([[]]))


# --- Dispatch ---------------------------------------------------------------------------------


def test_supported_suffixes() -> None:
    assert frozenset({".md", ".markdown", ".txt", ".text", ".html", ".htm", ".pdf"}) == SUPPORTED_SUFFIXES


@pytest.mark.parametrize("name", ["a.docx", "a.png", "Makefile", "a.md.bak"])
def test_unknown_suffix_is_unsupported(name: str) -> None:
    with pytest.raises(UnsupportedFile):
        load_document(Path(name), b"text")


def test_suffix_case_does_not_matter() -> None:
    assert load_document(Path("README.MD"), b"# T\n\nBody.").title == "T"


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=400), suffix=st.sampled_from(sorted(SUPPORTED_SUFFIXES)))
def test_any_bytes_give_blocks_or_an_ingest_error(data: bytes, suffix: str) -> None:
    try:
        doc = load_document(Path("f" + suffix), data)
    except IngestError:
        return
    assert doc.blocks
    assert all(block.text.strip() for block in doc.blocks)
    assert all("  " not in block.text for block in doc.blocks if block.kind != "code")


def test_html_end_tags_left_open_close_as_in_a_browser() -> None:
    page = (
        b"<ul><li>Dental coverage up to 2000<li>Vision coverage yearly</ul>"
        b"<ol><li><p>Open the portal.</p><p>Then click claims.</p><li><strong>Up</strong>load <p>the receipt.</p>"
        b"<li><p>Sign.</p>Then send.</ol>"
        b"<table><tr><th>Plan<th>Price<tr><td>Basic<td>10 dollars</table>"
        b"<p>First paragraph<p>Second paragraph"
    )
    assert kinds_and_texts(load_document(Path("a.html"), page).blocks) == [
        ("list_item", "Dental coverage up to 2000", 1),
        ("list_item", "Vision coverage yearly", 1),
        ("list_item", "Open the portal. Then click claims.", 1),
        ("list_item", "Upload the receipt.", 1),
        ("list_item", "Sign. Then send.", 1),
        ("table_row", "Plan: Basic; Price: 10 dollars", 0),
        ("paragraph", "First paragraph", 0),
        ("paragraph", "Second paragraph", 0),
    ]


def test_html_article_header_keeps_its_title_and_date_but_the_page_header_goes() -> None:
    page = (
        b"<header><nav>Home</nav><p>Acme intranet</p></header>"
        b"<article><header><h1>Refund policy</h1><p>Effective 1 January 2026</p></header>"
        b"<p>Refunds are paid within 14 days.</p></article>"
    )
    doc = load_document(Path("a.html"), page)
    assert doc.title == "Refund policy"
    assert kinds_and_texts(doc.blocks) == [
        ("heading", "Refund policy", 1),
        ("paragraph", "Effective 1 January 2026", 0),
        ("paragraph", "Refunds are paid within 14 days.", 0),
    ]


def test_utf8_with_a_stray_byte_stays_utf8() -> None:
    data = "Café menu\n\nThe café serves crème brûlée and cold drinks.\n".encode() + b"Price \xa3 4.\n"
    blocks = load_document(Path("menu.txt"), data).blocks
    assert blocks[0].text == "Café menu"
    assert "crème brûlée" in blocks[1].text and "Price \ufffd 4." in blocks[-1].text
