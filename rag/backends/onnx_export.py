"""Export a sentence-transformers model to ONNX (float, or int8 for one CPU target) once, locally,
and load it.

Each variant has a folder of its own under `<CANDOR_HOME>/models/` (the packaged model lives in
site-packages, which is not ours to write): `<model>-<digest>-onnx-float` or
`<model>-<digest>-onnx-int8-<target>`. A folder is complete only when it holds `candor-export.json`,
written last; it names the ONNX file the exporter wrote (read back, not guessed: the exporter
names an int8 file after the weights' type, `model_quint8_avx2.onnx` but `model_qint8_avx512.onnx`),
its size and SHA-256, and the layout `rag.backends.onnx_runner.OnnxRunner` needs. An export is made in a
staging folder and renamed into place, so a crash leaves no half-written variant. A folder whose
manifest is missing or does not match its files (the ONNX file and the runner's tokenizer, both by
SHA-256), or whose file does not load, is exported again. A complete export loads without the
lock, so a read-only models folder made at build time (a container image) serves as it is.

Once exported, the copied torch weights and, for int8, the float export are deleted: the ONNX file
holds the weights (a home is ~25 MB instead of ~200 MB). A file lock makes a second process wait
for the first one's export instead of racing it. Nothing is downloaded.

A cached export whose layout the runner handles loads with ONNX Runtime and `tokenizers` only,
without importing sentence-transformers and torch (seconds of a cold `candor ask`); other layouts
load through sentence-transformers' own ONNX backend.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import platform
import shutil
import tempfile
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import fasteners

from rag.backends.onnx_runner import OnnxRunner, RunnerLayout
from rag.errors import EmbeddingError

log = logging.getLogger(__name__)

Target = Literal["arm64", "avx2", "avx512", "avx512_vnni"]
TARGETS: tuple[Target, ...] = ("arm64", "avx2", "avx512", "avx512_vnni")
"""The CPU targets sentence-transformers' int8 exporter knows (optimum's `AutoQuantizationConfig`)."""

MANIFEST = "candor-export.json"
_IN_PROCESS = threading.Lock()
_TOKENIZER = "candor-tokenizer.json"
_WEIGHTS = ("model.safetensors", "pytorch_model.bin")
_FLOAT = "onnx/model.onnx"


def detect_target(cpu_flags: str | None = None, machine: str | None = None) -> Target | None:
    """The int8 target for this CPU (or for the given `/proc/cpuinfo` text and `uname -m`), or None
    for an architecture no target fits.

    On x86-64 only a CPU with AVX-512 VNNI gets the signed-weights file made for it; every other
    x86-64 CPU (AVX2, AVX-512 without VNNI, one whose flags cannot be read: macOS, Windows) gets
    the AVX2 file. Its unsigned weights (u8u8) are computed exactly on any x86-64 CPU, while ONNX
    Runtime runs signed weights (u8s8) on AVX2 and AVX-512 without VNNI with VPMADDUBSW, which can
    saturate (ONNX Runtime's quantisation notes)."""
    machine = (machine if machine is not None else platform.machine()).lower()
    if machine in ("aarch64", "arm64"):
        return "arm64"
    if machine not in ("x86_64", "amd64", "i386", "i686", "x86"):
        return None
    if cpu_flags is None:
        try:
            cpu_flags = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpu_flags = ""
    flags = {word for line in cpu_flags.splitlines() if line.startswith("flags") for word in line.split()}
    if "avx512_vnni" in flags or "avx512vnni" in flags:
        return "avx512_vnni"
    return "avx2"


@dataclass(frozen=True)
class Export:
    """A complete variant in the cache, as its manifest describes it."""

    folder: Path
    file: str
    """The ONNX file the exporter wrote, relative to `folder`."""
    target: str | None
    """The int8 target, or None for the float export."""
    size: int
    sha256: str
    layout: RunnerLayout | None
    """None: not a layout `OnnxRunner` runs; loaded through sentence-transformers."""
    tokenizer_sha256: str | None = None
    """The SHA-256 of the runner's tokenizer file (with a layout)."""

    @property
    def path(self) -> Path:
        return self.folder / self.file

    def as_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "target": self.target,
            "size": self.size,
            "sha256": self.sha256,
            "layout": self.layout.as_json() if self.layout else None,
            "tokenizer_sha256": self.tokenizer_sha256,
        }

    @classmethod
    def read(cls, folder: Path) -> Export | None:
        """The folder's export if its manifest is readable and matches its file, else None (never
        exported, half written, or damaged)."""
        try:
            data = json.loads((folder / MANIFEST).read_text())
            file = data["file"]
            if not isinstance(file, str) or Path(file).is_absolute() or ".." in Path(file).parts:
                return None
            made = cls(
                folder=folder,
                file=file,
                target=data["target"],
                size=int(data["size"]),
                sha256=str(data["sha256"]),
                layout=RunnerLayout.from_json(data["layout"]) if data["layout"] is not None else None,
                tokenizer_sha256=data.get("tokenizer_sha256"),
            )
            if made.layout is not None and _sha256(folder / _TOKENIZER) != made.tokenizer_sha256:
                return None
            if made.path.stat().st_size != made.size or _sha256(made.path) != made.sha256:
                return None
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return made


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    noisy = [logging.getLogger(name) for name in ("sentence_transformers", "optimum", "transformers")]
    levels = [logger.level for logger in noisy]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for logger in noisy:
            logger.setLevel(logging.ERROR)
        try:
            yield
        finally:
            for logger, level in zip(noisy, levels, strict=True):
                logger.setLevel(level)


