"""Sending to a Teams conversation through the Bot Connector: in the turn or after it, with retries;
a new thread in a channel (`to_channel`); an edit of a message (`update_in_turn`).

botbuilder's `ConnectorClient` does not retry, and a failure inside `continue_conversation` goes to
the adapter's turn-error handler instead of the caller. `Delivery` retries the connector's 429
(after its `Retry-After`) and 5xx with backoff, and raises `DeliveryError` when a reply could not
be delivered, so that the caller can record it: no answer is marked delivered that was not.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar

from botbuilder.core import TurnContext
from botbuilder.integration.aiohttp import CloudAdapter
from botbuilder.schema import Activity, ChannelAccount, ConversationParameters, ConversationReference, Entity, Mention
from botframework.connector import Channels
from msrest.exceptions import ClientException
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from bot.teams.cards import typing_activity
from rag.errors import DeliveryError

log = logging.getLogger("candor.teams")

TYPING_EVERY_SECONDS = 3.0
MAX_RETRY_WAIT_SECONDS = 30.0

Send = Callable[[Mapping[str, Any]], Awaitable[str | None]]
"""Delivers one activity to the asker's conversation; the sent activity's id."""


class Delivery:
    """Activities to conversations, with retries."""

    def __init__(
        self, cloud: CloudAdapter, app_id: str | None, *, attempts: int = 4, backoff_seconds: float = 1.0
    ) -> None:
        self.cloud = cloud
        self.app_id = app_id or ""
        self.attempts = attempts
        self.backoff_seconds = backoff_seconds

    async def in_turn(self, context: TurnContext, activity: Mapping[str, Any]) -> str | None:
        """Send one activity in a turn; its id. The Bot Connector's 429 (after its `Retry-After`) and
        5xx, connection failures and a token that could not be had are retried with backoff, up to
        `attempts` tries; then, or at once for any other refusal, `DeliveryError`."""
        response = await self._retried(lambda: context.send_activity(to_activity(activity)), "the reply")
        return response.id if response is not None and response.id else None

    async def update_in_turn(self, context: TurnContext, activity_id: str, activity: Mapping[str, Any]) -> None:
        """Replace the message `activity_id` of the turn's conversation (retried like `in_turn`)."""
        edited = to_activity(activity)
        edited.id = activity_id
        await self._retried(lambda: context.update_activity(edited), "the edit")

    async def to_channel(
        self, service_url: str, channel_id: str, tenant_id: str | None, activity: Mapping[str, Any]
    ) -> tuple[str, str | None]:
        """Post `activity` as a new thread of a Teams channel (the Bot Connector's "create
        conversation" with the channel in its channel data, as `TeamsInfo.send_message_to_teams_channel`
        does); the thread's conversation id and the post's activity id. Retried like `in_turn`: a
        refused create made nothing."""
        parameters = ConversationParameters(
            is_group=True,
            channel_data={"channel": {"id": channel_id}},
            activity=to_activity(activity),
            tenant_id=tenant_id or None,
        )
        made: list[tuple[str, str | None]] = []

        async def created(context: TurnContext) -> None:
            made.append((context.activity.conversation.id, context.activity.id))

        await self._retried(
            lambda: self.cloud.create_conversation(self.app_id, created, parameters, Channels.ms_teams, service_url),
            "the channel post",
        )
        if not made:  # botbuilder failed after the post and logged why
            raise DeliveryError("the channel post was not confirmed (see the Teams turn error logged above)")
        return made[0]

    async def _retried(self, call: Callable[[], Awaitable[Any]], what: str) -> Any:
        """`call()`'s result, retried as `in_turn` says; `DeliveryError` when it never succeeded."""
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.attempts),
            wait=self._wait,
            retry=retry_if_exception(_retryable),
            before_sleep=_log_retry,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    result = await call()
        except Exception as exc:  # msrest's errors, connection failures, and a token that could not be had
            raise DeliveryError(f"the Bot Connector did not take {what} ({_describe(exc)})") from exc
        return result

    def _wait(self, state: RetryCallState) -> float:
        """The connector's `Retry-After` on a 429, else doubling from `backoff_seconds`; capped."""
        error = state.outcome.exception() if state.outcome is not None else None
        told = _retry_after(error) if error is not None and _status(error) == 429 else None
        pause = told if told is not None else self.backoff_seconds * 2 ** (state.attempt_number - 1)
        return min(MAX_RETRY_WAIT_SECONDS, pause)

    async def proactive(self, reference: ConversationReference, activity: Mapping[str, Any]) -> str | None:
        """Send one activity to the conversation after its turn (`continue_conversation`); its id."""
        return await self._after_turn(reference, lambda context: self.in_turn(context, activity))

    async def update(
        self, reference: ConversationReference, activity_id: str, activity: Mapping[str, Any]
    ) -> str | None:
        """Replace the bot's message `activity_id` in the conversation with `activity` (the answer to
        an edited question), retried as `in_turn` says; its id."""
        revised = to_activity(activity)
        revised.id = activity_id

        async def replace(context: TurnContext) -> str | None:
            await self._retried(lambda: context.update_activity(revised), "the updated reply")
            return activity_id

        return await self._after_turn(reference, replace)

    async def delete(self, reference: ConversationReference, activity_id: str) -> None:
        """Delete the bot's message `activity_id` from the conversation, retried as `in_turn` says."""

        async def remove(context: TurnContext) -> str | None:
            await self._retried(lambda: context.delete_activity(activity_id), "the deletion")
            return None

        await self._after_turn(reference, remove)

    async def _after_turn(
        self, reference: ConversationReference, act: Callable[[TurnContext], Awaitable[str | None]]
    ) -> str | None:
        """`act` in the conversation after its turn (`continue_conversation`); what it returned."""
        failures: list[DeliveryError] = []
        sent: list[str | None] = []

        async def callback(context: TurnContext) -> None:
            try:
                sent.append(await act(context))
            except DeliveryError as exc:
                failures.append(exc)

        try:
            await self.cloud.continue_conversation(reference, callback, bot_app_id=self.app_id)
        except (ClientException, OSError) as exc:  # no connector client (e.g. no token for the bot)
            raise DeliveryError(f"could not reach the Bot Connector ({_describe(exc)})") from exc
        if failures:
            raise failures[0]
        if not sent:  # the callback never ran: botbuilder failed before it and logged why
            raise DeliveryError("the reply was not sent (see the Teams turn error logged above)")
        return sent[0]

    async def keep_typing(self, reference: ConversationReference) -> None:
        """A typing indicator every few seconds until cancelled (Teams shows one for about three)."""

        async def send(context: TurnContext) -> None:
            try:
                await context.send_activity(to_activity(typing_activity()))
            except (ClientException, OSError) as exc:  # cosmetic: never fatal to the answer
                log.warning("typing indicator failed: %s", _describe(exc))

        while True:
            try:
                await self.cloud.continue_conversation(reference, send, bot_app_id=self.app_id)
            except (ClientException, OSError) as exc:
                log.warning("typing indicator failed: %s", _describe(exc))
            await asyncio.sleep(TYPING_EVERY_SECONDS)


