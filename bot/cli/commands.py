"""`candor`: the command line. Thin: parse arguments, call the core, print.

Every command imports what it runs inside its function (the core, the renderers), so that building
the app, `candor --help` and `candor --version` load typer and rich only; a command module's top
level imports nothing heavier (tests/unit/bot/test_cli_startup.py holds it).

Exit status: 0 success; 1 an error (printed as one line on stderr); 3 the ingest finished but
some files were skipped (each named with its reason).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.markup import escape

import bot.cli.audit_answers  # noqa: F401  (registers `candor audit answers` on audit_app)
from bot.cli.answers import answers_app
from bot.cli.audit import audit_app
from bot.cli.common import (
    AccessOption,
    KbOption,
    cli_settings,
    err,
    every,
    out,
    progress_bar,
    require_knowledge_base,
    run,
)
from bot.cli.feedback import feedback_app
from bot.cli.gaps import gaps
from bot.cli.operate import migrate, prepare, serve, slack_worker
from bot.cli.purge import purge
from bot.cli.sync import sync

if TYPE_CHECKING:
    from rag import Candor, EvalRun, IngestReport
    from rag.model.answers import Answer

EXIT_SKIPPED = 3

ReportBy = Literal["day", "week"]
"""`candor report --by`: `rag.By`, spelled out here so that the option is built without the core."""

app = typer.Typer(
    name="candor",
    help="Candor: answers from your own documents, with citations, or an honest 'I don't know'.",
    no_args_is_help=True,
    add_completion=False,
)


def _show_version(value: bool) -> None:
    if value:
        from importlib.metadata import version as package_version

        out.print(f"candor {package_version('candor')}", markup=False, highlight=False)
        raise typer.Exit()


@app.callback()
def candor_options(
    version: Annotated[
        bool, typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Candor: answers from your own documents, with citations, or an honest 'I don't know'."""


@app.command()
def ingest(
    paths: Annotated[list[Path] | None, typer.Argument(help="Files or folders (Markdown, text, HTML, PDF).")] = None,
    kb: KbOption = None,
    access: AccessOption = None,
    prune: Annotated[bool, typer.Option(help="Remove documents whose files are gone.")] = False,
    reembed: Annotated[bool, typer.Option(help="Re-embed everything with the configured embedder.")] = False,
    max_authority: Annotated[
        int | None, typer.Option(min=0, help="Cap on front-matter authority for this knowledge base.")
    ] = None,
    every: Annotated[
        str | None,
        typer.Option(help="Ingest again at this interval (30m, 1h, 1d) until SIGTERM or Ctrl+C; one host's schedule."),
    ] = None,
) -> None:
    """Add or update documents in a knowledge base."""
    from rag import parse_interval
    from rag.model.types import clean_text

    if not paths and not reembed:
        err.print("error: give at least one file or folder (or --reembed)")
        raise typer.Exit(2)
    if every is not None:
        try:
            interval = parse_interval(every)
        except ValueError as exc:
            err.print(f"error: --every: {escape(str(exc))}", highlight=False)
            raise typer.Exit(2) from exc
        if reembed:
            err.print("error: --every and --reembed do not go together", highlight=False)
            raise typer.Exit(2)
        run(lambda candor: _ingest_every(candor, paths or [], interval, kb, access or [], prune, max_authority))
        return

    async def work(candor: Candor) -> IngestReport | int:
        if reembed:
            count = await candor.reembed()
            if not paths:
                return count
        with progress_bar() as progress:
            task = progress.add_task("ingesting", total=None) if progress else None

            def advance(path: Path) -> None:
                if progress is not None and task is not None:
                    progress.update(task, advance=1, description=escape(clean_text(path.name)[:40]))

            return await candor.ingest(
                paths or [], kb=kb, access=access or [], prune=prune, max_authority=max_authority, on_file=advance
            )

    result = run(work, check_embedder=not reembed)
    if isinstance(result, int):
        out.print(f"re-embedded {result} texts")
        return
    _print_ingest(result)
    if not result.ok:
        raise typer.Exit(EXIT_SKIPPED)


