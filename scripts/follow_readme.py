"""Follow the README as a newcomer would: `scripts/check_readme.py --run` (tests/integration/cli/test_readme_runs.py).

Every line of its ```sh blocks runs in order, from the repository root, with `CANDOR_HOME` a fresh
temporary folder, no other `CANDOR_*` variable and `HF_HUB_OFFLINE=1`; the run stops at the first
failure and names the README line.

- `path/to/your/docs` becomes a folder holding one small Markdown document (`YOUR_TEXT`), and a
  `candor ask` on the knowledge base it was ingested into must answer with a citation ("[1]")
  naming that document; a README that never asks one fails before anything runs.
- `candor serve` is started, the chat page fetched on the port the README's comment gives (200 and
  the page), and stopped.
- A line is skipped, and said so, only when the README marks it at the end of its comment:
  `needs: slack-credentials` or `needs: teams-credentials`; `(runs this README too)` (`make test`
  runs this check: it would recurse); `(instead of ...)` (an alternative to the line before, such
  as `make demo TORCH_INDEX=...`). A synopsis not meant to be run goes in a ```text block
  (check_readme.py still checks its commands).
- `reuse_venv` (`--reuse-venv`) keeps an existing `.venv` as it is (`make -o .venv/bin/candor`),
  for the test suite that runs inside it; from a fresh clone `make demo` builds it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^(```|~~~)([^\n]*)\n(.*?)^\1", re.MULTILINE | re.DOTALL)
RUN = {"sh", "bash", "shell"}
SKIPS = (
    (re.compile(r"\bneeds: (slack|teams)-credentials$"), "needs {0} credentials"),
    (re.compile(r"\(runs this README too\)$"), "runs this README too, so running it here would recurse"),
    (re.compile(r"\((instead of [^)]*)\)$"), "an alternative: {0}"),
)
"""The README's markers for a line not to run (at the end of its comment), and what is said instead."""
PLACEHOLDER = "path/to/your/docs"
YOUR_DOC = "new-starters.md"
YOUR_TITLE = "Leave for new starters"
YOUR_TEXT = f"""# {YOUR_TITLE}

New starters get 22 days of annual leave in their first year, rising to 25 days after two years of
service. Leave is booked through the team calendar at least one week ahead.

## Parental leave

Parents get 26 weeks of parental leave on full pay, whatever their length of service.
"""
"""The document that stands in for a newcomer's own (`path/to/your/docs`)."""
SERVE = re.compile(r"(?:^|[\s/])candor\s+serve\b")
ASK = re.compile(r"(?:^|[\s/])candor\s+ask\b")
INGEST = re.compile(r"(?:^|[\s/])candor\s+ingest\b")
KB = re.compile(r"--kb[= ](\S+)")
URL = re.compile(r"https?://([\w.-]+):(\d+)(/\S*)?")


@dataclass(frozen=True)
class Step:
    """One command line of a ```sh block: where it starts in the README, the command, its comment, and
    why it is not run (None: it is)."""

    line: int
    command: str
    comment: str = ""
    skip: str | None = None


def split_comment(line: str) -> tuple[str, str]:
    """A shell line's command and its trailing `# comment` (a `#` inside quotes or a word is kept)."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].strip(), line[i + 1 :].strip()
    return line.strip(), ""


def skip_reason(comment: str) -> str | None:
    for marker, reason in SKIPS:
        if found := marker.search(comment):
            return reason.format(*found.groups())
    return None


def steps(text: str) -> list[Step]:
    """Every command line of the README's ```sh blocks, in order; continuation lines joined."""
    found: list[Step] = []
    for block in FENCE.finditer(text):
        if block[2].strip() not in RUN:
            continue
        number = text.count("\n", 0, block.start(3)) + 1
        pending: tuple[int, str] | None = None
        for offset, raw in enumerate(block[3].splitlines()):
            start, head = pending if pending else (number + offset, "")
            if raw.endswith("\\"):
                pending = (start, head + raw[:-1] + " ")
                continue
            pending = None
            command, comment = split_comment(head + raw)
            if command:
                found.append(Step(start, " ".join(command.split()), comment, skip_reason(comment)))
    return found


def kb_of(command: str) -> str:
    return found[1] if (found := KB.search(command)) else "default"


def own_question_problems(readme_steps: list[Step]) -> list[str]:
    """The README's promise: your documents ingested, then a question asked of them."""
    ingested = {
        kb_of(s.command) for s in readme_steps if not s.skip and INGEST.search(s.command) and PLACEHOLDER in s.command
    }
    if not ingested:
        return [f"no ```sh line ingests {PLACEHOLDER} (the newcomer's own documents)"]
    asked = [s for s in readme_steps if not s.skip and ASK.search(s.command) and kb_of(s.command) in ingested]
    return [] if asked else [f"no ```sh line asks a question of the knowledge base {PLACEHOLDER} goes into"]


def substituted(command: str, docs: Path) -> str:
    return command.replace(PLACEHOLDER, shlex.quote(str(docs)))


class RunFailed(Exception):
    """A README line that did not do what it says; the message names the line."""


