"""`candor ask`, `candor eval` and `candor serve` as real processes on a home of their own.

The same set-up as `test_processes.py` (a fresh `CANDOR_HOME`, the embedded server started by the
first command and joined by the next): what a newcomer types after `make demo`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from rag.backends.onnx_export import detect_target
from tests.conftest import REPO, SAMPLE
from tests.integration.cli.test_processes import candor, fresh_home, start_candor

pytestmark = pytest.mark.slow

__all__ = ["fresh_home"]  # the fixture, re-used from test_processes

TARGET = os.environ.get("CANDOR_ONNX_TARGET", "auto").replace("auto", "") or detect_target()
DEFAULT_BACKEND = f"onnx-int8 ({TARGET})" if TARGET else "onnx"
"""What a new user's embedder runs on, on this machine: the int8 export for its CPU."""
REQUIRED = {"question", "route", "text", "sentences", "sources", "conflicts", "unanswered_parts", "gates", "trace_id"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def http_json(url: str, body: dict[str, Any] | None = None, timeout: float = 60.0) -> tuple[int, dict[str, Any]]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.status, json.loads(response.read())


def test_ask_eval_and_serve_from_the_command_line(fresh_home: Path) -> None:
    ingested = candor(fresh_home, "ingest", str(SAMPLE), "--kb", "handbook")
    assert ingested.returncode == 0, ingested.stderr
    migrated = candor(fresh_home, "migrate")  # what a deployment's migration job runs
    head = max(p.name[:4] for p in (REPO / "migrations" / "versions").glob("0*.py"))  # the newest migration
    assert migrated.returncode == 0 and f"schema up to date (revision {head})" in migrated.stdout, migrated.stderr

    asked = candor(
        fresh_home, "ask", "How much paid parental leave does the primary carer get?", "--kb", "handbook", "--json"
    )
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    assert answer.keys() >= REQUIRED
    assert answer["route"] == "answered" and "16 weeks" in answer["text"]
    assert all(s["citations"] for s in answer["sentences"])
    assert set(answer["timings_ms"]) >= {"retrieve", "rerank", "synthesise", "critic", "total"}

    plain = candor(fresh_home, "ask", "What is the vesting schedule for employee stock options?", "--kb", "handbook")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.startswith("I don't know - the knowledge base does not cover this.")
    assert "route: abstained" in plain.stdout

    empty = candor(fresh_home, "ask", "   ", "--kb", "handbook")
    assert empty.returncode == 1 and "the question is empty" in empty.stderr and "Traceback" not in empty.stderr

    evaluated = candor(fresh_home, "eval", str(REPO / "sample" / "golden.yaml"), "--kb", "handbook", "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    run = json.loads(evaluated.stdout)
    assert run["summary"]["questions"] == 40 and len(run["questions"]) == 40
    assert run["summary"]["restricted_leaks"]["n"] == 0
    assert run["summary"]["citations_valid"]["n"] == 40
    assert isinstance(run["run_id"], int)
    assert run["embedder"] == {"name": "minilm", "backend": DEFAULT_BACKEND}  # a number names what made it

    missing = candor(fresh_home, "eval", str(fresh_home.parent / "nope.yaml"))
    assert missing.returncode == 1 and "nope.yaml" in missing.stderr

    port = free_port()
    server = start_candor(fresh_home, "serve", "--port", str(port))
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                status, health = http_json(f"http://127.0.0.1:{port}/healthz", timeout=5)
                break
            except OSError:
                assert server.poll() is None, server.stderr.read() if server.stderr else ""
                assert time.monotonic() < deadline, "candor serve did not come up"
                time.sleep(0.5)
        assert status == 200 and health["status"] == "ok"
        assert health["embedder_backend"] == DEFAULT_BACKEND
        status, body = http_json(
            f"http://127.0.0.1:{port}/api/ask",
            {"question": "What is the minimum password length for company accounts?"},
        )
        assert status == 200 and "14 characters" in body["answer"]["text"]
    finally:
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=60)
    log = server.stderr.read() if server.stderr else ""
    assert code == 0, log
    assert f"Embedder: minilm on {DEFAULT_BACKEND}" in log
    assert "Chat page: at /, anonymous: public documents only" in log  # the default on 127.0.0.1

    # retention: everything asked above is older than a cut-off in the future
    purged = candor(fresh_home, "purge", "--older-than", "2099-01-01")
    assert purged.returncode == 0, purged.stderr
    counted = re.search(r"purged records made before 2099-01-01T00:00:00\+00:00: (\d+) traces", purged.stdout)
    assert counted is not None and int(counted.group(1)) >= 43, purged.stdout  # 2 asks, 40 eval, 1 served
    again = candor(fresh_home, "purge", "--older-than", "2099-01-01")
    assert again.returncode == 0 and ": 0 traces" in again.stdout
    unreadable = candor(fresh_home, "purge", "--older-than", "soon")
    assert unreadable.returncode == 2 and "neither a duration" in unreadable.stderr


def test_ingest_every_interval_picks_up_changes_and_prunes_until_sigterm(fresh_home: Path, tmp_path: Path) -> None:
    """One host's schedule: `candor ingest --every` runs, waits, runs again with what changed (a new
    file added, a deleted one pruned), and stops cleanly on SIGTERM."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text("# Leave\n\nStaff get 25 days of annual leave.\n")
    (docs / "parking.md").write_text("# Parking\n\nParking is free for staff.\n")
    process = start_candor(fresh_home, "ingest", str(docs), "--kb", "handbook", "--prune", "--every", "2s")
    lines: list[str] = []
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 120
        while not any(": 2 added" in line for line in lines):
            assert time.monotonic() < deadline and process.poll() is None, (lines, process.stderr)
            lines.append(process.stdout.readline())
        (docs / "badges.md").write_text("# Badges\n\nBadges open the front door.\n")
        (docs / "parking.md").unlink()
        while not any(": 1 added" in line and "1 pruned" in line for line in lines):
            assert time.monotonic() < deadline and process.poll() is None, lines
            lines.append(process.stdout.readline())
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    rest = process.stdout.read() if process.stdout else ""
    assert code == 0 and "stopped" in rest, (code, rest, process.stderr.read() if process.stderr else "")
    first = next(line for line in lines if ": 2 added" in line)
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00: 2 added, 0 updated", first)
    bad = candor(fresh_home, "ingest", str(docs), "--every", "soon")
    assert bad.returncode == 2 and "not an interval" in bad.stderr
