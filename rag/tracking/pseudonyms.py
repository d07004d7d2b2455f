"""Asker ids as keyed hashes: what the operational record stores when CANDOR_STORE_ASKERS=keyed.

`keyed(key)` maps an id to ``k:`` and the first 16 hex characters of its HMAC-SHA256 under the
key (CANDOR_EXPORT_KEY, else the key file `<CANDOR_HOME>/export.key`, made on first use): the
same person gets the same value everywhere (votes still replace their own earlier vote, a report
still counts distinct askers), and the id cannot be read back without the key. The access policy
and the chat adapters see the platform's ids as before; only what is written to Postgres changes.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable

Pseudonym = Callable[[str | None], str | None]
PREFIX = "k:"
LENGTH = 16


def plain(user: str | None) -> str | None:
    return user


def keyed(key: bytes) -> Pseudonym:
    if len(key) < 16:
        raise ValueError("a pseudonym key has at least 16 bytes")

    def pseudonym(user: str | None) -> str | None:
        if user is None or user.startswith(PREFIX):
            return user
        return PREFIX + hmac.new(key, user.encode("utf-8"), hashlib.sha256).hexdigest()[:LENGTH]

    return pseudonym
