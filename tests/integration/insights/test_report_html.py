"""`candor report --html` end to end: answers seeded through the real pipeline, the page written by the
command as its own process, then opened in headless Chromium (a screenshot and the rendered DOM).

The seeding reuses tests/integration/insights/test_report.py's helpers: questions from several platforms
scoped to a fresh knowledge base (answered, unanswerable, a careless writer the retry fixes), votes,
and a stored `candor eval` run; the traces are then moved to three days of June 2021 so there are
periods to trend. The report is asked for that knowledge base only, so other tests' traffic in the
same database does not change it.

Chromium is required, not optional: without it the test fails and says how to install it (`make test`
installs Debian's `chromium`: scripts/ensure_chromium.sh).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from PIL import Image

from bot.render.report_html import render_html
from rag.insights.evaluation.golden import load_golden
from rag.insights.evaluation.run import run_eval, summarise
from rag.insights.report.build import build_report, report_window
from rag.model.answers import Feedback
from rag.model.types import AccessScope, Passage
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.conftest import REPO, SAMPLE
from tests.integration.insights.test_report import GOLDEN_IDS, execute, run_cli, scoped
from tests.integration.pipeline.test_answer_pipeline import CarelessWriter, careless

pytestmark = pytest.mark.slow

SINCE, UNTIL = "2021-06-01", "2021-06-20"
DAYS = (
    datetime(2021, 6, 7, 9, 0, tzinfo=UTC),
    datetime(2021, 6, 9, 10, 0, tzinfo=UTC),
    datetime(2021, 6, 15, 11, 0, tzinfo=UTC),
)
QUESTIONS = (
    ("How much paid parental leave does the primary carer get?", "slack", 0),
    ("How many days of annual leave do full-time employees get?", "teams", 0),
    ("What is the vesting schedule for employee stock options?", "web", 1),
    ("How much does the Platinum plan cost per month?", "slack", 1),
    ("What is the minimum password length for company accounts?", "cli", 2),
    ("How many days a year can I work from another country?", "web", 2),
)
PALETTE = {"blue": (0, 114, 178), "vermillion": (213, 94, 0), "green": (0, 158, 115)}
"""The first three colours of `bot.render.svg_charts.COLOURS`: the route-share bars are drawn in them."""


async def seed(candor: Candor, kb: KnowledgeBase) -> None:
    """A few days of answers in `kb`, through the real pipeline, with votes and an eval run."""
    assert (await candor.ingestor().ingest([SAMPLE], kb=kb)).ok
    await candor.store.analyze()
    when: dict[str, datetime] = {}
    for n, (question, platform, day) in enumerate(QUESTIONS):
        answer = await candor.answer(scoped(kb, question, platform))
        when[answer.trace_id] = DAYS[day] + timedelta(minutes=n)
        if n % 2 == 0:
            await candor.record_feedback(Feedback(answer.trace_id, "up" if n else "down", user=f"U{n}"))
    retried = await careless(candor, CarelessWriter()).answer(
        scoped(kb, "What is the minimum password length?", "teams")
    )
    when[retried.trace_id] = DAYS[1] + timedelta(hours=1)

    golden = REPO / "sample" / "golden.yaml"
    items = [item for item in load_golden(golden) if item.id in GOLDEN_IDS]

    async def search(query: str, scope: AccessScope) -> list[Passage]:
        return await candor.retriever.run(query, scope, k=5)

    results = await run_eval(items, candor.answer, search, kb=kb.name)
    summary = summarise(results)
    for day in DAYS[1:]:
        run = await candor.tracker.record_eval_run(
            golden=str(golden), knowledge_base=kb.name, config={}, summary=summary, per_question=[]
        )
        await execute(candor, "UPDATE eval_runs SET created_at = :at WHERE id = :id", {"at": day, "id": run})
    for trace_id, at in when.items():
        await execute(
            candor, "UPDATE traces SET created_at = :at WHERE id = CAST(:id AS uuid)", {"at": at, "id": trace_id}
        )


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    """Headless Chromium with no network of its own and a fresh profile; fails the test when missing."""
    binary = shutil.which("chromium")
    if binary is None:
        pytest.fail(
            "chromium is not installed, and the HTML report test needs it: "
            "apt-get install -y --no-install-recommends chromium (make test does this: scripts/ensure_chromium.sh)"
        )
    command = [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        f"--user-data-dir={profile}",
        *args,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def near(pixel: tuple[int, int, int], colour: tuple[int, int, int], tolerance: int = 24) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, colour, strict=True))


async def test_the_page_written_by_the_command_renders_its_charts_in_a_browser(
    candor: Candor, kb: KnowledgeBase, tmp_path: Path
) -> None:
    await seed(candor, kb)
    page = tmp_path / "out" / "report.html"
    page.parent.mkdir()
    window = ("--since", SINCE, "--until", UNTIL, "--kb", kb.name, "--by", "day")

    both = run_cli(candor, tmp_path, "report", *window, "--json", "--html", str(page))
    assert both.returncode == 0, both.stderr
    reported = json.loads(both.stdout)
    assert f"wrote the report page to {page}" in both.stderr, "with --json, stdout is only the JSON"
    in_process = await build_report(candor.tracker.engine, report_window(SINCE, UNTIL, by="day", kb=kb.name))
    assert reported == in_process
    html = page.read_text(encoding="utf-8")
    assert html == render_html(reported), "the page is the renderer's, of the very object --json printed"
    assert [p.name for p in page.parent.iterdir()] == ["report.html"], "written through a temporary file"
    assert len(reported["periods"]) == 3 and reported["total"]["questions"] == len(QUESTIONS) + 1
    assert reported["total"]["first_pass"]["rejected"]["n"] >= 1 and len(reported["eval_runs"]) == 2

    alone = run_cli(candor, tmp_path, "report", *window, "--html", str(tmp_path / "alone.html"))
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout.strip() == f"wrote the report page to {tmp_path / 'alone.html'}", "one line, no tables"

    shot = tmp_path / "report.png"
    chromium("--window-size=1280,2000", "--hide-scrollbars", f"--screenshot={shot}", page.as_uri(),
             profile=tmp_path / "profile-shot")  # fmt: skip
    assert shot.is_file() and shot.stat().st_size > 10_000
    with Image.open(shot) as opened:
        image = opened.convert("RGB")
    assert image.size == (1280, 2000)
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 200, "a blank or flat page has a handful of colours"
    pixels = list(image.getdata())
    width = image.size[0]
    charts = pixels[500 * width :]  # below the header's cards: where the trend charts are
    background = (255, 255, 255)
    assert sum(p != background for p in charts) > len(charts) // 50, "the chart region is not empty"
    for name, colour in PALETTE.items():
        assert sum(near(p, colour) for p in charts) > 300, f"no {name} marks: the series colours were not painted"

    dom = chromium("--dump-dom", page.as_uri(), profile=tmp_path / "profile-dom").stdout
    svgs = re.findall(r"<svg[^>]*>.*?</svg>", dom, re.DOTALL)
    assert len(svgs) >= 7, "the trend, feedback, latency and eval charts are in the rendered DOM"
    for svg in svgs:
        assert 'role="img"' in svg.split(">")[0] and re.match(r"<svg[^>]*><title>[^<]+</title>", svg)
    titles = [re.search(r"<title>([^<]+)</title>", svg).group(1) for svg in svgs]  # type: ignore[union-attr]
    for expected in ("Route shares per period", "Faithfulness gate", "Eval runs: key metrics per run"):
        assert any(t.startswith(expected) for t in titles), f"{expected!r} chart missing from {titles}"
    assert "2021-06-07" in dom and "2021-06-15" in dom and kb.name in dom
