"""`candor serve`: one aiohttp application that every adapter mounts its routes on.

`build_app` wires the pieces: `/healthz` (here, because it belongs to the process, not to any one
adapter) and, with a login to run it with, the local chat page (`bot.web.routes.add_routes`;
`bot.web.identity.chat_login` chooses the login from CANDOR_WEB_CHAT, or none). Slack and Teams mount the same way,
each with its own `add_routes(app, service)`. `serve` runs the app until SIGINT or SIGTERM, then
stops accepting connections and lets the requests in flight finish (up to `shutdown_timeout`).

The access log (`aiohttp.access`, shown at CANDOR_LOG_LEVEL=INFO) is `AccessLogger`'s: the path of
every request without its query string, on every route: a query can carry what no log should keep
(an old ``/dashboard?token=`` bookmark, in any proxy's log too), no route needs it logged, and one
rule for all routes cannot miss a route added later.

The server sees the core only through `AnswerService`, which `rag.runtime.Candor` satisfies: no SQL,
no thresholds, no pipeline logic here.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from typing import Any, Protocol

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.typedefs import Handler

from bot.web.dashboard import ReportService
from bot.web.dashboard import add_routes as add_dashboard_routes
from bot.web.identity import ChatLogin, Network
from bot.web.metrics import MetricsSource
from bot.web.metrics import add_routes as add_metrics_routes
from bot.web.routes import add_routes as add_web_routes
from bot.web.sources import SourcesService
from rag import AuditRequest
from rag.errors import CandorError
from rag.model.answers import Answer, Feedback, Question
from rag.model.loop import CuratedAnswer, CuratedDraft, Handoff, HandoffReason

log = logging.getLogger("candor.server")

MAX_BODY_BYTES = 64 * 1024
"""Largest request body any route accepts; larger ones get 413 before a handler parses them."""
PLATFORM_BODY_BYTES = 1024 * 1024
"""With Slack or Teams mounted: an interactivity payload carries the whole message it came from."""

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class AnswerService(Protocol):
    """What the adapters need from the core."""

    async def answer(self, question: Question) -> Answer: ...

    async def record_feedback(self, feedback: Feedback) -> None: ...

    async def health(self) -> dict[str, object]:
        """Component states, e.g. ``{"database": "ok"}``; raises `StoreError` when the database is down."""
        ...


class CuratedService(Protocol):
    """Curated answers (`rag.loop.curated.CuratedAnswers`), as the dashboard manages them."""

    async def find(self, *, include_expired: bool = False, for_trace: str | None = None) -> list[CuratedAnswer]: ...

    async def get(self, curated_id: int) -> CuratedAnswer: ...

    async def edit(
        self, curated_id: int, *, question: str | None = None, answer: str | None = None
    ) -> CuratedAnswer: ...

    async def expire(self, curated_id: int) -> CuratedAnswer: ...

    async def remove(self, curated_id: int) -> CuratedAnswer: ...


class LoopService(Protocol):
    """Hand-offs to a person and curated answers (`rag.loop.Loop`)."""

    @property
    def curated(self) -> CuratedService: ...

    async def hand_off(
        self, trace_id: str, *, platform: str, asker: str, reason: HandoffReason, reply_to: Mapping[str, Any]
    ) -> tuple[Handoff, bool]:
        """The hand-off of this trace by this asker, and whether it was made now (False: found)."""
        ...

    async def handoff(self, handoff_id: str) -> Handoff: ...

    async def claim_triage(self, handoff_id: str) -> bool:
        """True for the one caller that is to post the hand-off's triage message now."""
        ...

    async def unclaim_triage(self, handoff_id: str) -> None: ...

    async def note_triage(self, handoff_id: str, triage: Mapping[str, Any]) -> None: ...

    async def reply_to_handoff(self, handoff_id: str, reply: str, *, by: str, by_name: str) -> tuple[Handoff, bool]:
        """Store the reply once: (the hand-off, True), or (as first answered, False) when it was answered."""
        ...

    async def curate(self, draft: CuratedDraft, *, kb: str | None = None) -> CuratedAnswer: ...


