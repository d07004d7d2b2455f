"""Which addresses a sync may connect to, checked on the address it actually connects to.

A source's requests go out through `rag.ingest.sources.outbound.Outbound`, whose aiohttp session is
made here: a name is resolved once, by the session's resolver, and every address the answer holds
is checked before aiohttp connects to that very address (it never looks the name up again; the
name only goes to TLS). An address written in a URL, which no resolver sees, is checked by the
socket factory that opens every connection, the last step before a packet leaves.

Refused unless the source says `allow_private_network: true` (an internal wiki, a test fake), or
lists the internal networks it may reach (`allow_private_network: [10.20.0.0/16]`, nothing else):
loopback (127/8, ::1), link-local (169.254/16, where cloud metadata lives, and fe80::/10), private
(10/8, 172.16/12, 192.168/16, fc00::/7), multicast, unspecified, and the other ranges that are not
on the public internet (100.64/10, reserved and documentation blocks). So a sitemap, a link, a
redirect or a DNS answer that points inside, DNS rebinding included, reaches nothing.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp
from aiohappyeyeballs import AddrInfoType, SocketFactoryType
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

__all__ = ["BlockedAddress", "Network", "origin", "redact", "refusal"]

_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#]+@")
_DEFAULT_PORTS = {"http": 80, "https": 443}


class BlockedAddress(OSError):
    """A connection the guard refused: `host` is (or resolved to) `address`, of the kind `reason`."""

    def __init__(self, host: str, address: str, reason: str) -> None:
        self.host, self.address, self.reason = host, address, reason
        shown = host if host == address else f"{host} resolves to {address}, which"
        super().__init__(
            f"{shown} is a {reason} address: refused (a source reaches loopback, link-local and private "
            "addresses only with `allow_private_network: true`)"
        )


def refusal(address: str) -> str | None:
    """Why `address` (an IP address) is not on the public internet, or None when it is."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # fe80::1%eth0: the zone is not part of it
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    checks = (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("private", ip.is_private),
        ("non-public", not ip.is_global),
    )
    return next((name for name, hit in checks if hit), None)


@dataclass(frozen=True, slots=True)
class Network:
    """How a source reaches the network: whether internal addresses are allowed, and (for tests)
    the resolver that turns names into addresses and the factory that opens each socket, both
    called after and under the guard, never instead of it."""

    allow_private: bool = False
    """Every internal address may be reached."""
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    """Internal networks that may be reached when `allow_private` is off."""
    resolver: AbstractResolver | None = None
    """None: the system's (`getaddrinfo` in a thread, as aiohttp does by default). Not closed here when given."""
    socket_factory: SocketFactoryType | None = None
    """Opens the socket of a connection attempt the guard let through; None: a plain socket."""

    @classmethod
    def allowing(cls, setting: bool | Sequence[str]) -> Network:
        """The network of a source's `allow_private_network` (true, false, or a list of networks)."""
        if isinstance(setting, bool):
            return cls(allow_private=setting)
        return cls(networks=tuple(ipaddress.ip_network(n, strict=False) for n in setting))

    def describe(self) -> str | None:
        """What this source may reach beyond the public internet, or None when nothing."""
        if self.allow_private:
            return "every loopback, link-local and private address"
        return ", ".join(str(n) for n in self.networks) or None

    def check(self, host: str, address: str) -> None:
        """`BlockedAddress` when `address` may not be reached from this source."""
        reason = None if self.allow_private else refusal(address)
        if reason is not None and not any(_within(address, n) for n in self.networks):
            raise BlockedAddress(host, address, reason)

    def session(self, *, timeout_seconds: float, headers: dict[str, str]) -> aiohttp.ClientSession:
        """An aiohttp session whose every connection is checked (call it inside the event loop).
        Proxies from the environment are not used: the address checked is the address reached."""
        resolver = _CheckedResolver(self, self.resolver)
        connector = aiohttp.TCPConnector(resolver=resolver, socket_factory=self._open)
        return aiohttp.ClientSession(
            connector=connector,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=timeout_seconds),
            trust_env=False,
        )

    def _open(self, addr_info: AddrInfoType) -> socket.socket:
        family, kind, proto, _, address = addr_info
        self.check(str(address[0]), str(address[0]))
        if self.socket_factory is not None:
            return self.socket_factory(addr_info)
        return socket.socket(family, kind, proto)


def _within(address: str, network: ipaddress.IPv4Network | ipaddress.IPv6Network) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.version == network.version and ip in network


class _CheckedResolver(AbstractResolver):
    """The resolver's answer, refused whole when one of its addresses may not be reached (a name
    that points inside at all is not a public site)."""

    def __init__(self, network: Network, inner: AbstractResolver | None) -> None:
        self._network = network
        self._owned = inner is None
        self._inner = inner if inner is not None else ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        for entry in found:
            self._network.check(host, entry["host"])
        return found

    async def close(self) -> None:
        if self._owned:
            await self._inner.close()


def origin(url: str) -> str:
    """`scheme://host[:port]` of `url`, lower-case, without a default port: what credentials are
    tied to and what "the same site" means."""
    parts = urlsplit(str(url))
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{scheme}://{host}" + ("" if port is None or port == _DEFAULT_PORTS.get(scheme) else f":{port}")


def redact(text: str) -> str:
    """`text` with the `user:password@` of every URL in it replaced by `***@`, for logs and errors."""
    return _USERINFO.sub(r"\1***@", text)
