"""A replaying proxy in front of a local model server, for development runs of model_answers.py.

A 1.5B model on two cores takes about a minute per answer, so measuring a change to Candor's gates
on a development set would cost an hour each time, though the gates change nothing the model is
asked first. This proxy forwards `POST /v1/chat/completions` to the real server and keeps each
successful reply under the sha256 of the request body; the same request again is answered from the
file (the request is kept beside it, `<sha256>.request.json`, so that what the model was shown can
be read back). Only a change that alters what the model is asked (a prompt, a retry, a repair)
reaches the model. Greedy decoding (temperature 0) makes the reply a function of the request on one machine.

    python scripts/local_model.py serve --model qwen-1.5b --port 8090 --threads 2
    .venv/bin/python benchmarks/model_replay.py --port 8091 --upstream http://127.0.0.1:8090
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/model_answers.py --set tasks --system candor-model \\
        --base-url http://127.0.0.1:8091/v1

Development only: replayed answers have no meaningful latency, and a held-back measurement goes to
the server directly. Every reply served says whether it was replayed (`x-candor-replay`), and the
proxy counts hits and misses on stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import aiohttp
from aiohttp import web

CACHE = Path(__file__).resolve().parent / ".cache" / "model_replay"


def key_of(body: bytes) -> str:
    """The request's identity: its JSON canonicalised (key order and spacing do not matter)."""
    try:
        canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":")).encode()
    except ValueError:
        canonical = body
    return hashlib.sha256(canonical).hexdigest()


def make_app(upstream: str, cache: Path) -> web.Application:
    cache.mkdir(parents=True, exist_ok=True)
    counts = {"hit": 0, "miss": 0}

    async def forward(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        key = key_of(body)
        path = cache / f"{key}.json"
        replayable = request.method == "POST" and request.path.endswith("/chat/completions")
        asked = path.with_suffix(".request.json")  # kept beside the reply: what the model was shown
        if replayable and path.exists():
            if not asked.exists():
                asked.write_bytes(body)
            counts["hit"] += 1
            print(f"replay hit {key[:12]} ({counts['hit']} hits, {counts['miss']} misses)", file=sys.stderr)
            headers = {"x-candor-replay": "hit"}
            return web.Response(body=path.read_bytes(), content_type="application/json", headers=headers)
        session: aiohttp.ClientSession = request.app["session"]
        headers = {k: v for k, v in request.headers.items() if k.lower() in {"content-type", "authorization"}}
        async with session.request(request.method, upstream + request.path_qs, data=body, headers=headers) as reply:
            data = await reply.read()
            if replayable:
                counts["miss"] += 1
                print(f"replay miss {key[:12]} -> {reply.status} ({counts['miss']} misses)", file=sys.stderr)
                if reply.status == 200:
                    asked.write_bytes(body)
                    partial = path.with_suffix(".part")
                    partial.write_bytes(data)
                    partial.replace(path)
            return web.Response(
                body=data,
                status=reply.status,
                content_type=reply.content_type,
                headers={"x-candor-replay": "miss"},
            )

    async def open_session(app: web.Application) -> None:
        app["session"] = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))

    async def close_session(app: web.Application) -> None:
        await app["session"].close()

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.on_startup.append(open_session)
    app.on_cleanup.append(close_session)
    app.router.add_route("*", "/{tail:.*}", forward)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8091)
    parser.add_argument("--upstream", default="http://127.0.0.1:8090")
    parser.add_argument("--cache", type=Path, default=CACHE)
    args = parser.parse_args()
    web.run_app(make_app(args.upstream.rstrip("/"), args.cache), host="127.0.0.1", port=args.port, print=None)


if __name__ == "__main__":
    main()
