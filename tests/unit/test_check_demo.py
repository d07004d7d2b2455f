"""`scripts/check_demo.py`: CI's check that `make demo` answered, on logs of the demo's shape."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from tests.conftest import REPO


def _checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_demo", REPO / "scripts" / "check_demo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LEAVE = "How many days of annual leave do full-time employees get?"
SALARY = "What is the salary band for an L3 Senior Software Engineer?"
GOOD = f"""Candor demo: knowledge base 'handbook' in /tmp/h
Q: {LEAVE}  [public]
   Full-time employees receive 24 days of paid annual leave per calendar year. [1]
   route: answered · 37 ms · trace 1

Q: {SALARY}  [public]
   I don't know - the knowledge base does not cover this.
   route: abstained · 12 ms · trace 2

Q: {SALARY}  [as hr-confidential]
   The salary band for an L3 Senior Software Engineer runs from £58,000 to £76,000. [1]
   route: answered · 12 ms · trace 3
"""


def test_a_demo_that_answered_passes(tmp_path: Path) -> None:
    log = tmp_path / "demo.log"
    log.write_text(GOOD)
    assert _checker().main(["check_demo.py", str(log)]) == 0


def test_a_demo_that_answered_nothing_fails() -> None:
    abstained = GOOD.replace("route: answered", "route: abstained")
    assert "no question was answered (no 'route: answered' line)" in _checker().problems(abstained)


def test_an_expected_answer_given_with_low_confidence_fails() -> None:
    low = GOOD.replace("trace 1", "trace 1").replace("   route: answered · 37 ms", "   route: low_confidence · 37 ms")
    assert _checker().problems(low) == [f"{LEAVE!r} was not answered"]


def test_a_wrong_or_uncited_answer_fails() -> None:
    check = _checker()
    assert check.problems(GOOD.replace("24 days", "20 days")) == [f"the answer to {LEAVE!r} does not say '24 days'"]
    uncited = GOOD.replace("calendar year. [1]", "calendar year.")
    assert check.problems(uncited) == [f"the answer to {LEAVE!r} cites nothing"]


def test_a_crashed_or_empty_demo_fails(tmp_path: Path) -> None:
    check = _checker()
    assert len(check.problems("")) == 3  # nothing answered, neither question asked
    assert "a traceback was printed" in check.problems(GOOD + "Traceback (most recent call last):\n")
    missing = tmp_path / "empty.log"
    missing.write_text("error: cannot load embedding model\n")
    assert check.main(["check_demo.py", str(missing)]) == 1
