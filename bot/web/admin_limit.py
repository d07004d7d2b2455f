"""The one `LoginLimiter` of an application: `/dashboard` (its login form and its bearer token) and
`/metrics` count wrong admin tokens from an address against the same limit, so neither door adds
guesses to the other's (`bot.web.dashboard_auth` says the limit: 10 a minute, then a minute's lock).
"""

from __future__ import annotations

from aiohttp import web

from bot.web.dashboard_auth import LoginLimiter

LOGIN_LIMITER = web.AppKey("candor_login_limiter", LoginLimiter)


def login_limiter(app: web.Application, given: LoginLimiter | None = None) -> LoginLimiter:
    """The limiter every admin route of `app` shares: `given` when the caller brings one (the
    application's from then on), else the one a route mounted earlier made, else a new one."""
    if given is not None:
        app[LOGIN_LIMITER] = given
    elif LOGIN_LIMITER not in app:
        app[LOGIN_LIMITER] = LoginLimiter()
    return app[LOGIN_LIMITER]
