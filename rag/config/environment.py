"""Reading the environment: the helpers the settings' sections share (an alias per variable, a list
written with commas or spaces, whether a URL is on this machine), the variables set for model
libraries, and the credentials a sources file names. Nothing outside `rag.config` reads
`os.environ`."""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from pydantic import AliasChoices


def _env(name: str, *more: str) -> AliasChoices:
    return AliasChoices(name, *more)


def _list_items(value: str | None) -> list[str]:
    """A list setting written with commas or spaces between its items."""
    return [item for item in re.split(r"[,\s]+", value or "") if item]


def _local_host(url: str) -> bool:
    """A URL whose host is this machine or a private network (`127.0.0.1`, `localhost`, `10.0.0.5`,
    `ollama.local`, a compose service name without dots)."""
    host = (urlsplit(url).hostname or "").lower()
    if not host:
        return False
    if host == "localhost" or host.endswith((".local", ".localhost", ".internal")) or "." not in host:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def offline_model_environment() -> None:
    """Before a model library is imported: no model hub, no tokenizer thread pool fighting ours.

    Values already set by the operator win (so a team can point a custom model at a hub).
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def model_library_environment(*, allow_hub: bool) -> bool:
    """Before a model library is imported: `offline_model_environment` unless the hub is allowed.
    True when HF_HUB_OFFLINE keeps the hub out of reach all the same (for error messages)."""
    if allow_hub:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    else:
        offline_model_environment()
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def secrets_by_name() -> Mapping[str, str]:
    """The environment, for the credentials a sources file names by variable (`candor sync`): read
    here, when a source is synced, so that a rotated token needs no restart and no other module reads
    the environment. The values are never logged."""
    return os.environ
