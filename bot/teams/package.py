"""The Microsoft Teams app package: the zip a Teams admin uploads (manifest.json, color.png, outline.png).

Everything is built from code, so the package always matches the bot and two builds of the same
`TeamsApp` give the same bytes. The manifest follows app manifest schema v1.22
(https://learn.microsoft.com/microsoftteams/platform/resources/schema/manifest-schema); the icons follow
https://learn.microsoft.com/microsoftteams/platform/concepts/build-and-test/apps-package:

- color icon: 192x192, a 96x96 symbol with 48 px of padding on a solid square background (Teams rounds
  the corners itself, so the square is not rounded here);
- outline icon: 32x32, white (255, 255, 255) on a fully transparent background, no padding.

The PNGs are written with zlib and struct: no imaging library is needed.
"""

from __future__ import annotations

import io
import json
import math
import re
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

MANIFEST_VERSION = "1.22"
SCHEMA_URL = f"https://developer.microsoft.com/json-schemas/teams/v{MANIFEST_VERSION}/MicrosoftTeams.schema.json"
MANIFEST_FILE = "manifest.json"
COLOR_ICON_FILE = "color.png"
OUTLINE_ICON_FILE = "outline.png"
COLOR_ICON_SIZE = 192
OUTLINE_ICON_SIZE = 32
BOT_SCOPES = ("personal", "team", "groupChat")

# Limits stated by the schema. For command title and description the older, stricter limits (32 and
# 128; v1.22 allows 128 and 4000) are kept so the package is valid under every recent schema version.
NAME_SHORT_MAX = 30
NAME_FULL_MAX = 100
DESCRIPTION_SHORT_MAX = 80
DESCRIPTION_FULL_MAX = 4000
DEVELOPER_NAME_MAX = 32
URL_MAX = 2048
VALID_DOMAINS_MAX = 16
COMMANDS_MAX = 10
COMMAND_TITLE_MAX = 32
COMMAND_DESCRIPTION_MAX = 128

DEFAULT_ACCENT = "#1F3A5F"
DEFAULT_FULL_DESCRIPTION = (
    "Candor answers questions from your organisation's own documents. Every claim in an answer is cited "
    "with a number pointing at its source, listed under the answer with a quote of the passage. When "
    "sources disagree, Candor says so, shows both values and their sources, and which one it prefers and "
    'why. When the documents do not cover a question, Candor says "I don\'t know" instead of guessing. '
    "Ask in a personal chat, or mention Candor in a channel or group chat; it only reads documents you "
    "are allowed to see. Under every answer, 👍 or 👎 tells the people who keep the documents whether it helped."
)

_GUID = re.compile(r"^[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")
_SEMVER = re.compile(r"^(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)$")  # the schema's MAJOR.MINOR.PATCH
_HEX_COLOR = re.compile(r"^#[0-9a-fA-F]{6}$")
_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip can hold: fixed, so builds are byte-identical


@dataclass(frozen=True, slots=True)
class Command:
    """A command Teams suggests in the compose box; picking it inserts the title."""

    title: str
    description: str


COMMANDS = (
    Command("help", "What Candor can do and how to ask it"),
    Command("ask", "Ask a question about your documents"),
)


