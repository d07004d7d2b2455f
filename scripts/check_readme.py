#!/usr/bin/env python3
"""Fail when the README has drifted from the repository: the front door must stay true and short.

    .venv/bin/python scripts/check_readme.py [README.md]

Checked (tests/unit/test_check_readme.py runs it on the real README and on broken ones):

- length: at most `MAX_LINES` lines (a newcomer reads it in ten minutes; the rest is in docs/);
- links: every relative link leads to a file that exists, and an anchor (`docs/x.md#a-heading`) to
  a heading of that page, as GitHub makes anchors;
- commands: in the shell blocks and the code spans, every `candor ...` names a command the
  command line has (`candor audit answers`), with options that command takes; every `make X`
  names a target of the Makefile; every `scripts/...`, `benchmarks/...` or `sample/...` path
  exists.

With `--run` it then follows the README as a newcomer would, in a fresh home: scripts/follow_readme.py
says how, and which lines it skips (only those the README marks).

Needs the virtual environment (it builds the command line to read its commands), not the database.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 250
FENCE = re.compile(r"^(```|~~~)([^\n]*)\n(.*?)^\1", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
SPAN = re.compile(r"`([^`]+)`")
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
PATHS = re.compile(r"(?<![\w/.-])((?:scripts|benchmarks|sample|deploy|docs)/[\w./-]*\w)")
SHELLS = {"sh", "bash", "shell", "console", "", "text"}  # whose commands are checked (```text: a synopsis)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading's anchor on a Markdown page (a repeated heading gets `-1`, `-2`, ...)."""
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


def link_problems(readme: Path, text: str) -> list[str]:
    prose = SPAN.sub("", FENCE.sub("", text))  # code is not a link
    found = []
    for match in LINK.finditer(prose):
        target = match[1] or match[2]
        if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        destination = (readme.parent / path).resolve() if path else readme
        if not destination.exists():
            found.append(f"link {target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            found.append(f"link {target}: no heading with that anchor in {path or readme.name}")
    return found


def commands(text: str) -> list[str]:
    """Each command line the README shows: the lines of its shell blocks (comments cut, a line
    continued with a backslash joined) and its code spans."""
    lines: list[str] = []
    for match in FENCE.finditer(text):
        if match[2].strip() not in SHELLS:
            continue
        joined = match[3].replace("\\\n", " ")
        lines += [line.split(" # ", 1)[0].strip() for line in joined.splitlines()]
    lines += [" ".join(span.split()) for span in SPAN.findall(FENCE.sub("", text))]
    return [line for line in lines if line]


def make_targets(makefile: Path) -> set[str]:
    return set(re.findall(r"^([\w.-]+)\s*:(?!=)", makefile.read_text(encoding="utf-8"), re.MULTILINE))


def candor_problems(line: str, app: Any) -> list[str]:
    """`candor WORDS... OPTIONS...` against the command line: the command path, then the options."""
    bare = line.replace("[", " ").replace("]", " ").replace("|", " ")
    try:
        words = shlex.split(bare)
    except ValueError:  # an unbalanced quote in prose
        words = bare.split()
    start = next((i for i, word in enumerate(words) if word == "candor" or word.endswith("/bin/candor")), None)
    if start is None:  # `candor` inside a quoted argument
        return []
    command = app  # a click command (typer's own copy of click): a group has `commands`
    path = ["candor"]
    rest = words[start + 1 :]
    while hasattr(command, "commands") and rest and not rest[0].startswith("-"):
        sub = command.commands.get(rest[0])
        if sub is None:
            if rest[0].isupper() or rest[0] in ("COMMAND", "..."):  # a placeholder: `candor COMMAND --help`
                return []
            return [f"`{line}`: `{' '.join(path)}` has no command {rest[0]!r}"]
        command, path, rest = sub, [*path, rest[0]], rest[1:]
    known = {"--help"} | {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
    return [
        f"`{line}`: `{' '.join(path)}` has no option {option}"
        for option in dict.fromkeys(OPTION.findall(" ".join(rest)))
        if option not in known
    ]


def command_problems(text: str, repo: Path) -> list[str]:
    from typer.main import get_command

    from bot.cli import app

    cli = get_command(app)
    targets = make_targets(repo / "Makefile")
    found: list[str] = []
    for line in commands(text):
        words = line.split()
        if re.search(r"(?:^|\s)(?:\S*/bin/)?candor(?:\s|$)", line):  # not Slack's `/candor question`
            found += candor_problems(line, cli)
        if words and words[0] == "make":
            found += [
                f"`{line}`: the Makefile has no target {word!r}"
                for word in words[1:]
                if "=" not in word and not word.startswith("-") and word not in targets
            ]
        found += [f"`{line}`: no such file {path}" for path in PATHS.findall(line) if not (repo / path).exists()]
    return list(dict.fromkeys(found))


def problems(readme: Path, repo: Path = REPO) -> list[str]:
    text = readme.read_text(encoding="utf-8")
    found = []
    lines = len(text.splitlines())
    if lines > MAX_LINES:
        found.append(f"{lines} lines: at most {MAX_LINES} (move the detail to docs/)")
    return found + link_problems(readme, text) + command_problems(text, repo)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Check the README, and with --run follow it in a fresh home.")
    parser.add_argument("readme", nargs="?", type=Path, default=REPO / "README.md")
    parser.add_argument("--run", action="store_true", help="run its ```sh blocks in order (minutes)")
    parser.add_argument("--reuse-venv", action="store_true", help="keep .venv as it is (make -o .venv/bin/candor)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds one step may take (default 600)")
    args = parser.parse_args(argv)
    readme: Path = args.readme
    found = problems(readme.resolve())
    if not found and args.run:
        from follow_readme import follow  # the scripts folder is on the path when this runs as a script

        found = follow(readme.resolve(), reuse_venv=args.reuse_venv, timeout=args.timeout)
    for problem in found:
        print(f"{readme}: {problem}", file=sys.stderr)
    if not found:
        print(f"{readme}: {len(readme.read_text(encoding='utf-8').splitlines())} lines, links and commands hold")
        if args.run:
            print(f"{readme}: followed from a fresh home, every step did what it says")
    return 1 if found else 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))  # `bot.cli`, when run from another folder
    sys.exit(main(sys.argv[1:]))
