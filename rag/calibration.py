"""Gate thresholds from rag/calibration.json, which `benchmarks/calibrate.py` writes from data other
than what we report on. Settings (rag/config/) take their defaults from here; a CANDOR_*
variable overrides one."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

CALIBRATION = Path(__file__).with_name("calibration.json")
"""Gate thresholds chosen by `benchmarks/calibrate.py` (on data other than what we report on)."""


@cache
def _calibration() -> dict[str, object]:
    try:
        loaded = json.loads(CALIBRATION.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def calibrated(key: str, fallback: float) -> float:
    """A threshold from rag/calibration.json, or `fallback` before any calibration has run."""
    value = _calibration().get(key)
    return float(value) if isinstance(value, int | float) else fallback


def calibration_record(key: str) -> dict[str, object]:
    """A benchmark's entry in rag/calibration.json (what it measured), or {} when it has not run."""
    value = _calibration().get(key)
    return dict(value) if isinstance(value, dict) else {}
