"""The bot's credentials for its calls to the Bot Connector, made once and reused.

botbuilder 4.17.1's `CloudAdapter` builds a connector client for every `continue_conversation`, and
the credentials factory new `MicrosoftAppCredentials` for every client: a new MSAL application
with an empty token cache, so every typing indicator and every answer would fetch the OpenID
metadata and a token, synchronously, on the event loop. Keeping one set of credentials per app
id, scope and login endpoint lets MSAL's own cache serve the token until it nears expiry.
"""

from __future__ import annotations

from typing import Any

from botframework.connector.auth import ServiceClientCredentialsFactory
from msrest.authentication import Authentication


class ReusedCredentials(ServiceClientCredentialsFactory):  # type: ignore[misc]
    """`inner`'s credentials, each made once."""

    def __init__(self, inner: ServiceClientCredentialsFactory) -> None:
        self.inner = inner
        self._made: dict[tuple[Any, ...], Authentication] = {}

    async def is_valid_app_id(self, app_id: str) -> bool:
        return bool(await self.inner.is_valid_app_id(app_id))

    async def is_authentication_disabled(self) -> bool:
        return bool(await self.inner.is_authentication_disabled())

    async def create_credentials(
        self, app_id: str, oauth_scope: str, login_endpoint: str, validate_authority: bool
    ) -> Authentication:
        key = (app_id, oauth_scope, login_endpoint, validate_authority)
        if key not in self._made:
            self._made[key] = await self.inner.create_credentials(
                app_id, oauth_scope, login_endpoint, validate_authority
            )
        return self._made[key]