def _print_ingest(result: IngestReport) -> None:
    for path, reason in result.skipped:
        err.print(f"skipped {path}: {reason}", markup=False, highlight=False)
    out.print(
        f"{result.added} added, {result.updated} updated, {result.unchanged} unchanged, "
        f"{len(result.skipped)} skipped, {result.pruned} pruned; {result.chunks} chunks, "
        f"{result.sentences} sentences; {result.embedded} texts embedded, {result.reused} reused",
        highlight=False,
    )


async def _ingest_every(
    candor: Candor,
    paths: list[Path],
    interval: float,
    kb: str | None,
    access: list[str],
    prune: bool,
    max_authority: int | None,
) -> None:
    """`candor ingest --every`: a run and its summary at each interval (`bot.cli.common.every`; a run
    stopped by SIGTERM finishes its document: each is one transaction) and the command exits 0."""

    async def once() -> None:
        started = datetime.now(UTC).isoformat(timespec="seconds")
        report = await candor.ingest(paths, kb=kb, access=access, prune=prune, max_authority=max_authority)
        out.print(f"{started}: ", end="", markup=False, highlight=False)
        _print_ingest(report)

    await every(interval, once)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    kb: KbOption = None,
    k: Annotated[int, typer.Option("-k", min=1, max=100, help="How many passages.")] = 5,
    access: AccessOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list, best first.")] = False,
) -> None:
    """Show the passages hybrid search ranks highest for QUERY."""
    from rag.model.types import AccessScope

    async def work(candor: Candor) -> list[dict[str, object]]:
        await require_knowledge_base(candor, kb)
        scope = AccessScope(frozenset(access or []), None if kb is None else frozenset([kb]))
        passages = await candor.search(query, scope, k=k)
        return [p.as_json() for p in passages]

    results = run(work)
    if as_json:
        sys.stdout.write(json.dumps(results, ensure_ascii=False, indent=2) + "\n")
        return
    if not results:
        out.print("no passages found")
    for rank, item in enumerate(results, 1):
        heading = f" > {item['heading']}" if item["heading"] else ""
        title = escape(f"{item['title']}{heading}")
        out.print(f"[bold]{rank}. {title}[/bold]  score {item['score']:.3f}", highlight=False)
        out.print(
            f"   {item['document']}" + (f"  ({item['effective_date']})" if item["effective_date"] else ""),
            style="dim",
            markup=False,
            highlight=False,
        )
        text = str(item["text"])
        out.print(
            "   " + (text[:400] + "…" if len(text) > 400 else text).replace("\n", "\n   "),
            markup=False,
            highlight=False,
        )


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question, as a person would ask it.")],
    kb: KbOption = None,
    access: AccessOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the answer as one JSON object.")] = False,
) -> None:
    """Answer QUESTION through the full gated pipeline, with citations, or abstain."""
    from bot.render.text import render_text
    from rag.model.answers import Question
    from rag.model.types import AccessScope

    async def work(candor: Candor) -> Answer:
        await require_knowledge_base(candor, kb)
        scope = AccessScope(frozenset(access or []), None if kb is None else frozenset([kb]))
        await candor.warm_up()
        return await candor.answer(Question(question, scope=scope, platform="cli"))

    answer = run(work)
    if as_json:
        sys.stdout.write(json.dumps(answer.as_json(), ensure_ascii=False, indent=2) + "\n")
        return
    out.print(render_text(answer), markup=False, highlight=False)


@app.command(name="eval")
def evaluate(
    golden: Annotated[Path, typer.Argument(help="Golden question file (YAML).", exists=False)],
    kb: KbOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the summary and per-question results as JSON.")
    ] = False,
) -> None:
    """Ask every question of GOLDEN and score the answers; the run is stored for later reports."""
    from bot.render.text import render_summary

    async def work(candor: Candor) -> EvalRun:
        return await candor.evaluate(golden, kb=kb)

    evaluated = run(work)
    if as_json:
        payload = {
            "run_id": evaluated.run_id,
            "embedder": evaluated.embedder,
            "summary": evaluated.summary,
            "questions": evaluated.questions,
        }
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
        return
    out.print(render_summary(evaluated.summary, evaluated.questions), markup=False, highlight=False)
    embedder = evaluated.embedder
    out.print(f"embedder: {embedder['name']} on {embedder['backend']}", markup=False, highlight=False)
    out.print(f"stored as eval run {evaluated.run_id}", style="dim", highlight=False)