@dataclass
class Run:
    """Follows the README's steps in a fresh home (`home`), your documents in `docs`."""

    repo: Path
    readme: Path
    home: Path
    docs: Path
    reuse_venv: bool = False
    timeout: float = 600

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CANDOR_")}
        return env | {"CANDOR_HOME": str(self.home), "HF_HUB_OFFLINE": "1"}

    def where(self, step: Step) -> str:
        return f"{self.readme.name} line {step.line}: `{step.command}`"

    def command(self, step: Step) -> str:
        command = substituted(step.command, self.docs)
        if self.reuse_venv and command.startswith("make ") and (self.repo / ".venv" / "bin" / "candor").exists():
            command = "make -o .venv/bin/candor -o .venv/.test-extras " + command[5:]
        return command

    def follow(self, readme_steps: list[Step]) -> None:
        ingested: set[str] = set()
        for step in readme_steps:
            if step.skip:
                print(f"{self.where(step)}: skipped ({step.skip})")
                continue
            started = time.monotonic()
            if SERVE.search(step.command):
                self.serve(step)
            else:
                output = self.run(step)
                if INGEST.search(step.command) and PLACEHOLDER in step.command:
                    ingested.add(kb_of(step.command))
                if ASK.search(step.command) and kb_of(step.command) in ingested:
                    self.check_cited(step, output)
            print(f"{self.where(step)}: ok ({time.monotonic() - started:.0f} s)")

    def run(self, step: Step) -> str:
        try:
            done = subprocess.run(
                ["sh", "-c", self.command(step)],
                cwd=self.repo,
                env=self.env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=self.timeout,
            )
        except subprocess.TimeoutExpired as exc:
            raise RunFailed(f"{self.where(step)} did not finish in {self.timeout:.0f} s") from exc
        if done.returncode != 0:
            raise RunFailed(f"{self.where(step)} exited with status {done.returncode}:\n{_tail(done.stdout)}")
        return done.stdout

    def check_cited(self, step: Step, output: str) -> None:
        if "[1]" not in output:
            raise RunFailed(f"{self.where(step)}: the answer cites nothing (no [1]):\n{_tail(output)}")
        if YOUR_DOC not in output and YOUR_TITLE not in output:
            raise RunFailed(f"{self.where(step)}: no source is {YOUR_DOC} ({YOUR_TITLE!r}):\n{_tail(output)}")

    def serve(self, step: Step) -> None:
        """Start the server, fetch the chat page on the README's port, stop the server."""
        found = URL.search(step.comment) or URL.search(step.command)
        host, port, path = (found[1], int(found[2]), found[3] or "/") if found else ("127.0.0.1", 8080, "/")
        with socket.socket() as probe:
            if probe.connect_ex((host, port)) == 0:
                raise RunFailed(f"{self.where(step)}: port {port} is already in use, so the server cannot start")
        log = self.home.parent / "serve.log"
        with log.open("w") as out:
            server = subprocess.Popen(
                ["sh", "-c", "exec " + self.command(step)],
                cwd=self.repo,
                env=self.env(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            page = self.fetch(step, server, f"http://{host}:{port}{path}", log)
        finally:
            _stop(server)
        if "<title>Candor" not in page:
            raise RunFailed(f"{self.where(step)}: http://{host}:{port}{path} is not the chat page:\n{_tail(page)}")

    def fetch(self, step: Step, server: subprocess.Popen[bytes], url: str, log: Path) -> str:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise RunFailed(f"{self.where(step)} exited with status {server.returncode}:\n{_tail(log.read_text())}")
            try:
                with urllib.request.urlopen(url, timeout=10) as response:
                    if response.status != 200:
                        raise RunFailed(f"{self.where(step)}: {url} answered {response.status}")
                    return str(response.read().decode("utf-8", "replace"))
            except OSError:  # not listening yet (or an HTTP error: urllib's HTTPError is an OSError)
                time.sleep(0.5)
        raise RunFailed(f"{self.where(step)}: {url} did not answer in {self.timeout:.0f} s:\n{_tail(log.read_text())}")


def _tail(output: str, lines: int = 30) -> str:
    return "\n".join("    " + line for line in output.rstrip().splitlines()[-lines:])


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process's group (it shuts down gracefully), SIGKILL if it has not in 30 s."""
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        if process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue


def _stop_embedded_postgres(home: Path) -> None:
    """The home's embedded Postgres, if a step left it running (it stops with its last user)."""
    pidfile = home / "pgdata" / "postmaster.pid"
    try:
        pid = int(pidfile.read_text().split()[0])
        os.kill(pid, signal.SIGINT)  # Postgres's fast shutdown
    except (OSError, ValueError, IndexError):
        return
    deadline = time.monotonic() + 30
    while pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.2)


def prepare(run: Run) -> None:
    """The fresh home and the folder of "your" documents, holding `YOUR_DOC`."""
    run.home.mkdir(parents=True)
    run.docs.mkdir(parents=True)
    (run.docs / YOUR_DOC).write_text(YOUR_TEXT, encoding="utf-8")


def follow(readme: Path, repo: Path = REPO, *, reuse_venv: bool = False, timeout: float = 600) -> list[str]:
    """Run the README's steps in a fresh home; the problems (at most one: the run stops there)."""
    readme_steps = steps(readme.read_text(encoding="utf-8"))
    found = own_question_problems(readme_steps)
    if found:
        return found
    work = Path(tempfile.mkdtemp(prefix="candor-readme-"))
    run = Run(repo, readme, work / "home", work / "docs", reuse_venv=reuse_venv, timeout=timeout)
    prepare(run)
    print(f"following {readme.name} with CANDOR_HOME={run.home} and {PLACEHOLDER} = {run.docs}")
    try:
        run.follow(readme_steps)
    except RunFailed as exc:
        return [str(exc)]
    finally:
        _stop_embedded_postgres(run.home)
        shutil.rmtree(work, ignore_errors=True)
    return []
