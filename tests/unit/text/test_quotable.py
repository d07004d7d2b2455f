"""`rag.text.quotable`: whole sentences are readable; fragments, list intros, page furniture and
sentences about the page itself are not quoted."""

from __future__ import annotations

import pytest

from rag.text.facts import clean_sentence
from rag.text.quotable import about_the_page, readable


@pytest.mark.parametrize(
    "text",
    [
        "Full-time employees receive 24 days of paid annual leave.",
        "$15 per user per month on monthly billing.",
        "2,000 hosts are supported by the NW-200X collector.",
        '"Beacon Pro" keeps results for 365 days.',
        "2.) the president becomes the Commander in Chief of the Army and Navy.",  # a list marker's parenthesis
        # an instruction or prose saying one interface word or phrase in passing
        "Sign in and open the Settings menu, then choose Create account.",
        "Search results are sorted by date, newest first.",
        "Police obtained a search warrant and searched the house.",
        # "sign in" as an instruction's verb, not a page's button
        "The bypass code is valid for 8 hours and allows you to sign in and register a new phone.",
        "Sign in to the laptop with your username and password.",
        "Devices that cannot sign in to the network use a separate one.",
        "Open the app and sign in.",
        # works with their years in prose
        "His early films included Show Boat (1929), the musical Broadway (1929) and the first all-colour feature"
        " (1930), King of Jazz.",
    ],
)
def test_readable_sentences(text: str) -> None:
    assert readable(text)


@pytest.mark.parametrize(
    "text",
    [
        "Annual leave",  # a heading
        "Leave policy 2026",  # a short fragment
        "Short one here.",  # under 20 characters
        "The following rules apply to every employee:",  # a list intro
        "and then employees receive 24 days of leave.",  # starts mid-sentence
        "",
        # a web page's furniture, copied with its text
        "External links [ edit ] Lahu Ke Do Rang at IMDb v t e Films and television series by Raj Kapoor.",
        "Ardhangini - Wikiwand English Sign in Top Qs Timeline Chat Perspective AI tools All Articles.",
        "Related changes Permanent link Page information Cite this page Print/export Create a book.",
        # a site's interface: two different interface phrases
        "Giant Steps | Album Review Close Search Type your search terms above and press return to see the search"
        " results.",
        "Pekka Niemi (ice hockey player) - Wikipedia Jump to content Main menu move to sidebar hide Navigation.",
        "View Mobile Site Follow on IG TikTok Join Fan Lab for more.",
        "1885-1955 ) ; Edmund Maurice Burke Roche, 4th Baron Fermoy ; Maurice Roche.",  # a parenthesis's tail
        # a list of works, not a sentence
        "Cadillac Rag (1991) Goin' Back to Dixie (1992) The Walls We Bounce Off Of (1994) No End of Love (1996).",
    ],
)
def test_unreadable_fragments(text: str) -> None:
    assert not readable(text)


@pytest.mark.parametrize(
    ("text", "signpost"),
    [
        ("This page lists the releases of the last eighteen months.", True),
        ("Below you'll find answers to the questions we hear most often.", True),
        ("Tip: skim the Security page before you invite others.", True),
        ("Tags: reset, nx-6, nx-6-pro, howto", True),  # a forum post's labels
        ("The page size defaults to 50 items.", False),
        ("Invitations expire after 7 days.", False),
    ],
)
def test_sentences_about_the_page_itself_are_signposts(text: str, signpost: bool) -> None:
    assert about_the_page(text) is signpost


def test_a_list_intro_is_not_readable_once_cleaned() -> None:
    assert not readable(clean_sentence("If an Owner has lost their second factor and no Admin can help:"))
