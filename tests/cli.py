"""`candor` as its own process, the way a person runs it, on the test session's database."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from rag.runtime import Candor

SHARED = ("CANDOR_MODELS_DIR", "CANDOR_ONNX_TARGET")
"""The CANDOR_ variables a test process keeps: the run's models folder (tests/conftest.py) and, when
a run is made for another CPU's int8 file (`CANDOR_ONNX_TARGET=avx2 make test`), that target."""


def process_env(**env: str) -> dict[str, str]:
    """The caller's environment without CANDOR_/OPENAI_ variables (but `SHARED`), with `env` on top."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CANDOR_", "OPENAI_")) or k in SHARED}
    base.update(env)
    return base


def run_cli(
    candor: Candor, home: Path, *args: str, timeout: float = 300, input_text: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """`candor ARGS` with `CANDOR_HOME=home`, the session's database (CANDOR_DATABASE_URL), no other
    CANDOR_/OPENAI_ variable of the caller's (but the models folder), and `env` on top. Output is
    decoded as is: not in text mode, which would turn a CSV's quoted "\\r\\n" into "\\n"."""
    url = candor.store.engine.url.render_as_string(hide_password=False)
    base = process_env(CANDOR_HOME=str(home), CANDOR_DATABASE_URL=url, HF_HUB_OFFLINE="1", **env)
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", *args],
        cwd=home,
        env=base,
        capture_output=True,
        timeout=timeout,
        input=None if input_text is None else input_text.encode(),
    )
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def run_cli_on_terminal(candor: Candor, home: Path, *args: str, timeout: float = 300, **env: str) -> tuple[int, str]:
    """`candor ARGS` as `run_cli`, its stdout a terminal (a pseudo-terminal this process reads), so
    what only a person at a terminal sees (a progress bar) is shown. (exit status, stdout as written)."""
    url = candor.store.engine.url.render_as_string(hide_password=False)
    base = process_env(CANDOR_HOME=str(home), CANDOR_DATABASE_URL=url, HF_HUB_OFFLINE="1", COLUMNS="120", **env)
    base.pop("NO_COLOR", None)
    base["TERM"] = "xterm-256color"
    reader, writer = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", *args], cwd=home, env=base, stdout=writer, stderr=subprocess.DEVNULL
    )
    os.close(writer)
    chunks = []
    while True:
        try:
            chunk = os.read(reader, 65536)
        except OSError:  # the terminal is closed once the process and its children have exited
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(reader)
    return process.wait(timeout=timeout), b"".join(chunks).decode(errors="replace")