@dataclass(frozen=True, slots=True)
class TeamsApp:
    """What the package says about the app; checked on construction (ValueError names the field)."""

    app_id: str
    name: str = "Candor"
    version: str = "1.0.0"
    developer_name: str = "Candor"
    website_url: str = "https://example.com/candor"
    privacy_url: str = "https://example.com/candor/privacy"
    terms_url: str = "https://example.com/candor/terms"
    domains: tuple[str, ...] = ()
    accent_color: str = DEFAULT_ACCENT
    short_description: str = "Answers from your documents, with a source for every claim."
    full_description: str = DEFAULT_FULL_DESCRIPTION

    def __post_init__(self) -> None:
        app_id = self.app_id.strip()
        if not _GUID.match(app_id):
            raise ValueError(
                f"app_id must be the bot's Microsoft App ID, a GUID (8-4-4-4-12 hex digits); got {self.app_id!r}"
            )
        if not _SEMVER.match(self.version):
            raise ValueError(f"version must be MAJOR.MINOR.PATCH (semver, e.g. 1.0.0); got {self.version!r}")
        if not _HEX_COLOR.match(self.accent_color):
            raise ValueError(f"accent_color must be an HTML colour like #1F3A5F; got {self.accent_color!r}")
        _check_text("name", self.name, NAME_SHORT_MAX)
        _check_text("developer_name", self.developer_name, DEVELOPER_NAME_MAX)
        _check_text("short_description", self.short_description, DESCRIPTION_SHORT_MAX)
        _check_text("full_description", self.full_description, DESCRIPTION_FULL_MAX)
        if self.short_description.strip() in self.full_description:
            raise ValueError("full_description must not repeat short_description (Teams store rule)")
        for field, url in (
            ("website_url", self.website_url),
            ("privacy_url", self.privacy_url),
            ("terms_url", self.terms_url),
        ):
            _check_https(field, url)
        domains = tuple(dict.fromkeys(normalise_domain(domain) for domain in self.domains))
        if len(domains) > VALID_DOMAINS_MAX:
            raise ValueError(f"domains: at most {VALID_DOMAINS_MAX} valid domains; got {len(domains)}")
        object.__setattr__(self, "app_id", app_id)
        object.__setattr__(self, "domains", domains)


def _check_text(field: str, value: str, limit: int) -> None:
    if not value.strip():
        raise ValueError(f"{field} must not be empty")
    if len(value) > limit:
        raise ValueError(f"{field} must be at most {limit} characters; got {len(value)}")


def _check_https(field: str, url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise ValueError(f"{field} must be an https:// URL; got {url!r}")
    if len(url) > URL_MAX:
        raise ValueError(f"{field} must be at most {URL_MAX} characters")


def normalise_domain(raw: str) -> str:
    """A host name for validDomains: scheme, port, path and case dropped; `*.` allowed only above a registered name."""
    text = raw.strip()
    host = (urlsplit(text).hostname or "") if "://" in text else text.split("/", 1)[0].rsplit(":", 1)[0]
    host = host.strip().rstrip(".").lower()
    labels = host.split(".")
    wildcard = labels[0] == "*"
    named = labels[1:] if wildcard else labels
    if wildcard and len(named) < 2:
        raise ValueError(f"domains: a wildcard must sit above a registered name (*.example.com), not {raw!r}")
    if len(named) < 2:
        raise ValueError(f"domains: {raw!r} is not a full host name (like candor.example.com)")
    try:
        ascii_labels = [label.encode("idna").decode("ascii") for label in named]
    except UnicodeError as exc:
        raise ValueError(f"domains: {raw!r} is not a valid host name") from exc
    if not all(_LABEL.match(label) for label in ascii_labels) or ascii_labels[-1].isdigit():
        raise ValueError(
            f"domains: {raw!r} is not a valid host name (letters, digits, hyphens; wildcards only as the first label)"
        )
    return ".".join(["*", *ascii_labels] if wildcard else ascii_labels)


def manifest(app: TeamsApp) -> dict[str, Any]:
    """The manifest.json content: one conversational bot in personal chats, teams and group chats."""
    commands = [{"title": command.title, "description": command.description} for command in COMMANDS]
    content: dict[str, Any] = {
        "$schema": SCHEMA_URL,
        "manifestVersion": MANIFEST_VERSION,
        "version": app.version,
        "id": app.app_id,  # a bot-only app may reuse the bot's Microsoft App ID as its app id
        "developer": {
            "name": app.developer_name,
            "websiteUrl": app.website_url,
            "privacyUrl": app.privacy_url,
            "termsOfUseUrl": app.terms_url,
        },
        "name": {"short": app.name, "full": _full_name(app.name)},
        "description": {"short": app.short_description, "full": app.full_description},
        "icons": {"color": COLOR_ICON_FILE, "outline": OUTLINE_ICON_FILE},
        "accentColor": app.accent_color,
        "bots": [
            {
                "botId": app.app_id,
                "scopes": list(BOT_SCOPES),
                "supportsFiles": False,
                "isNotificationOnly": False,
                # The schema asks for a separate command list per scope.
                "commandLists": [{"scopes": [scope], "commands": commands} for scope in BOT_SCOPES],
            }
        ],
        "validDomains": list(app.domains),
    }
    return content


def _full_name(short: str) -> str:
    """The full name must differ from the short one (store rule) and fit in 100 characters."""
    return f"{short}: answers from your documents"[:NAME_FULL_MAX]


# -- icons ---------------------------------------------------------------------------------------

Pixel = tuple[int, int, int, int]


def _png(width: int, height: int, pixel: Callable[[int, int], Pixel]) -> bytes:
    """An 8-bit RGBA PNG (colour type 6), filter 0 on every row, compressed with zlib level 9."""
    rows = bytearray()
    for y in range(height):
        rows.append(0)
        for x in range(width):
            rows.extend(pixel(x, y))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(bytes(rows), 9))
        + chunk(b"IEND", b"")
    )