@app.command()
def report(
    since: Annotated[str, typer.Option(help="Start of the window: 7d, 12h, 2w ago, or an ISO date (UTC).")] = "30d",
    until: Annotated[
        str | None, typer.Option(help="End of the window, not included; same forms (default: now).")
    ] = None,
    kb: Annotated[
        str | None, typer.Option("--kb", help="Only answers scoped to this knowledge base or citing its documents.")
    ] = None,
    by: Annotated[ReportBy | None, typer.Option("--by", help="A row per day or per week (UTC).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
    html: Annotated[
        Path | None,
        typer.Option("--html", help="Write a self-contained HTML page with charts to FILE (instead of the text)."),
    ] = None,
) -> None:
    """What the gate log says: routes, gates, feedback, latency, cost, sources, platforms, eval runs."""
    from bot.render.report_html import render_html, write_html
    from bot.render.report_text import render_report
    from rag import report_window
    from rag.errors import FileWriteError

    try:
        window = report_window(since, until, by=by, kb=kb)
    except ValueError as exc:
        err.print(f"error: {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from exc

    async def work(candor: Candor) -> tuple[dict[str, Any], bool]:
        known = kb is None or await candor.knowledge_base(kb) is not None
        return await candor.report(window), known

    result, known = run(work, check_embedder=False)
    if not known:
        err.print(
            f"note: no knowledge base is called {escape(str(kb))}; counting answers that name it", highlight=False
        )
    if html is not None:
        try:
            written = write_html(html, render_html(result))
        except FileWriteError as exc:
            err.print(f"error: {escape(str(exc))}", highlight=False)
            raise typer.Exit(1) from exc
        (err if as_json else out).print(f"wrote the report page to {written}", markup=False, highlight=False)
        if not as_json:
            return
    if as_json:
        sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
        return
    out.print(render_report(result), markup=False, highlight=False, end="")


teams = typer.Typer(help="Microsoft Teams: the app package an admin uploads.", no_args_is_help=True)
app.add_typer(teams, name="teams")
app.add_typer(audit_app, name="audit")
app.add_typer(feedback_app, name="feedback")
app.add_typer(answers_app, name="answers")


@teams.command("package")
def teams_package(
    output: Annotated[Path, typer.Option("--out", help="Where to write the zip.")] = Path("candor-teams.zip"),
    app_id: Annotated[
        str | None, typer.Option("--app-id", help="The bot's Microsoft App ID (default: MICROSOFT_APP_ID).")
    ] = None,
    domain: Annotated[
        list[str] | None,
        typer.Option("--domain", help="A host Teams may open (the host of candor serve); repeat for several."),
    ] = None,
    name: Annotated[str, typer.Option(help="The app's name in Teams.")] = "Candor",
    version: Annotated[str, typer.Option(help="The package version (semver; raise it for every upload).")] = "1.0.0",
) -> None:
    """Build the Teams app package (manifest.json and the two icons) to upload in Teams."""
    from bot.teams.package import TeamsApp, write_package

    settings = cli_settings()
    bot_id = app_id or settings.microsoft_app_id
    if not bot_id:
        err.print("error: the bot's app id is needed: --app-id or MICROSOFT_APP_ID", highlight=False)
        raise typer.Exit(1)
    try:
        written = write_package(
            TeamsApp(app_id=bot_id, name=name, version=version, domains=tuple(domain or ())), output
        )
    except (ValueError, OSError) as exc:
        err.print(f"error: {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from exc
    out.print(f"wrote {written}: upload it in Teams (Apps → Manage your apps → Upload an app)", highlight=False)


app.command()(serve)
app.command("slack-worker", hidden=True)(slack_worker)
app.command()(prepare)
app.command()(migrate)
app.command("gaps")(gaps)
app.command("purge")(purge)
app.command("sync")(sync)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
