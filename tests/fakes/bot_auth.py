"""A fake of the Bot Framework's token-signing side (what `/api/messages` checks incoming JWTs against).

An aiohttp server on 127.0.0.1 (a random free port) in its own event loop in a daemon thread:
botframework-connector's `JwtTokenExtractor` fetches the metadata and the keys with blocking
`requests.get` from inside the bot's event loop, so a fake on that same loop would never answer.

    GET /v1/.well-known/openidconfiguration  -> {"issuer", "jwks_uri": <base>/v1/.well-known/keys, ...}
    GET /v1/.well-known/keys                 -> {"keys": [{"kty": "RSA", "kid", "n", "e", "endorsements"}]}

An RSA key pair is generated at start; the public key is published under `kid` with the
endorsements given (default `["msteams"]`: botframework checks that the activity's channelId is
among the signing key's endorsements). `sign(claims)` makes an RS256 JWT with that kid:

    with FakeBotAuth() as auth:
        adapter = TeamsAdapter(config, core, ledger, auth_overrides=auth.overrides())
        token = auth.sign(auth.channel_claims(APP_ID, service_url))
        ... POST with Authorization: Bearer <token> ...

botframework caches metadata per URL for the life of the process (`JwtTokenExtractor.metadataCache`);
each fake has a fresh port, so a fresh URL.
"""

from __future__ import annotations

import base64
import socket
import threading
import time
import uuid
from collections.abc import Coroutine
from typing import Any, TypeVar

import jwt
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.background import BackgroundLoop

T = TypeVar("T")
Json = dict[str, Any]

BOT_FRAMEWORK_ISSUER = "https://api.botframework.com"
"""The issuer of tokens the Bot Framework channels send to bots (botframework's default)."""
OPENID_PATH = "/v1/.well-known/openidconfiguration"
KEYS_PATH = "/v1/.well-known/keys"


def new_key() -> rsa.RSAPrivateKey:
    """A fresh 2048-bit RSA private key."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _b64(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def public_jwk(key: rsa.RSAPrivateKey, kid: str, endorsements: list[str] | None = None) -> Json:
    """The public half of `key` as a JWK, as login.botframework.com publishes it."""
    numbers = key.public_key().public_numbers()
    jwk: Json = {"kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid, "n": _b64(numbers.n), "e": _b64(numbers.e)}
    if endorsements is not None:
        jwk["endorsements"] = list(endorsements)
    return jwk


class FakeBotAuth:
    """The fake OpenID metadata + JWKS endpoint, on its own loop in a daemon thread; blocking API."""

    def __init__(self, *, issuer: str = BOT_FRAMEWORK_ISSUER, endorsements: list[str] | None = None) -> None:
        self.issuer = issuer
        self.endorsements = ["msteams"] if endorsements is None else list(endorsements)
        self.key = new_key()
        self.kid = f"fake-{uuid.uuid4().hex[:12]}"
        self.requests: list[str] = []
        """The paths requested, in order."""
        self._lock = threading.Lock()
        self._background = BackgroundLoop("fake-bot-auth")
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    # --- addresses ---------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._port is None:
            raise RuntimeError("the fake Bot Framework auth server is not running")
        return f"http://127.0.0.1:{self._port}"

    @property
    def openid_url(self) -> str:
        return f"{self.base_url}{OPENID_PATH}"

    @property
    def jwks_url(self) -> str:
        return f"{self.base_url}{KEYS_PATH}"

    def overrides(self) -> dict[str, str]:
        """The `ConfigurationBotFrameworkAuthentication` settings that point incoming auth here."""
        return {
            "TO_BOT_FROM_CHANNEL_OPENID_METADATA_URL": self.openid_url,
            "TO_BOT_FROM_CHANNEL_TOKEN_ISSUER": self.issuer,
        }

    # --- tokens ------------------------------------------------------------------------------

    def channel_claims(self, app_id: str, service_url: str, *, lifetime: float = 3600.0) -> Json:
        """The claims of a token a channel sends a bot: issuer, audience = the bot, its serviceurl."""
        now = int(time.time())
        return {
            "iss": self.issuer,
            "aud": app_id,
            "serviceurl": service_url,
            "nbf": now - 60,
            "iat": now - 60,
            "exp": now + int(lifetime),
        }

    def sign(self, claims: dict[str, Any], *, key: rsa.RSAPrivateKey | None = None, kid: str | None = None) -> str:
        """An RS256 JWT of `claims`, signed with the published key (or `key`) under `kid` (default: the published)."""
        return jwt.encode(claims, key or self.key, algorithm="RS256", headers={"kid": kid or self.kid})

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> str:
        self._background.start(self._start())
        return self.openid_url

    def stop(self) -> None:
        self._background.stop(self._stop())

    def __enter__(self) -> FakeBotAuth:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        return self._background.run(coroutine, timeout)

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_get(OPENID_PATH, self._openid)
        app.router.add_get(KEYS_PATH, self._keys)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self._port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        self._runner, self._port = None, None

    # --- the server ----------------------------------------------------------------------------

    def _seen(self, request: web.Request) -> None:
        with self._lock:
            self.requests.append(request.path)

    async def _openid(self, request: web.Request) -> web.Response:
        self._seen(request)
        return web.json_response(
            {
                "issuer": self.issuer,
                "authorization_endpoint": f"{self.base_url}/v1/.well-known/authorize",
                "jwks_uri": self.jwks_url,
                "id_token_signing_alg_values_supported": ["RS256"],
                "token_endpoint_auth_methods_supported": ["private_key_jwt"],
            }
        )

    async def _keys(self, request: web.Request) -> web.Response:
        self._seen(request)
        return web.json_response({"keys": [public_jwk(self.key, self.kid, self.endorsements)]})