class ChatCore(Protocol):
    """What the chat platform adapters (Slack, Teams) need from the core."""

    @property
    def loop(self) -> LoopService: ...

    async def answer(self, question: Question) -> Answer: ...

    async def record_feedback(self, feedback: Feedback) -> None: ...

    async def knowledge_base_summary(self) -> list[tuple[str, int]]:
        """Each knowledge base with its count of public documents (for a home page or a welcome)."""
        ...

    async def forget(self, trace_id: str) -> bool:
        """Remove a trace's question text and asker id (the question was deleted where it was asked)."""
        ...

    async def review_queue(self, request: AuditRequest) -> dict[str, Any]:
        """The next sampled answers and abstentions to label (`rag.insights.audit.review`)."""
        ...

    async def store_review_label(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Store one label; `AuditError` says what is wrong with it."""
        ...


def build_app(
    service: AnswerService,
    *,
    chat: ChatLogin | None = None,
    max_question_chars: int = 4000,
    max_body_bytes: int = MAX_BODY_BYTES,
    reports: ReportService | None = None,
    admin_token: str | None = None,
    trusted_proxies: Sequence[Network] = (),
    metrics: MetricsSource | None = None,
    open_metrics: bool = False,
    sources: SourcesService | None = None,
) -> web.Application:
    """The application `candor serve` runs: `/healthz`; the chat page at `/` only with a `chat`
    login; `/dashboard` (the report page, `bot.web.dashboard`) only with an admin token and a core
    that makes reports, with the sources pages (`bot.web.sources`) when given `sources`; `/metrics`
    with `metrics`, behind the admin token when there is one, else only when `open_metrics` (a
    server on a loopback address)."""
    if max_question_chars < 1:
        raise ValueError(f"max_question_chars must be at least 1, got {max_question_chars}")
    app = web.Application(client_max_size=max_body_bytes)
    app.router.add_get("/healthz", _healthz_handler(service))
    if chat is not None:
        add_web_routes(app, service, chat, max_question_chars=max_question_chars)
    if metrics is not None and (admin_token or open_metrics):
        add_metrics_routes(app, metrics, token=admin_token or None)
    if admin_token:
        if reports is None:
            raise ValueError("an admin token was given but no report service to show")
        add_dashboard_routes(app, reports, admin_token, trusted_proxies=trusted_proxies, sources=sources)
    return app


def _healthz_handler(service: AnswerService) -> Handler:
    async def healthz(request: web.Request) -> web.Response:
        try:
            components = await service.health()
        except CandorError as exc:  # the database's own words stay in the log: /healthz is public
            log.warning("health check failed: %s", exc)
            return web.json_response({"status": "unavailable", "error": "database unavailable"}, status=503)
        except Exception:
            log.exception("health check raised an unexpected error")
            return web.json_response({"status": "unavailable", "error": "health check failed"}, status=503)
        return web.json_response({**components, "status": "ok"})

    return healthz


def in_background(app: web.Application, work: Callable[[], Coroutine[Any, Any, None]], name: str) -> None:
    """Run `work()` for as long as `app` serves (started with it, cancelled when it stops); a
    crash of the task is logged, never silent."""

    async def running(app: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(work(), name=name)
        task.add_done_callback(_log_crash)
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    app.cleanup_ctx.append(running)


def _log_crash(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background task %s stopped: %s", task.get_name(), task.exception(), exc_info=task.exception())


class AccessLogger(AbstractAccessLogger):
    """One line per request: address, method, path (percent-encoded, no query string), HTTP version,
    status, body bytes, seconds, user agent; the same fields as structured `extra`."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        path = request.rel_url.raw_path  # encoded: no line break can be forged into the log
        version = f"{request.version.major}.{request.version.minor}"
        agent = request.headers.get("User-Agent", "-")
        self.logger.info(
            '%s "%s %s HTTP/%s" %d %d %.3fs "%s"',
            request.remote,
            request.method,
            path,
            version,
            response.status,
            response.body_length,
            time,
            agent.encode("unicode_escape").decode("ascii"),
            extra={"remote": request.remote, "method": request.method, "path": path, "status": response.status},
        )

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)


def app_runner(app: web.Application, *, shutdown_timeout: float = 30) -> web.AppRunner:
    """The runner `serve` runs `app` with (set up by the caller): `AccessLogger` writes its access log."""
    return web.AppRunner(app, shutdown_timeout=shutdown_timeout, access_log_class=AccessLogger)


async def serve(app: web.Application, host: str, port: int, *, shutdown_timeout: float = 30) -> None:
    """Serve `app` on host:port until SIGINT or SIGTERM, then shut down gracefully.

    On the signal the listening socket closes at once; requests already being handled get up to
    `shutdown_timeout` seconds to finish before their connections are closed, then the app's
    shutdown and cleanup hooks run. Signal handlers in place before the call are restored after.
    """
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    runner = app_runner(app, shutdown_timeout=shutdown_timeout)
    await runner.setup()
    previous = {sig: signal.getsignal(sig) for sig in _STOP_SIGNALS}
    installed: list[signal.Signals] = []
    try:
        for sig in _STOP_SIGNALS:
            try:
                loop.add_signal_handler(sig, _request_stop, stop, sig)
            except NotImplementedError:  # Windows: Ctrl+C still raises KeyboardInterrupt
                continue
            installed.append(sig)
        site = web.TCPSite(runner, host, port)
        await site.start()
        log.info("Candor serving on http://%s:%d (chat page at /, health at /healthz)", host, port)
        await stop.wait()
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
            if previous[sig] is not None:
                signal.signal(sig, previous[sig])
        log.info("shutting down: finishing requests in flight (up to %gs)", shutdown_timeout)
        await runner.cleanup()
        log.info("stopped")


def settle_heap() -> None:
    """Put what start-up made (modules, models: ~575k objects) out of the garbage collector's reach.

    A full collection walks every tracked object: ~330 ms here, with the event loop stopped. In
    `candor serve` that showed as Slack acknowledgements of 250-450 ms in the slowest 1% (the
    collections ran during a burst). Frozen objects are never freed, which is right for what lives
    as long as the process; everything made later is collected as before. A process's entry point
    calls it once start-up is done (models loaded), before serving: not a library function like
    `serve`, which tests run inside their own process."""
    gc.collect()
    gc.freeze()


def _request_stop(stop: asyncio.Event, sig: signal.Signals) -> None:
    log.info("received %s", sig.name)
    stop.set()
