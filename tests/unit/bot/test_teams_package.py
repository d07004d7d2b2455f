"""`bot.teams.package`: the Teams app zip, read back with zipfile, json, struct and zlib. No Teams, no mocks."""

from __future__ import annotations

import io
import json
import re
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.teams.package import (
    BOT_SCOPES,
    COLOR_ICON_FILE,
    COLOR_ICON_SIZE,
    COMMAND_DESCRIPTION_MAX,
    COMMAND_TITLE_MAX,
    DESCRIPTION_FULL_MAX,
    DESCRIPTION_SHORT_MAX,
    DEVELOPER_NAME_MAX,
    MANIFEST_FILE,
    MANIFEST_VERSION,
    NAME_FULL_MAX,
    NAME_SHORT_MAX,
    OUTLINE_ICON_FILE,
    OUTLINE_ICON_SIZE,
    SCHEMA_URL,
    VALID_DOMAINS_MAX,
    TeamsApp,
    build_package,
    color_icon,
    manifest,
    normalise_domain,
    outline_icon,
    write_package,
)

APP_ID = "0f3c2b1a-9d8e-4f7a-b6c5-d4e3f2a1b0c9"
GUID = re.compile(r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")


def _app(**changes: Any) -> TeamsApp:
    return TeamsApp(app_id=APP_ID, **changes)


def _unzip(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.testzip() is None
        return {name: archive.read(name) for name in archive.namelist()}


# -- a small PNG reader: enough to check what Teams checks ---------------------------------------


@dataclass(frozen=True)
class Image:
    width: int
    height: int
    color_type: int
    pixels: list[tuple[int, ...]]  # row-major, one tuple of channel values per pixel


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def _read_png(data: bytes) -> Image:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    offset, chunks = 8, []
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        body = data[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", data[offset + 8 + length : offset + 12 + length])
        assert crc == zlib.crc32(kind + body), f"bad CRC in {kind!r}"
        chunks.append((kind, body))
        offset += 12 + length
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    width, height, depth, color_type, compression, filtering, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, compression, filtering, interlace) == (8, 0, 0, 0)
    channels = {2: 3, 6: 4}[color_type]  # RGB or RGBA
    raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    stride = width * channels
    assert len(raw) == height * (stride + 1)
    previous = bytearray(stride)
    pixels: list[tuple[int, ...]] = []
    for y in range(height):
        kind, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = row[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            predictor = [0, left, up, (left + up) // 2, _paeth(left, up, corner)][kind]
            row[i] = (row[i] + predictor) & 0xFF
        pixels.extend(tuple(row[x * channels : (x + 1) * channels]) for x in range(width))
        previous = row
    return Image(width, height, color_type, pixels)


# -- the zip -------------------------------------------------------------------------------------


def test_the_zip_holds_exactly_the_three_files_at_its_root() -> None:
    files = _unzip(build_package(_app()))
    assert sorted(files) == sorted([MANIFEST_FILE, COLOR_ICON_FILE, OUTLINE_ICON_FILE])
    assert all("/" not in name for name in files)


def test_the_build_is_deterministic() -> None:
    assert build_package(_app(domains=("candor.example.com",))) == build_package(_app(domains=("candor.example.com",)))
    assert build_package(_app()) != build_package(_app(version="1.0.1"))


def test_write_package_creates_folders_and_writes_the_zip(tmp_path: Path) -> None:
    target = tmp_path / "out" / "nested" / "candor-teams.zip"
    written = write_package(_app(), target)
    assert written == target
    assert target.read_bytes() == build_package(_app())


# -- manifest.json -------------------------------------------------------------------------------


def test_manifest_json_parses_and_names_the_schema_and_the_bot() -> None:
    content = json.loads(_unzip(build_package(_app()))[MANIFEST_FILE].decode("utf-8"))
    assert content == manifest(_app())
    assert content["$schema"] == SCHEMA_URL
    assert SCHEMA_URL.endswith(f"/json-schemas/teams/v{MANIFEST_VERSION}/MicrosoftTeams.schema.json")
    assert SCHEMA_URL.startswith("https://developer.microsoft.com/")
    assert content["manifestVersion"] == MANIFEST_VERSION == "1.22"
    assert content["version"] == "1.0.0"
    assert content["id"] == APP_ID
    [bot] = content["bots"]
    assert bot["botId"] == APP_ID
    assert set(bot["scopes"]) == {"personal", "team", "groupChat"}
    assert bot["supportsFiles"] is False and bot["isNotificationOnly"] is False
    assert content["icons"] == {"color": COLOR_ICON_FILE, "outline": OUTLINE_ICON_FILE}
    assert "webApplicationInfo" not in content


def test_every_scope_has_its_own_command_list_with_help_and_ask() -> None:
    [bot] = manifest(_app())["bots"]
    assert [command_list["scopes"] for command_list in bot["commandLists"]] == [[scope] for scope in BOT_SCOPES]
    for command_list in bot["commandLists"]:
        titles = [command["title"] for command in command_list["commands"]]
        assert titles == ["help", "ask"]
        ask = command_list["commands"][1]
        assert ask["description"] == "Ask a question about your documents"


def test_required_fields_of_the_schema_are_present() -> None:
    content = manifest(_app())
    for field in ("manifestVersion", "version", "id", "developer", "name", "description", "icons", "accentColor"):
        assert field in content, field
    assert set(content["developer"]) == {"name", "websiteUrl", "privacyUrl", "termsOfUseUrl"}
    assert all(url.startswith("https://") for key, url in content["developer"].items() if key != "name")
    assert re.fullmatch(r"#[0-9a-fA-F]{6}", content["accentColor"])
    assert GUID.match(content["id"]) and GUID.match(content["bots"][0]["botId"])


def test_every_length_limit_holds() -> None:
    content = manifest(_app())
    assert len(content["name"]["short"]) <= NAME_SHORT_MAX == 30
    assert len(content["name"]["full"]) <= NAME_FULL_MAX == 100
    assert content["name"]["full"] != content["name"]["short"]
    assert len(content["description"]["short"]) <= DESCRIPTION_SHORT_MAX == 80
    assert len(content["description"]["full"]) <= DESCRIPTION_FULL_MAX == 4000
    assert content["description"]["short"] not in content["description"]["full"]
    assert len(content["developer"]["name"]) <= DEVELOPER_NAME_MAX == 32
    [bot] = content["bots"]
    assert len(bot["scopes"]) <= 3 and len(bot["commandLists"]) <= 3
    for command_list in bot["commandLists"]:
        assert len(command_list["commands"]) <= 10
        for command in command_list["commands"]:
            assert 0 < len(command["title"]) <= COMMAND_TITLE_MAX == 32
            assert 0 < len(command["description"]) <= COMMAND_DESCRIPTION_MAX == 128
    assert len(content["validDomains"]) <= VALID_DOMAINS_MAX == 16


def test_full_description_says_what_candor_does() -> None:
    full = manifest(_app())["description"]["full"]
    for promise in ("cited", "disagree", "I don't know", "👍", "👎"):
        assert promise in full, promise


def test_a_long_name_still_gives_a_full_name_within_limits() -> None:
    content = manifest(_app(name="N" * NAME_SHORT_MAX))
    assert len(content["name"]["full"]) <= NAME_FULL_MAX
    assert content["name"]["full"] != content["name"]["short"]


# -- validDomains --------------------------------------------------------------------------------


def test_valid_domains_are_normalised_to_host_names() -> None:
    app = _app(
        domains=(
            "https://Candor.Example.com/api/messages",
            "candor.example.com",
            "docs.example.com:8443/path",
            "*.example.org",
            "http://wiki.example.net.",
        )
    )
    assert app.domains == ("candor.example.com", "docs.example.com", "*.example.org", "wiki.example.net")
    assert manifest(app)["validDomains"] == list(app.domains)


def test_no_domains_gives_an_empty_list() -> None:
    assert manifest(_app())["validDomains"] == []


def test_internationalised_host_names_are_punycoded() -> None:
    assert normalise_domain("bücher.example") == "xn--bcher-kva.example"


@pytest.mark.parametrize(
    "domain",
    [
        "*",
        "*.com",
        "*.",
        "localhost",
        "foo.*.example.com",
        "exa mple.com",
        "-bad.example.com",
        "a..example.com",
        "10.0.0.1",
        "",
    ],
)
def test_invalid_domains_are_refused_naming_the_field(domain: str) -> None:
    with pytest.raises(ValueError, match="domains"):
        _app(domains=(domain,))


def test_more_than_sixteen_domains_are_refused() -> None:
    with pytest.raises(ValueError, match="domains"):
        _app(domains=tuple(f"host{i}.example.com" for i in range(VALID_DOMAINS_MAX + 1)))


# -- validation of the other fields --------------------------------------------------------------


@pytest.mark.parametrize(
    "app_id", ["", "not-a-guid", "0f3c2b1a9d8e4f7ab6c5d4e3f2a1b0c9", "{0f3c2b1a-9d8e-4f7a-b6c5-d4e3f2a1b0c9}"]
)
def test_an_app_id_that_is_not_a_guid_is_refused(app_id: str) -> None:
    with pytest.raises(ValueError, match="app_id"):
        TeamsApp(app_id=app_id)


def test_surrounding_whitespace_in_the_app_id_is_dropped() -> None:
    assert TeamsApp(app_id=f" {APP_ID}\n").app_id == APP_ID


@pytest.mark.parametrize("version", ["1.0", "1", "v1.0.0", "1.0.0-beta", "01.0.0", "1.0.0.0", ""])
def test_a_version_that_is_not_semver_is_refused(version: str) -> None:
    with pytest.raises(ValueError, match="version"):
        _app(version=version)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "N" * (NAME_SHORT_MAX + 1)),
        ("name", " "),
        ("developer_name", "D" * (DEVELOPER_NAME_MAX + 1)),
        ("short_description", "S" * (DESCRIPTION_SHORT_MAX + 1)),
        ("full_description", "F" * (DESCRIPTION_FULL_MAX + 1)),
        ("website_url", "http://example.com"),
        ("privacy_url", "example.com/privacy"),
        ("terms_url", "https://"),
        ("accent_color", "1F3A5F"),
        ("accent_color", "#1F3A5"),
    ],
)
def test_out_of_limits_fields_are_refused_naming_the_field(field: str, value: str) -> None:
    with pytest.raises(ValueError, match=field):
        _app(**{field: value})


def test_a_full_description_repeating_the_short_one_is_refused() -> None:
    short = "Answers from your documents."
    with pytest.raises(ValueError, match="full_description"):
        _app(short_description=short, full_description=f"{short} And more.")


# -- icons ---------------------------------------------------------------------------------------


def test_the_color_icon_is_192_square_full_colour_and_opaque() -> None:
    image = _read_png(_unzip(build_package(_app()))[COLOR_ICON_FILE])
    assert (image.width, image.height) == (COLOR_ICON_SIZE, COLOR_ICON_SIZE) == (192, 192)
    assert image.color_type in (2, 6)
    colours = {pixel[:3] for pixel in image.pixels}
    assert len(colours) > 2, "the color icon is a flat colour"
    assert (0x1F, 0x3A, 0x5F) in colours and (255, 255, 255) in colours
    if image.color_type == 6:
        assert all(pixel[3] == 255 for pixel in image.pixels), "the background must be a solid square"


def test_the_color_icon_keeps_48_pixels_of_padding_around_its_symbol() -> None:
    image = _read_png(color_icon())
    background = image.pixels[0]
    for y in range(image.height):
        for x in range(image.width):
            if not (48 <= x < 144 and 48 <= y < 144):
                assert image.pixels[y * image.width + x] == background, (x, y)


def test_the_color_icon_uses_the_accent_colour() -> None:
    packaged = _unzip(build_package(_app(accent_color="#AA0000")))[COLOR_ICON_FILE]
    assert packaged == color_icon("#AA0000")
    assert _read_png(packaged).pixels[0][:3] == (0xAA, 0, 0)


def test_the_outline_icon_is_32_square_white_on_transparent() -> None:
    image = _read_png(_unzip(build_package(_app()))[OUTLINE_ICON_FILE])
    assert (image.width, image.height) == (OUTLINE_ICON_SIZE, OUTLINE_ICON_SIZE) == (32, 32)
    assert image.color_type == 6, "the outline icon needs an alpha channel"
    for red, green, blue, alpha in image.pixels:
        assert alpha == 0 or (red, green, blue) == (255, 255, 255), (red, green, blue, alpha)
    assert any(alpha == 255 for *_, alpha in image.pixels), "the outline icon is empty"
    assert any(alpha == 0 for *_, alpha in image.pixels), "the outline icon has no transparent background"


def test_the_outline_icon_has_no_padding() -> None:
    image = _read_png(outline_icon())
    drawn = [(i % image.width, i // image.width) for i, pixel in enumerate(image.pixels) if pixel[3] > 0]
    xs, ys = {x for x, _ in drawn}, {y for _, y in drawn}
    assert min(xs) == 0 and min(ys) == 0 and max(ys) == image.height - 1