def _c_coverage(x: int, y: int, centre: float, outer: float, inner: float, samples: int = 4) -> float:
    """How much of pixel (x, y) a "C" covers: a ring with its opening towards the right (about 90 degrees)."""
    hits = 0
    for sy in range(samples):
        for sx in range(samples):
            dx = x + (sx + 0.5) / samples - centre
            dy = y + (sy + 0.5) / samples - centre
            radius = math.hypot(dx, dy)
            opening = dx > 0 and abs(math.atan2(dy, dx)) < math.pi / 4
            hits += inner <= radius <= outer and not opening
    return hits / (samples * samples)


def _rgb(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


@lru_cache(maxsize=8)
def color_icon(accent: str = DEFAULT_ACCENT) -> bytes:
    """192x192 PNG: a white "C" (the 96x96 symbol, 48 px padding) on a solid square of the accent colour."""
    if not _HEX_COLOR.match(accent):
        raise ValueError(f"accent_color must be an HTML colour like #1F3A5F; got {accent!r}")
    red, green, blue = _rgb(accent)
    centre = COLOR_ICON_SIZE / 2

    def pixel(x: int, y: int) -> Pixel:
        white = _c_coverage(x, y, centre, outer=48, inner=30, samples=3)
        return (
            round(red + (255 - red) * white),
            round(green + (255 - green) * white),
            round(blue + (255 - blue) * white),
            255,
        )

    return _png(COLOR_ICON_SIZE, COLOR_ICON_SIZE, pixel)


@lru_cache(maxsize=1)
def outline_icon() -> bytes:
    """32x32 PNG: the same "C" in white on full transparency, filling the icon (no padding)."""
    centre = OUTLINE_ICON_SIZE / 2

    def pixel(x: int, y: int) -> Pixel:
        alpha = round(255 * _c_coverage(x, y, centre, outer=16, inner=10))
        return (255, 255, 255, alpha) if alpha else (0, 0, 0, 0)

    return _png(OUTLINE_ICON_SIZE, OUTLINE_ICON_SIZE, pixel)


# -- the zip -------------------------------------------------------------------------------------


def build_package(app: TeamsApp) -> bytes:
    """The zip to upload: the three files at its root, fixed timestamps and modes, so the bytes repeat."""
    files = {
        MANIFEST_FILE: (json.dumps(manifest(app), indent=2, ensure_ascii=False) + "\n").encode("utf-8"),
        COLOR_ICON_FILE: color_icon(app.accent_color),
        OUTLINE_ICON_FILE: outline_icon(),
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # unix, whatever builds it
            info.external_attr = 0o644 << 16
            archive.writestr(info, data, compresslevel=9)
    return buffer.getvalue()


def write_package(app: TeamsApp, path: Path) -> Path:
    """Write the package to `path` (parent folders created) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(build_package(app))
    return path
