"""`candor` as its own process, the way a person runs it, on the test session's database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rag.runtime import Candor


def run_cli(
    candor: Candor, home: Path, *args: str, timeout: float = 300, **env: str
) -> subprocess.CompletedProcess[str]:
    """`candor ARGS` with `CANDOR_HOME=home`, the session's database (CANDOR_DATABASE_URL), no other
    CANDOR_/OPENAI_ variable of the caller's, and `env` on top. Output is decoded as is: not in text
    mode, which would turn a CSV's quoted "\\r\\n" into "\\n"."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CANDOR_", "OPENAI_"))}
    url = candor.store.engine.url.render_as_string(hide_password=False)
    base.update(CANDOR_HOME=str(home), CANDOR_DATABASE_URL=url, HF_HUB_OFFLINE="1", **env)
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", *args], cwd=home, env=base, capture_output=True, timeout=timeout
    )
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())
