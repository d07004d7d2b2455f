"""The sources file (`CANDOR_SOURCES` or `candor sync --config`): which sources to sync, into which
knowledge base, with which credentials and permissions.

    sources:
      - name: help-centre            # unique; the sync's state is kept under it and its knowledge base
        kind: website
        kb: support                  # the knowledge base it fills (default: CANDOR_KB)
        access: []                   # groups that may read every page; none: public (required with credentials)
        start_urls: [https://help.example.com/]
        sitemap: https://help.example.com/sitemap.xml
        max_pages: 500
        requests_per_second: 2
        credentials:                 # environment-variable NAMES, never the secrets themselves
          authorization: HELP_CENTRE_AUTH
        # allow_private_network: true   # any kind: an internal site (or a list: [10.20.0.0/16])
      - name: wiki
        kind: confluence             # rag/ingest/sources/confluence.py
        kb: internal
        base_url: https://example.atlassian.net/wiki
        spaces: [ENG, HR]
        space_access: {HR: [staff]}  # unrestricted pages of HR: staff; of ENG: who Confluence lets read ENG
        permissions:                 # Confluence groups (name or id) and users (account id) → access groups
          groups: {hr-managers: [hr]}
        credentials: {email: CONFLUENCE_EMAIL, token: CONFLUENCE_TOKEN}
      - name: intranet
        kind: sharepoint             # rag/ingest/sources/sharepoint.py (and OneDrive)
        kb: internal
        sites: ["contoso.sharepoint.com:/sites/Finance"]
        permissions:                 # SharePoint/Entra groups, users and sharing links → access groups
          site_groups: {Finance Members: [finance]}
          organization: [staff]
        credentials: {tenant_id: SP_TENANT_ID, client_id: SP_CLIENT_ID, client_secret: SP_CLIENT_SECRET}
      - name: notion
        kind: notion                 # rag/ingest/sources/notion.py
        kb: internal
        access: [staff]              # required for notion (Notion's API does not say who reads a page); []: public
        roots: [59833787-2cf9-4fdf-8782-e53db20768a5]   # optional: only these pages/databases and below
        page_access: {1c2a6c4b9f4e4d1c8a7e3b5d2f0a9c11: [hr]}   # a subtree's groups (nearest wins)
        credentials: {token: NOTION_TOKEN}
      - name: drive
        kind: gdrive                 # rag/ingest/sources/gdrive.py
        kb: internal
        folders: [1AbCdEfGhIjKlMnOpQrStUvWxYz]   # folder ids, every depth
        drives: [0AbCdEfGhIjKlUk9PVA]            # shared drive ids
        permissions:                 # Drive readers → access groups; unmapped readers are left out
          groups: {hr-team@example.com: [hr]}
          domains: {example.com: [staff]}
          anyone: public             # a file anyone with the link can open is public (unset: adds no one)
        credentials: {service_account: GOOGLE_SERVICE_ACCOUNT_JSON}   # the key's JSON text

Every source's requests go through the network guard (rag/ingest/sources/guard.py): loopback,
link-local, private, multicast and unspecified addresses are refused, unless the source says
`allow_private_network: true`, or lists the internal networks it may reach (`[10.20.0.0/16]`);
then `candor sync` warns, naming the source and what it may reach, each time it starts it.

A value that looks like a secret written inline (a `token`, `password`, `secret`, `api_key`,
`authorization` key anywhere outside `credentials`, or a `credentials` value that is not a variable
name) is refused with the line to write instead.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rag.errors import SyncError
from rag.model.types import clean_text

KINDS = ("website", "confluence", "sharepoint", "gdrive", "notion")
"""The kinds of source Candor syncs (each a module of rag/ingest/sources/, picked in registry.py)."""
_ACCESS_REQUIRED = frozenset({"notion"})
"""Kinds whose source says nothing of who may read a document: `access` must be written down."""
_ACCESS_WITH_CREDENTIALS = frozenset({"website"})
"""Kinds whose `access` (default: public) must be written down when the source is read with
credentials: pages behind a login are not public by default."""

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_VARIABLE = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_SECRET_KEYS = frozenset({"token", "password", "secret", "api_key", "apikey", "authorization", "client_secret"})
_COMMON = frozenset({"name", "kind", "kb", "access", "credentials", "allow_private_network"})


@dataclass(frozen=True, slots=True)
class SourceConfig:
    name: str
    kind: str
    kb: str | None
    access: tuple[str, ...]
    credentials: Mapping[str, str]
    """Credential name → the environment variable that holds it (read at sync time)."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """The kind's own settings (a website's start URLs, sitemap, budget...)."""
    allow_private_network: bool | tuple[str, ...] = False
    """May reach every internal address (true) or these internal networks (an internal site); off
    unless written."""


def load_sources(path: Path) -> list[SourceConfig]:
    """Every source of the file, checked; `SyncError` names the first problem and where it is."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SyncError(f"cannot read the sources file {path}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise SyncError(f"the sources file {path} is not valid YAML: {exc}") from exc
    return parse_sources(raw, where=str(path))


