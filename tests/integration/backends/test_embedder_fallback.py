"""The default embedder is never a dead end: a damaged cache is repaired, a failed backend falls
back to the next (int8 ONNX, float ONNX, torch) with one warning line, and the backend in use is
what `/healthz` and the answer path report.

Real exports on this machine, real ONNX Runtime loads; the failures are made the way they happen
to users: a file overwritten or cut short, a crash that left no manifest and a staging folder
behind, a target the exporter does not know (as after an exporter change), a models folder that
cannot be created.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rag.backends.embeddings import SentenceTransformerEmbedder, backend_in_use
from rag.backends.onnx_export import MANIFEST, Export, detect_target, variant_folder
from rag.backends.onnx_runner import OnnxRunner
from rag.config import PACKAGED_MINILM, load_settings
from rag.model.answers import Question
from rag.model.types import AccessScope
from rag.runtime import Candor, open_candor
from tests.cli import process_env

LEAVE = "How many days of annual leave do employees get?"
TARGET = "avx2"
"""The target these tests export for: the one whose file name the old code got wrong."""


async def _export(cache: Path) -> tuple[Path, np.ndarray]:
    """An int8 export in `cache`, its folder and the vector it gives for LEAVE."""
    embedder = SentenceTransformerEmbedder(PACKAGED_MINILM, backend="onnx-int8", cache_dir=cache, onnx_target=TARGET)
    vector = await embedder.embed([LEAVE])
    runner = embedder._load()
    assert isinstance(runner, OnnxRunner)
    await embedder.aclose()
    return runner.onnx_file.parent.parent, vector


async def _reload(cache: Path) -> tuple[SentenceTransformerEmbedder, np.ndarray]:
    embedder = SentenceTransformerEmbedder(PACKAGED_MINILM, backend="onnx-int8", cache_dir=cache, onnx_target=TARGET)
    return embedder, await embedder.embed([LEAVE])


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean export, copied by each test that damages one (exporting costs seconds)."""
    import asyncio

    cache = tmp_path_factory.mktemp("clean-export")
    asyncio.run(_export(cache))
    return cache


def _copy(exported: Path, tmp_path: Path) -> tuple[Path, Export]:
    import shutil

    cache = tmp_path / "models"
    shutil.copytree(exported, cache)
    (folder,) = cache.glob(f"*-onnx-int8-{TARGET}")
    made = Export.read(folder)
    assert made is not None
    return cache, made


@pytest.mark.parametrize(
    ("cpuinfo", "machine", "target"),
    [
        ("flags\t\t: fpu sse2 avx avx2 fma", "x86_64", "avx2"),
        ("flags\t\t: fpu avx2 avx512f avx512bw avx512_vnni", "x86_64", "avx512_vnni"),
        # signed weights would run on VPMADDUBSW here, which can saturate: the exact u8u8 file
        ("flags\t\t: fpu avx2 avx512f avx512bw", "x86_64", "avx2"),
        ("flags\t\t: fpu sse2 sse4_2 avx", "x86_64", "avx2"),
        ("", "x86_64", "avx2"),  # no /proc/cpuinfo (macOS, Windows)
        ("model name\t: avx512_vnni in a name\nflags\t\t: fpu sse2", "x86_64", "avx2"),  # flags lines only
        ("Features\t: fp asimd evtstrm aes", "aarch64", "arm64"),
        ("isa\t\t: rv64imafdc", "riscv64", None),
    ],
)
def test_the_int8_target_is_read_off_the_cpu(cpuinfo: str, machine: str, target: str | None) -> None:
    assert detect_target(cpuinfo, machine) == target


async def test_a_file_overwritten_in_the_cache_is_exported_again(exported: Path, tmp_path: Path) -> None:
    cache, made = _copy(exported, tmp_path)
    _, clean = await _reload(exported)
    made.path.write_bytes(b"\0" * made.size)  # same size, other bytes: the SHA-256 tells
    embedder, vector = await _reload(cache)
    assert embedder.backend_in_use == f"onnx-int8 ({TARGET})"
    np.testing.assert_allclose(vector, clean, atol=1e-5)
    assert Export.read(made.folder) is not None


