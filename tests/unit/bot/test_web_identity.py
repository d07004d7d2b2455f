"""`bot.web.identity.chat_login`: which login the chat page runs with, from CANDOR_WEB_CHAT and the address."""

from __future__ import annotations

import ipaddress

import pytest

from bot.web.identity import AnonymousVisitors, ProxyLogin, chat_login, chat_page_line
from rag.errors import ConfigError

PROXY = [ipaddress.ip_network("10.0.0.5/32")]


@pytest.mark.parametrize(
    ("host", "platforms", "anonymous_page"),
    [
        ("127.0.0.1", False, True),  # trying Candor on one's own machine
        ("localhost", False, True),
        ("::1", False, True),
        ("0.0.0.0", False, False),  # reachable from the network: no page unless asked for
        ("192.168.1.20", False, False),
        ("127.0.0.1", True, False),  # serving Slack or Teams: reached from outside, often via a local proxy
    ],
)
def test_auto_opens_the_anonymous_page_only_on_a_private_loopback_server(
    host: str, platforms: bool, anonymous_page: bool
) -> None:
    login = chat_login("auto", host=host, platforms=platforms, header="X-Forwarded-Email", trusted=())
    assert isinstance(login, AnonymousVisitors) is anonymous_page
    assert (login is None) is not anonymous_page
    assert ("anonymous" if anonymous_page else "off") in chat_page_line(login, "auto")


def test_the_explicit_modes() -> None:
    common = {"host": "0.0.0.0", "platforms": True, "header": "X-Forwarded-Email"}
    assert chat_login("off", trusted=PROXY, **common) is None  # type: ignore[arg-type]
    assert isinstance(chat_login("anonymous", trusted=(), **common), AnonymousVisitors)  # type: ignore[arg-type]
    proxy = chat_login("proxy", trusted=PROXY, **common)  # type: ignore[arg-type]
    assert isinstance(proxy, ProxyLogin) and proxy.trusted == tuple(PROXY)
    assert "X-Forwarded-Email" in chat_page_line(proxy, "proxy")


def test_a_proxy_login_without_the_proxys_address_is_refused() -> None:
    with pytest.raises(ConfigError, match="CANDOR_WEB_TRUSTED_PROXIES"):
        ProxyLogin("X-Forwarded-Email", [])
    with pytest.raises(ConfigError, match="CANDOR_WEB_USER_HEADER"):
        ProxyLogin(" ", PROXY)
