"""`candor answers ...`: curated answers, an expert's answer kept as a document (`rag.loop.curated`).
Thin: parse, call, print.

`answers_app` is registered on the main app by `bot/cli/commands.py`. Curated answers saved from a
Slack or Teams hand-off show up here too; a gap from `candor gaps` is filled with `add`.
"""

from __future__ import annotations

import getpass
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.markup import escape

from bot.cli.common import AccessOption, KbOption, err, out, run

if TYPE_CHECKING:
    from rag import Candor
    from rag.model.loop import CuratedAnswer

answers_app = typer.Typer(
    help="Curated answers: experts' answers kept as documents, searched and cited like any other.",
    no_args_is_help=True,
)

IdArgument = Annotated[int, typer.Argument(help="The curated answer's number (candor answers list).")]
ExpiresOption = Annotated[
    str | None,
    typer.Option("--expires", help="When it stops answering: in 90d, 12w, or an ISO date (2027-06-30)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="JSON instead of text.")]


@answers_app.command("list")
def list_answers(
    every: Annotated[bool, typer.Option("--all", help="Include expired ones.")] = False,
    as_json: JsonOption = False,
) -> None:
    """The curated answers, oldest first."""

    async def work(candor: Candor) -> list[CuratedAnswer]:
        return await candor.loop.curated.find(include_expired=every)

    found = run(work, check_embedder=False)
    if as_json:
        sys.stdout.write(json.dumps([c.as_json() for c in found], ensure_ascii=False, indent=2) + "\n")
        return
    if not found:
        out.print("No curated answers yet." if not every else "No curated answers.", highlight=False)
        return
    now = datetime.now(UTC)
    for curated in found:
        out.print(_line(curated, now), markup=False, highlight=False)


@answers_app.command("show")
def show(curated_id: IdArgument, as_json: JsonOption = False) -> None:
    """One curated answer in full."""

    async def work(candor: Candor) -> CuratedAnswer:
        return await candor.loop.curated.get(curated_id)

    curated = run(work, check_embedder=False)
    _print(curated, as_json)


@answers_app.command("add")
def add(
    question: Annotated[str, typer.Option("--question", help="The question it answers, as people ask it.")],
    answer: Annotated[
        str | None, typer.Option("--answer", help="The answer (or --answer-file; '-' reads stdin).")
    ] = None,
    answer_file: Annotated[Path | None, typer.Option("--answer-file", help="Read the answer from FILE.")] = None,
    author: Annotated[
        str | None, typer.Option("--author", help="Who answered, as citations show it (default: your login).")
    ] = None,
    kb: KbOption = None,
    access: AccessOption = None,
    expires: ExpiresOption = None,
    as_json: JsonOption = False,
) -> None:
    """Keep an answer: it is searched, gated and cited ("answered by AUTHOR on DATE") from now on."""
    from rag.model.loop import CuratedDraft

    text = _answer_text(answer, answer_file)
    name = author or getpass.getuser()
    draft = CuratedDraft(
        question=question,
        answer=text,
        author=name,
        author_name=name,
        access_groups=tuple(access or ()),
        expires_at=_expiry(expires),
    )

    async def work(candor: Candor) -> CuratedAnswer:
        return await candor.loop.curate(draft, kb=kb)

    curated = run(work)
    if not as_json:
        err.print(f"kept curated answer #{curated.id} in {escape(curated.knowledge_base)}", highlight=False)
    _print(curated, as_json)


@answers_app.command("edit")
def edit(
    curated_id: IdArgument,
    question: Annotated[str | None, typer.Option("--question", help="A new question.")] = None,
    answer: Annotated[str | None, typer.Option("--answer", help="A new answer ('-' reads stdin).")] = None,
    answer_file: Annotated[Path | None, typer.Option("--answer-file", help="Read the new answer from FILE.")] = None,
    access: AccessOption = None,
    public: Annotated[bool, typer.Option("--public", help="Remove its access groups: everyone may read it.")] = False,
    expires: ExpiresOption = None,
    no_expiry: Annotated[bool, typer.Option("--no-expiry", help="Clear its expiry.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Change a curated answer; it is re-indexed and dated today."""
    if public and access:
        _fail("--public and --access contradict each other")
    if no_expiry and expires:
        _fail("--no-expiry and --expires contradict each other")
    new_answer = _answer_text(answer, answer_file) if answer is not None or answer_file is not None else None
    groups: tuple[str, ...] | None = () if public else (tuple(access) if access else None)
    changes: dict[str, object] = {}
    if no_expiry or expires:
        changes["expires_at"] = None if no_expiry else _expiry(expires)

    async def work(candor: Candor) -> CuratedAnswer:
        return await candor.loop.curated.edit(
            curated_id,
            question=question,
            answer=new_answer,
            access_groups=groups,
            **changes,  # type: ignore[arg-type]
        )

    _print(run(work), as_json)


@answers_app.command("expire")
def expire(curated_id: IdArgument) -> None:
    """Stop answering with it now (its record stays: list --all)."""

    async def work(candor: Candor) -> CuratedAnswer:
        return await candor.loop.curated.expire(curated_id)

    curated = run(work, check_embedder=False)
    out.print(f"curated answer #{curated.id} expired", highlight=False)


@answers_app.command("remove")
def remove(curated_id: IdArgument) -> None:
    """Delete it and its document."""

    async def work(candor: Candor) -> CuratedAnswer:
        return await candor.loop.curated.remove(curated_id)

    curated = run(work, check_embedder=False)
    out.print(f"curated answer #{curated.id} removed", highlight=False)


def _answer_text(answer: str | None, answer_file: Path | None) -> str:
    if answer is not None and answer_file is not None:
        _fail("give --answer or --answer-file, not both")
    if answer == "-":
        return sys.stdin.read()
    if answer_file is not None:
        try:
            return answer_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            _fail(f"cannot read {answer_file}: {exc}")
    if answer is None:
        _fail("give the answer: --answer TEXT, --answer - (stdin) or --answer-file FILE")
    return answer


def _expiry(value: str | None) -> datetime | None:
    if value is None:
        return None
    from rag import parse_interval, parse_moment

    now = datetime.now(UTC)
    try:
        moment = (
            now + timedelta(seconds=parse_interval(value)) if value.strip()[-1:].isalpha() else parse_moment(value, now)
        )
    except ValueError as exc:
        _fail(f"--expires: {exc}")
    if moment <= now:
        _fail("--expires is in the past: use `candor answers expire` to stop one now")
    return moment


def _line(curated: CuratedAnswer, now: datetime) -> str:
    state = "expired" if curated.expired(now) else "live"
    expiry = f", expires {curated.expires_at.date().isoformat()}" if curated.expires_at and state == "live" else ""
    groups = f" [{', '.join(curated.access_groups)}]" if curated.access_groups else ""
    return (
        f"#{curated.id} {state} · {curated.knowledge_base}{groups} · {curated.author_name}, "
        f"{curated.updated_at.date().isoformat()}{expiry}\n    Q: {curated.question}"
    )


def _print(curated: CuratedAnswer, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(curated.as_json(), ensure_ascii=False, indent=2) + "\n")
        return
    out.print(_line(curated, datetime.now(UTC)), markup=False, highlight=False)
    out.print(f"    A: {curated.answer}", markup=False, highlight=False)


def _fail(message: str) -> NoReturn:
    err.print(f"error: {message}", markup=False, highlight=False)
    raise typer.Exit(2)
