"""`bot.web.render.answer_html`: assertions on the HTML it returns, no server, no mocks."""

from __future__ import annotations

import re
from dataclasses import replace
from html.parser import HTMLParser

from hypothesis import example, given
from hypothesis import strategies as st

from bot.render.wording import LOW_CONFIDENCE_NOTE, UNANSWERED_NOTE
from bot.web.render import answer_html, linkable_url, source_anchor
from rag.model.answers import DEFAULT_REFUSAL, AnswerSentence, Conflict
from tests.answers import CONFLICT, TRACE, answer, source

ALLOWED_TAGS = {
    "article",
    "p",
    "span",
    "sup",
    "a",
    "aside",
    "strong",
    "ul",
    "ol",
    "li",
    "q",
    "em",
    "section",
    "h3",
    "details",
    "summary",
    "blockquote",
    "div",
}
ALLOWED_ATTRIBUTES = {"class", "id", "value", "href", "role", "title", "target", "rel", "data-trace"}
UNSAFE_URLS = (
    "javascript:alert(1)",
    " JavaScript:alert(1)",
    "java\tscript:alert(1)",
    "data:text/html,x",
    "file:///etc/passwd",
    "//evil.example.com",
    'https://ok.example.com/" onclick="x',
)


class Parsed(HTMLParser):
    """Tags, attributes, ids, hrefs and text of a fragment, as a browser's tokenizer sees them."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.text = ""
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            if name == "href" and value is not None:
                self.hrefs.append(value)

    def handle_data(self, data: str) -> None:
        self.text += data


def test_every_cited_number_links_to_a_source_anchor() -> None:
    html = answer_html(answer())
    parsed = Parsed(html)

    for n in (1, 2, 3):
        assert f'<sup><a href="#src-{TRACE}-{n}">[{n}]</a></sup>' in html
        assert source_anchor(TRACE, n) in parsed.ids
    internal = [href for href in parsed.hrefs if href.startswith("#")]
    assert internal and all(href[1:] in parsed.ids for href in internal)


def test_sources_show_title_heading_date_and_link() -> None:
    html = answer_html(answer())
    parsed = Parsed(html)

    assert "https://intranet.example.com/leave/2" in parsed.hrefs
    assert '<li id="src-' + TRACE + '-2" value="2">' in html
    assert "Leave policy 2" in parsed.text and "Annual leave" in parsed.text
    assert "effective 2026-01-02" in parsed.text
    assert "Passage 2 about annual leave." in parsed.text


def test_a_citation_of_a_missing_source_is_not_a_dangling_link() -> None:
    html = answer_html(answer(sentences=(AnswerSentence("Claim.", (7,)),)))
    assert "<sup>[7]</sup>" in html
    assert "#src-" + TRACE + "-7" not in html


def test_script_in_sentence_and_excerpt_is_escaped() -> None:
    evil = '<script>alert("x")</script>'
    html = answer_html(
        answer(
            sentences=(AnswerSentence(f"Leave is {evil} booked.", (1,)),),
            sources=(source(1, excerpt=f"Before {evil} after", title=f"<img src=x onerror=alert(1)>{evil}"),),
        )
    )
    parsed = Parsed(html)

    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;" in html
    assert parsed.text.count(evil) == 3
    assert set(parsed.tags) <= ALLOWED_TAGS


def test_only_http_urls_become_links() -> None:
    for url in UNSAFE_URLS:
        html = answer_html(answer(sources=(source(1, url=url), source(2), source(3))))
        hrefs = Parsed(html).hrefs
        assert not any(
            href.lower().lstrip().startswith(("javascript", "java\t", "data", "file", "//")) for href in hrefs
        )
        assert "onclick" not in {name for name, _ in Parsed(html).attrs}
        assert linkable_url(url) is None
    assert linkable_url("HTTP://Example.com/a?b=c&d=e") == "HTTP://Example.com/a?b=c&d=e"
    assert 'href="http://example.com/a?b=1&amp;c=2"' in answer_html(
        answer(sources=(source(1, url="http://example.com/a?b=1&c=2"),))
    )


def test_source_without_url_shows_the_document_instead_of_a_link() -> None:
    html = answer_html(answer(sources=(source(1, url=None), source(2), source(3))))
    parsed = Parsed(html)
    assert "https://intranet.example.com/leave/1" not in html
    assert "handbook/leave-1.md" in parsed.text


def test_conflict_callout_present_only_with_conflicts() -> None:
    assert "conflict" not in answer_html(answer())

    html = answer_html(answer(conflicts=(CONFLICT,)))
    callout = re.search(r'<aside class="conflict".*?</aside>', html)
    assert callout is not None
    text = Parsed(callout.group(0)).text
    assert "Sources disagree" in text and "24 days" in text and "20 days" in text
    assert "Preferred [1] Leave policy 1: source 1 has the newer effective date." in text
    assert f'href="#src-{TRACE}-3"' in callout.group(0)


def test_conflict_without_preference_says_so() -> None:
    html = answer_html(answer(conflicts=(replace(CONFLICT, preferred=None, reason=""),)))
    assert "No preference: neither the effective date nor the source&#x27;s authority decides." in html
    assert "(preferred)" not in html


def test_each_side_of_an_unsettled_disagreement_is_marked_disputed() -> None:
    sides = (
        AnswerSentence("Leave is 24 days.", (1,), disputed=True),
        AnswerSentence("Leave is 20 days.", (2,), disputed=True),
    )
    html = answer_html(answer(sentences=sides, conflicts=(replace(CONFLICT, preferred=None, reason=""),)))
    assert len(re.findall(r'<span class="sentence disputed" title="disputed: [^"]+">Leave is \d+ days\.', html)) == 2
    assert '<span class="sentence">' not in html


def test_unanswered_parts_are_listed() -> None:
    html = answer_html(answer(unanswered_parts=("Can I carry <b>leave</b> over?",)))
    assert UNANSWERED_NOTE in html
    assert "<li>Can I carry &lt;b&gt;leave&lt;/b&gt; over?</li>" in html
    assert "unanswered" not in answer_html(answer())


def test_low_confidence_has_a_caveat_banner() -> None:
    html = answer_html(answer(route="low_confidence", caveats=("Source 3 is from 2019.",)))
    assert html.index(LOW_CONFIDENCE_NOTE) < html.index("Full-time staff")
    assert "Source 3 is from 2019." in html
    assert LOW_CONFIDENCE_NOTE not in answer_html(answer())


def test_abstained_shows_the_refusal_and_no_sources() -> None:
    html = answer_html(answer(route="abstained", text=DEFAULT_REFUSAL, sentences=(), conflicts=(CONFLICT,)))
    parsed = Parsed(html)
    assert parsed.text == DEFAULT_REFUSAL
    assert "<ol>" not in html and "conflict" not in html
    assert DEFAULT_REFUSAL in Parsed(answer_html(answer(route="abstained", text="", sentences=()))).text


def test_an_odd_trace_id_still_gives_matching_anchors() -> None:
    html = answer_html(answer(trace_id='a b"<c>'))
    parsed = Parsed(html)
    internal = [href[1:] for href in parsed.hrefs if href.startswith("#")]
    assert internal and all(target in parsed.ids for target in internal)
    assert 'data-trace="a b&quot;&lt;c&gt;"' in html


document_text = st.text(
    st.characters(blacklist_categories=("Cc", "Cs")), max_size=60
)  # HTML parsing normalises control characters


@given(
    sentence=document_text,
    title=document_text,
    heading=document_text,
    excerpt=document_text,
    url=st.one_of(st.none(), document_text, document_text.map(lambda s: "https://" + s)),
    value=document_text,
    note=document_text,
    part=document_text,
)
@example(sentence="", title="", heading="", excerpt="\xa0", url=None, value="", note="", part="")  # blank: not shown
def test_document_text_never_becomes_markup(
    sentence: str, title: str, heading: str, excerpt: str, url: str | None, value: str, note: str, part: str
) -> None:
    made = answer(
        sentences=(AnswerSentence(sentence, (1,)),),
        sources=(source(1, title=title, heading=heading, excerpt=excerpt, url=url), source(2)),
        conflicts=(Conflict(note, (value, "other"), (1, 2), None, note),),
        unanswered_parts=(part,),
    )
    html = answer_html(made)
    parsed = Parsed(html)

    assert set(parsed.tags) <= ALLOWED_TAGS
    assert {name for name, _ in parsed.attrs} <= ALLOWED_ATTRIBUTES
    for href in parsed.hrefs:
        assert href.startswith("#src-") or re.fullmatch(r"(?i)https?://\S+", href)
    for text in (sentence, excerpt, value, note, part):
        assert text in parsed.text or not text.strip()  # a blank passage is not shown, nothing is lost