def parse_sources(raw: object, *, where: str = "sources") -> list[SourceConfig]:
    entries = raw.get("sources") if isinstance(raw, dict) else raw
    if not isinstance(entries, list) or not entries:
        raise SyncError(f"{where}: expected `sources:` with a list of sources")
    found = [_source(entry, f"{where}: source {n}") for n, entry in enumerate(entries, 1)]
    names = [s.name for s in found]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise SyncError(f"{where}: source names must be unique; repeated: {', '.join(repeated)}")
    return found


def resolve_credentials(source: SourceConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """The credentials' values from the environment; `SyncError` names a variable that is unset."""
    values: dict[str, str] = {}
    for key, variable in source.credentials.items():
        value = environ.get(variable, "").strip()
        if not value:
            raise SyncError(f"source {source.name}: credential {key!r} reads ${variable}, which is not set")
        values[key] = value
    return values


def _source(entry: object, where: str) -> SourceConfig:
    if not isinstance(entry, dict):
        raise SyncError(f"{where}: expected a mapping with name, kind and the kind's settings")
    _refuse_inline_secrets(entry, where)
    name = clean_text(str(entry.get("name") or "")).strip()
    if not _NAME.match(name):
        raise SyncError(f"{where}: `name` must be 1-64 lower-case letters, digits, '.', '_' or '-' (got {name!r})")
    where = f"{where.rsplit(':', 1)[0]}: source {name!r}"
    kind = str(entry.get("kind") or "")
    if kind not in KINDS:
        raise SyncError(f"{where}: kind {kind!r} is not one Candor syncs yet (known: {', '.join(KINDS)})")
    if kind in _ACCESS_REQUIRED and entry.get("access") is None:
        raise SyncError(
            f"{where}: a {kind} source needs an explicit `access:` ({kind} does not say who may read a page): "
            "the groups that may read its pages, or [] to make them public"
        )
    kb = entry.get("kb")
    if kb is not None and (not isinstance(kb, str) or not kb.strip()):
        raise SyncError(f"{where}: `kb` must be a knowledge base name")
    private = _private_networks(entry.get("allow_private_network", False), where)
    credentials = _credentials(entry.get("credentials", {}), where)
    if kind in _ACCESS_WITH_CREDENTIALS and credentials and entry.get("access") is None:
        raise SyncError(
            f"{where}: a {kind} source with `credentials` needs an explicit `access:` (a site that asks who "
            "you are is rarely for everyone): the groups that may read its pages, or [] to make them public"
        )
    return SourceConfig(
        name=name,
        kind=kind,
        kb=kb.strip() if isinstance(kb, str) else None,
        access=_access(entry.get("access", []), where),
        credentials=credentials,
        options={k: v for k, v in entry.items() if k not in _COMMON},
        allow_private_network=private,
    )


def _private_networks(value: object, where: str) -> bool | tuple[str, ...]:
    if isinstance(value, bool):
        return value
    wrong = f"{where}: `allow_private_network` is true, false, or a list of networks like [10.20.0.0/16]"
    if not isinstance(value, list) or not value:
        raise SyncError(wrong)
    try:
        return tuple(str(ipaddress.ip_network(str(n), strict=False)) for n in value)
    except ValueError as exc:
        raise SyncError(f"{wrong} ({exc})") from exc


def _access(value: object, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(g, str) and clean_text(g).strip() for g in value):
        raise SyncError(f"{where}: `access` must be a list of access group names (none: public)")
    return tuple(sorted({clean_text(g).strip() for g in value}))


def _credentials(value: object, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise SyncError(f"{where}: `credentials` maps each credential to an environment variable's name")
    found: dict[str, str] = {}
    for key, variable in value.items():
        if not isinstance(variable, str) or not _VARIABLE.match(variable):
            raise SyncError(
                f"{where}: credentials.{key} must name an environment variable (like HELP_CENTRE_TOKEN), "
                "not hold the secret: put the secret in the environment and write its variable's name here"
            )
        found[str(key)] = variable
    return found


def _refuse_inline_secrets(entry: Mapping[str, Any], where: str) -> None:
    for key, value in entry.items():
        if key == "credentials":
            continue
        if str(key).lower() in _SECRET_KEYS:
            raise SyncError(
                f"{where}: {key!r} looks like a secret written inline; secrets are never kept in the sources "
                f"file: put it in an environment variable and write `credentials: {{{key}: VARIABLE_NAME}}`"
            )
        _refuse_nested_secrets(value, where)


def _refuse_nested_secrets(value: object, where: str) -> None:
    """Mappings inside the entry, and inside its lists (a list of sites, each with its settings)."""
    if isinstance(value, dict):
        _refuse_inline_secrets(value, where)
    elif isinstance(value, list):
        for element in value:
            _refuse_nested_secrets(element, where)
