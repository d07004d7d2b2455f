"""Known failures of one implementation under a shared contract, kept visible instead of deleted.

A contract states what every implementation must do; when one does not (yet), its subclass names
the failing cases in `known_failures` and each runs as an xfail. Strict ones turn into a failure the
day the implementation is fixed, so the entry cannot outlive the bug.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import pytest


class KnownFailures:
    """Mixin for contract suites; subclasses map test names to the xfail mark they expect."""

    known_failures: ClassVar[Mapping[str, pytest.MarkDecorator]] = {}
    """Test name as pytest shows it, parameters included ("test_x[param-id]") → `pytest.mark.xfail(...)`."""

    @pytest.fixture(autouse=True)
    def _expect_known_failure(self, request: pytest.FixtureRequest) -> None:
        mark = self.known_failures.get(request.node.name)
        if mark is not None:
            request.applymarker(mark)

    def test_known_failures_name_tests_of_this_suite(self) -> None:
        for name in self.known_failures:
            test = getattr(self, name.split("[", 1)[0], None)
            assert name.startswith("test_") and callable(test), f"known failure {name!r} names no test"
