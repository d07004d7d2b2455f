"""`same_origin`: which form posts and label posts the dashboard accepts as coming from its own pages."""

from __future__ import annotations

import pytest

from bot.web.dashboard_auth import same_origin

HOST = "candor.example:8080"


@pytest.mark.parametrize(
    ("headers", "accepted"),
    [
        ({}, True),  # an old browser or a script: neither header
        ({"Sec-Fetch-Site": "same-origin", "Origin": "http://candor.example:8080"}, True),
        ({"Origin": "https://candor.example:8080"}, True),  # TLS ended at a proxy
        # our pages send no referrer, so a browser posts from them with Origin "null"
        ({"Sec-Fetch-Site": "same-origin", "Origin": "null"}, True),
        ({"Origin": "null"}, False),  # a sandboxed frame anywhere says null too: not enough alone
        ({"Sec-Fetch-Site": "cross-site", "Origin": "null"}, False),
        ({"Sec-Fetch-Site": "same-site", "Origin": "http://other.candor.example:8080"}, False),
        ({"Origin": "https://evil.example"}, False),
        ({"Origin": "ftp://candor.example:8080"}, False),
    ],
)
def test_same_origin(headers: dict[str, str], accepted: bool) -> None:
    assert same_origin(headers, HOST) is accepted