async def test_a_file_cut_short_is_exported_again(exported: Path, tmp_path: Path) -> None:
    cache, made = _copy(exported, tmp_path)
    made.path.write_bytes(made.path.read_bytes()[: made.size // 2])
    embedder, vector = await _reload(cache)
    assert embedder.backend_in_use == f"onnx-int8 ({TARGET})" and vector.shape == (1, 384)
    assert made.path.stat().st_size == made.size


async def test_a_file_that_matches_its_manifest_but_does_not_load_is_exported_again(
    exported: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Damage the manifest cannot see (written with the damaged file's digest): ONNX Runtime's
    refusal to load it is what sends it back to the exporter."""
    import hashlib

    cache, made = _copy(exported, tmp_path)
    garbage = b"not an onnx graph" * 100
    made.path.write_bytes(garbage)
    manifest = json.loads((made.folder / MANIFEST).read_text())
    manifest.update(size=len(garbage), sha256=hashlib.sha256(garbage).hexdigest())
    (made.folder / MANIFEST).write_text(json.dumps(manifest))
    with caplog.at_level(logging.WARNING, logger="rag.backends.onnx_export"):
        embedder, vector = await _reload(cache)
    assert "does not load" in caplog.text and "exporting it again" in caplog.text
    assert embedder.backend_in_use == f"onnx-int8 ({TARGET})" and vector.shape == (1, 384)
    repaired = Export.read(made.folder)
    assert repaired is not None and repaired.size > 1_000_000


async def test_a_damaged_tokenizer_is_exported_again(exported: Path, tmp_path: Path) -> None:
    """The runner's tokenizer is checked by its digest too: cut short, it would fail to parse; edited,
    it would give other vectors silently."""
    cache, made = _copy(exported, tmp_path)
    _, clean = await _reload(exported)
    tokenizer = made.folder / "candor-tokenizer.json"
    tokenizer.write_text(tokenizer.read_text().replace('"lowercase":true', '"lowercase":false'))
    embedder, vector = await _reload(cache)
    assert embedder.backend_in_use == f"onnx-int8 ({TARGET})"
    np.testing.assert_allclose(vector, clean, atol=1e-5)
    assert Export.read(made.folder) is not None


async def test_a_complete_export_loads_where_no_lock_can_be_taken(exported: Path, tmp_path: Path) -> None:
    """A models folder made at build time and mounted read-only: nothing needs writing, so nothing
    is (the lock file cannot be made here, as it cannot on a read-only mount)."""
    cache, made = _copy(exported, tmp_path)
    (cache / ".export.lock").unlink(missing_ok=True)
    (cache / ".export.lock").mkdir()  # the lock cannot be opened
    before = sorted(p.name for p in made.folder.rglob("*"))
    embedder, vector = await _reload(cache)
    assert embedder.backend_in_use == f"onnx-int8 ({TARGET})" and vector.shape == (1, 384)
    assert sorted(p.name for p in made.folder.rglob("*")) == before


async def test_a_crash_mid_export_leaves_nothing_that_is_reused(exported: Path, tmp_path: Path) -> None:
    """No manifest (written last) means incomplete; a crashed export's staging folder is removed."""
    cache, made = _copy(exported, tmp_path)
    (made.folder / MANIFEST).unlink()
    made.path.write_bytes(b"half")
    staging = cache / f".{made.folder.name}-k1ll3d"
    (staging / "onnx").mkdir(parents=True)
    (staging / "onnx" / "model.onnx").write_bytes(b"half an export")
    embedder, vector = await _reload(cache)
    assert embedder.backend_in_use == f"onnx-int8 ({TARGET})" and vector.shape == (1, 384)
    assert Export.read(made.folder) is not None
    assert not staging.exists()
    assert [p.name for p in cache.iterdir() if p.name.startswith(".") and p.is_dir()] == []


async def test_an_int8_export_that_fails_falls_back_to_float_onnx(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A target the exporter does not know (as after a change in the exporter): float ONNX takes
    over, and one warning line says what failed and how to choose."""
    embedder = SentenceTransformerEmbedder(
        PACKAGED_MINILM, backend="onnx-int8", cache_dir=tmp_path / "models", onnx_target="riscv_v"
    )
    with caplog.at_level(logging.WARNING, logger="rag.backends.embeddings"):
        vector = await embedder.embed([LEAVE])
    assert embedder.backend_in_use == "onnx" and backend_in_use(embedder) == "onnx"
    torch_vector = await SentenceTransformerEmbedder(PACKAGED_MINILM, backend="torch").embed([LEAVE])
    np.testing.assert_allclose(vector, torch_vector, atol=1e-5)  # float ONNX gives the model's own vectors
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name == "rag.backends.embeddings"]
    assert len(warnings) == 1
    line = warnings[0].getMessage()
    assert "\n" not in line
    assert "onnx-int8 (riscv_v) failed" in line and "using onnx instead" in line
    assert "CANDOR_EMBEDDER_BACKEND" in line and "CANDOR_ONNX_TARGET" in line


async def test_no_writable_models_folder_falls_back_to_torch_and_still_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Neither ONNX variant can be exported (the models folder cannot be made): torch answers, the
    backend in use is in `/healthz`'s details, and the warning names both failures."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the models folder should go\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text("# Leave\n\nEmployees receive 25 days of paid annual leave per year.\n")
    settings = load_settings(home=tmp_path / "home", models_dir=blocker / "models", database_url=None)
    with caplog.at_level(logging.WARNING, logger="rag.backends.embeddings"):
        async with open_candor(settings) as candor:
            answer = await _ingest_and_ask(candor, docs)
            health = await candor.health()
    assert answer.route == "answered" and "25 days" in answer.text
    assert health["embedder_backend"] == "torch"
    (warning,) = [
        r.getMessage() for r in caplog.records if r.name == "rag.backends.embeddings" and r.levelno >= logging.WARNING
    ]
    assert "onnx-int8 (" in warning and "onnx failed" in warning and "using torch instead" in warning


async def _ingest_and_ask(candor: Candor, docs: Path) -> object:
    kb = await candor.knowledge_base("fallback", create=True)
    assert kb is not None
    await candor.ingestor().ingest([docs], kb=kb)
    scope = AccessScope(frozenset(), frozenset(["fallback"]))
    return await candor.answer(Question("How many days of annual leave do employees get?", scope=scope, platform="cli"))


def test_the_cli_falls_back_with_one_warning_line_and_answers(tmp_path: Path) -> None:
    """What a user on a machine where no export can be written sees: one warning, then the answer."""
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text("# Leave\n\nEmployees receive 25 days of paid annual leave per year.\n")
    env = process_env(CANDOR_HOME=str(tmp_path / "home"), CANDOR_MODELS_DIR=str(blocker / "m"), HF_HUB_OFFLINE="1")

    def candor(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "bot.cli", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )

    ingested = candor("ingest", str(docs), "--kb", "leave")
    assert ingested.returncode == 0, ingested.stderr
    asked = candor("ask", "How many days of annual leave do employees get?", "--kb", "leave")
    assert asked.returncode == 0, asked.stderr
    assert "25 days" in asked.stdout and "route: answered" in asked.stdout
    lines = [line for line in asked.stderr.splitlines() if "using torch instead" in line]
    assert len(lines) == 1 and "Traceback" not in asked.stderr, asked.stderr


def test_the_export_is_found_again_after_a_copy_that_keeps_whole_seconds(tmp_path: Path) -> None:
    """An image copies the model from its build stage to its final one, keeping times to the second
    only: the export made in the build stage must still be the one found (it was not: the folder
    name changed, the read-only image tried to export again and fell back to torch)."""
    model = tmp_path / "model"
    (model / "sub").mkdir(parents=True)
    for name, text in (("config.json", "{}"), ("sub/weights.bin", "0123456789")):
        (model / name).write_text(text)
        os.utime(model / name, ns=(1_700_000_000_123_456_789, 1_700_000_000_987_654_321))
    before = variant_folder(model, tmp_path / "models", "avx2")
    for name in ("config.json", "sub/weights.bin"):
        os.utime(model / name, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    assert variant_folder(model, tmp_path / "models", "avx2") == before
    (model / "sub" / "weights.bin").write_text("0123456789-changed")  # a changed model: a new export
    assert variant_folder(model, tmp_path / "models", "avx2") != before
    assert variant_folder(model, tmp_path / "models", None) != before
