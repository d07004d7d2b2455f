"""The front door holds: the README's two commands are the ones CI runs, and every link in the README
and docs/ leads to a file and a heading that exist (pages move; links must follow). The README's
length and commands: scripts/check_readme.py (tests/unit/test_check_readme.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        anchor = slug(match[1])
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        found.add(anchor if count == 0 else f"{anchor}-{count}")
    return found


def links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    return LINK.findall(text)


def test_slugs_follow_github() -> None:
    assert slug("Synced sources: `candor sync`") == "synced-sources-candor-sync"
    assert slug("Which stage is running (`rag/pipeline/progress.py`)") == "which-stage-is-running-ragpipelineprogresspy"
    assert (
        slug("Public interface (keep it stable; extend it freely)")
        == "public-interface-keep-it-stable-extend-it-freely"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_link_leads_somewhere(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{target}: no heading with that anchor in {destination.relative_to(REPO)}")
    assert broken == []


def test_the_readmes_two_commands_are_what_ci_runs() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^(make \w+)", quick_start.split("```sh", 1)[1].split("```", 1)[0], re.MULTILINE)
    assert commands == ["make demo", "make test"]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^make test$", ci, re.MULTILINE)
    assert re.search(r"^CANDOR_HOME=\S+ make demo ", ci, re.MULTILINE)
    assert "apt-get" not in ci  # the machine is prepared by `make test` itself, as a new user's would be


def test_every_doc_is_reachable_from_the_readme() -> None:
    readme_links = {target.partition("#")[0] for target in links(REPO / "README.md")}
    for page in PAGES[1:]:
        assert f"docs/{page.name}" in readme_links, page.name


def test_the_benchmarks_page_shows_todays_figures_in_one_table() -> None:
    """docs/benchmarks.md: one table, one row per measure, each with its date, commit, machine and
    command; what changed between versions is in CHANGELOG.md, not here."""
    page = FENCE.sub("", (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8"))
    tables = re.findall(r"(?:^\|.*\|\n)+", page, re.MULTILINE)
    assert len(tables) == 1
    header, _rule, *rows = tables[0].splitlines()
    columns = [cell.strip() for cell in header.strip("|").split("|")]
    assert columns == ["measure", "today", "target", "date", "commit", "machine", "command"]
    measures = [row.strip("|").split(" | ")[0].strip() for row in rows]
    assert len(measures) == len(set(measures)) and len(rows) > 10
    assert all(row.count(" | ") == len(columns) - 1 for row in rows), "a cell holds a stray '|'"
    assert not re.search(r"^#+ .*history", page, re.IGNORECASE | re.MULTILINE)
