"""`bot.slack.progress`: the pure parts, with a clock the test moves: when a status may be set, which
one, and how a stage reads as a status."""

from __future__ import annotations

import itertools

from bot.slack.progress import STATUS_EVERY_SECONDS, THINKING_STATUS, Coalescer, status_text
from rag.model.progress import Stage


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_stage_reads_after_the_apps_name() -> None:
    assert status_text(Stage("retrieve", "Searching the documents")) == "is searching the documents…"
    assert status_text(Stage("critic", "Checking 4 sentences", count=4)) == "is checking 4 sentences…"


def test_the_first_status_goes_at_once() -> None:
    coalescer = Coalescer(1.0, Clock())
    coalescer.offer("is searching the documents…")
    assert coalescer.wait() == 0.0
    assert coalescer.take() == "is searching the documents…"
    assert (coalescer.wait(), coalescer.take()) == (None, None)


def test_statuses_offered_within_a_second_wait_and_only_the_latest_goes() -> None:
    clock = Clock()
    coalescer = Coalescer(1.0, clock)
    coalescer.sent(THINKING_STATUS)
    clock.now += 0.125
    coalescer.offer("is reading the question…")
    clock.now += 0.125
    coalescer.offer("is searching the documents…")
    assert coalescer.wait() == 0.75
    assert coalescer.take() is None, "not before a second has passed"
    clock.now += 0.25
    coalescer.offer("is ranking 12 passages…")
    assert coalescer.wait() == 0.5
    clock.now += 0.5
    assert coalescer.take() == "is ranking 12 passages…"
    assert coalescer.wait() is None


def test_updates_are_at_least_the_interval_apart_however_often_stages_come() -> None:
    clock = Clock()
    coalescer = Coalescer(STATUS_EVERY_SECONDS, clock)
    sent: list[tuple[float, str]] = []
    for tick in range(40):  # a stage every 1/8 s for 5 s
        coalescer.offer(f"is at stage {tick}…")
        text = coalescer.take()
        if text is not None:
            sent.append((clock.now, text))
        clock.now += 0.125
    times = [at for at, _ in sent]
    assert all(b - a >= STATUS_EVERY_SECONDS for a, b in itertools.pairwise(times))
    assert [text for _, text in sent] == [f"is at stage {tick}…" for tick in (0, 8, 16, 24, 32)]
    assert coalescer.take() == "is at stage 39…", "the latest of those that waited, not the ones between"


def test_a_status_equal_to_the_one_showing_is_not_set_again() -> None:
    clock = Clock()
    coalescer = Coalescer(1.0, clock)
    coalescer.sent("is searching the documents…")
    clock.now += 5
    coalescer.offer("is searching the documents…")
    assert coalescer.wait() is None
    coalescer.offer("is writing the answer…")
    coalescer.offer("is searching the documents…")  # back to what shows before the other went
    assert coalescer.take() is None and coalescer.wait() is None
