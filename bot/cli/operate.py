"""Running Candor: `candor serve`, the Slack answering process it supervises, `candor migrate` and
`candor prepare` (what a deployment runs before the servers start). Thin: settings checked, the core
opened, the server or the step run.

Registered on the main app by `bot/cli/commands.py`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from bot.cli.common import cli_settings, err, out, run

if TYPE_CHECKING:
    from rag import Candor

log = logging.getLogger("candor.cli")


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8080,
) -> None:
    """Run the server: the chat page at /, health at /healthz, Slack at /slack/events (or Socket Mode)."""
    from bot.server import MAX_BODY_BYTES, PLATFORM_BODY_BYTES, build_app, in_background, settle_heap
    from bot.server import serve as run_server
    from bot.web.identity import chat_login, chat_page_line, is_loopback
    from rag import SourceOverview
    from rag.errors import ConfigError

    settings = cli_settings()
    slack = settings.slack_bot_token is not None
    teams = bool(settings.microsoft_app_id) or settings.teams
    try:  # what the settings alone can refuse, refused before the models load
        chat = chat_login(
            settings.web_chat,
            host=host,
            platforms=slack or teams,
            header=settings.web_user_header,
            trusted=settings.trusted_proxies,
        )
        if teams and not settings.microsoft_app_id and not is_loopback(host):
            raise ConfigError(
                "CANDOR_TEAMS=true without MICROSOFT_APP_ID serves /api/messages without authentication and "
                "sends answers wherever a request's serviceUrl points: only on a loopback address (--host 127.0.0.1)"
            )
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from exc

    async def work(candor: Candor) -> None:
        await candor.warm_up()
        await candor.open_connections()
        backend = candor.embedder_backend
        log.info("embedder %s on %s", candor.embedder.name, backend, extra={"embedder_backend": backend})
        err.print(f"Embedder: {candor.embedder.name} on {backend}", markup=False, highlight=False)
        token = settings.admin_token.get_secret_value() if settings.admin_token else None
        app_ = build_app(
            candor,
            chat=chat,
            max_body_bytes=PLATFORM_BODY_BYTES if slack or teams else MAX_BODY_BYTES,
            reports=candor,
            admin_token=token,
            trusted_proxies=settings.trusted_proxies,
            metrics=candor.metrics,
            open_metrics=is_loopback(host),
            sources=SourceOverview(candor) if token else None,
        )
        in_background(app_, candor.replay_spool_while_serving, "spool replay")
        in_background(app_, candor.purge_while_serving, "retention")
        in_background(app_, candor.expire_curated_while_serving, "curated answer expiry")
        in_background(app_, candor.refresh_metrics_while_serving, "metrics")
        if token:
            err.print(f"Dashboard: http://{host}:{port}/dashboard (CANDOR_ADMIN_TOKEN)", highlight=False)
        if token or is_loopback(host):
            guarded = "CANDOR_ADMIN_TOKEN as a bearer token" if token else "open: loopback only"
            err.print(f"Metrics: http://{host}:{port}/metrics ({guarded})", highlight=False)
        if teams:
            from bot.teams.app import TeamsAdapter, teams_config

            TeamsAdapter(teams_config(settings), candor, candor.events).mount(app_)
            auth = "authenticated" if settings.microsoft_app_id else "ANONYMOUS (local development only)"
            err.print(f"Teams: http://{host}:{port}/api/messages, {auth}", highlight=False)
        if slack:
            from bot.slack.app import SlackAdapter
            from bot.slack.config import slack_config
            from bot.slack.process import AnswerProcess

            config = slack_config(settings)
            SlackAdapter(config, candor, candor.events).mount(app_)
            if not config.answers_here:
                AnswerProcess().mount(app_)
            mode = "Socket Mode" if settings.slack_app_token else f"http://{host}:{port}/slack/events"
            where = "in this process" if config.answers_here else "in a child process"
            err.print(f"Slack: {mode}; answers made {where}", highlight=False)
        err.print(f"Candor is listening on http://{host}:{port}/", highlight=False)
        err.print(chat_page_line(chat, settings.web_chat), highlight=False)
        settle_heap()
        await run_server(app_, host, port)

    run(work)


def slack_worker() -> None:
    """Answer the Slack questions `candor serve` records (started by `candor serve`, not by hand)."""
    from bot.slack.process import run_answer_process

    async def work(candor: Candor) -> None:
        await candor.warm_up()
        await candor.open_connections()
        await run_answer_process(candor)

    run(work)


def prepare() -> None:
    """Load the embedder once (exporting its ONNX file into CANDOR_MODELS_DIR on first use), then
    exit: a container image runs it at build time, so that a container starts without writing a cache."""
    import asyncio

    from rag import prepare_embedder
    from rag.errors import CandorError

    settings = cli_settings()
    try:
        backend = asyncio.run(prepare_embedder(settings))
    except CandorError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from exc
    out.print(f"embedder {settings.embedder} on {backend}, in {settings.model_cache}", markup=False, highlight=False)


def migrate() -> None:
    """Bring the database's schema up to date, then exit (every command does it on start; a
    deployment runs this once, as a job, before the new version's servers start)."""

    async def work(candor: Candor) -> str:
        return await candor.store.schema_revision()

    revision = run(work, check_embedder=False)
    out.print(f"schema up to date (revision {revision})", markup=False, highlight=False)