def to_activity(data: Mapping[str, Any]) -> Activity:
    """A renderer's plain activity as botbuilder's `Activity`, the AI-label and mention entities intact."""
    entities = [entity for entity in map(_entity, data.get("entities", ())) if entity is not None]
    activity = Activity.deserialize({k: v for k, v in data.items() if k != "entities"})
    if entities:
        activity.entities = entities
    return activity


def _entity(data: Mapping[str, Any]) -> Entity | None:
    if data.get("@type") == "Message":
        return _AIMessageEntity(data)
    if data.get("type") == "mention":
        mentioned = data.get("mentioned") or {}
        account = ChannelAccount(id=mentioned.get("id"), name=mentioned.get("name"))
        return Mention(mentioned=account, text=data.get("text"), type="mention")
    return None


class _AIMessageEntity(Entity):  # type: ignore[misc]
    """The schema.org Message entity (AI label and citations) with every field serialised: botbuilder's
    `Entity` keeps unknown fields when reading but drops them when writing."""

    _attribute_map: ClassVar[dict[str, dict[str, str]]] = {
        **Entity._attribute_map,
        "at_type": {"key": "@type", "type": "str"},
        "at_context": {"key": "@context", "type": "str"},
        "at_id": {"key": "@id", "type": "str"},
        "additional_type": {"key": "additionalType", "type": "[str]"},
        "citation": {"key": "citation", "type": "[object]"},
    }

    def __init__(self, data: Mapping[str, Any]) -> None:
        super().__init__(type=data.get("type"))
        self.at_type = data.get("@type")
        self.at_context = data.get("@context")
        self.at_id = data.get("@id")
        self.additional_type = data.get("additionalType")
        self.citation = data.get("citation")


def _retryable(exc: BaseException) -> bool:
    status = _status(exc)
    return status is None or status == 429 or status >= 500


def _log_retry(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    if error is not None:
        log.warning("the Bot Connector answered %s: retrying", _describe(error))


def _status(exc: BaseException) -> int | None:
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    try:
        return max(0.0, float(headers.get("Retry-After", "")))
    except ValueError:
        return None


def _describe(exc: BaseException) -> str:
    status = _status(exc)
    return f"HTTP {status}" if status is not None else f"{type(exc).__name__}: {exc}"