def variant_folder(source: Path, cache_dir: Path, target: str | None) -> Path:
    """Where the export of `source` for `target` (None: float) lives. The digest covers the model's
    path and its files' sizes and modification times, so a changed model is exported again. Times
    count in whole seconds: a container image's layers keep no more, and a model copied from one
    build stage to the next must find the export made beside it."""
    identity = [str(source.resolve())]
    for path in sorted(source.rglob("*")):
        if path.is_file() and "onnx" not in path.relative_to(source).parts:
            stat = path.stat()
            identity.append(f"{path.relative_to(source)}:{stat.st_size}:{int(stat.st_mtime)}")
    digest = hashlib.sha256("\n".join(identity).encode()).hexdigest()[:12]
    variant = f"int8-{target}" if target else "float"
    return cache_dir / f"{source.name}-{digest}-onnx-{variant}"


def export(source: Path, folder: Path, target: str | None) -> Export:
    """Export `source` into `folder` (replacing what is there) through a staging folder beside it.
    The caller holds the cache's lock."""
    from sentence_transformers import SentenceTransformer

    folder.parent.mkdir(parents=True, exist_ok=True)
    for stale in folder.parent.glob(f".{folder.name}-*"):  # a crashed export's (the caller holds the lock)
        shutil.rmtree(stale, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        log.info("exporting embedder to ONNX", extra={"model": str(source), "target": target or "float"})
        shutil.copytree(source, staging, dirs_exist_ok=True, ignore=shutil.ignore_patterns("onnx"))
        with _quiet():  # the exporter's tracer warnings and "saving is recommended" advice
            model = SentenceTransformer(str(staging), device="cpu", backend="onnx")
            if not (staging / _FLOAT).exists():
                model.save_pretrained(str(staging))
            file = _FLOAT
            if target:
                from sentence_transformers import export_dynamic_quantized_onnx_model

                before = set((staging / "onnx").glob("*.onnx"))
                export_dynamic_quantized_onnx_model(model, target, str(staging))
                written = sorted(set((staging / "onnx").glob("*.onnx")) - before)
                if len(written) != 1:
                    names = [path.name for path in written]
                    raise EmbeddingError(f"the int8 exporter for {target} wrote {names}, not one new ONNX file")
                file = str(written[0].relative_to(staging))
                (staging / _FLOAT).unlink()
        for name in _WEIGHTS:  # the ONNX file holds the weights
            (staging / name).unlink(missing_ok=True)
        found = RunnerLayout.of(model)
        tokenizer_sha256 = None
        if found is not None:
            (staging / _TOKENIZER).write_text(found[1])
            tokenizer_sha256 = _sha256(staging / _TOKENIZER)
        path = staging / file
        layout = found[0] if found else None
        made = Export(folder, file, target, path.stat().st_size, _sha256(path), layout, tokenizer_sha256)
        (staging / MANIFEST).write_text(json.dumps(made.as_json(), indent=2))  # last: the folder is complete
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("exported embedder to ONNX", extra={"file": str(made.path)})
    return made


def open_export(made: Export) -> Any:
    """The runner (or, for other layouts, the sentence-transformers model) for a complete export."""
    if made.layout is not None:
        runner = OnnxRunner.from_layout(made.path, (made.folder / _TOKENIZER).read_text(), made.layout)
        if runner is not None:
            return runner
    from sentence_transformers import SentenceTransformer

    with _quiet():
        model = SentenceTransformer(
            str(made.folder), device="cpu", backend="onnx", model_kwargs={"file_name": made.file}
        )
    return model


def load_onnx_model(model_path: str, *, target: str | None, cache_dir: Path | None) -> Any:
    """The model exported for `target` (None: float), from the cache or exported into it now.

    A cached export that is incomplete or does not load is exported again, once; errors from that
    second try (or from the export) reach the caller, which may fall back to another backend."""
    from rag.backends.onnx_runner import ort_errors

    source = Path(model_path)
    if cache_dir is None or not source.is_dir():  # a hub name: sentence-transformers' own cache
        from sentence_transformers import SentenceTransformer

        if target:
            raise EmbeddingError("an int8 export needs a local model folder and a cache folder")
        return SentenceTransformer(model_path, device="cpu", backend="onnx")
    folder = variant_folder(source, cache_dir, target)
    unloadable: tuple[type[Exception], ...] = (OSError, EmbeddingError, *ort_errors())
    made = Export.read(folder)
    if made is not None:  # no lock: a complete export in a read-only or shared folder loads as it is
        try:
            return open_export(made)
        except unloadable:
            pass  # damaged, or being replaced by another process: looked at again under the lock
    cache_dir.mkdir(parents=True, exist_ok=True)
    # the file lock is per process, the thread lock per thread: one export or repair at a time
    with _IN_PROCESS, fasteners.InterProcessLock(str(cache_dir / ".export.lock")):
        made = Export.read(folder)
        if made is not None:
            try:
                return open_export(made)
            except unloadable as exc:
                log.warning("the cached embedder export %s does not load (%s); exporting it again", made.path, exc)
        elif folder.exists():
            log.warning("the cached embedder export %s is incomplete; exporting it again", folder)
        return open_export(export(source, folder, target))
