"""The command line's start: `candor --help`, `candor --version` and a cold `candor ask`, process
start to exit, as a person trying the CLI waits for them.

    python benchmarks/cold_start.py [--home DIR] [--runs 5] [--backend onnx-int8] [--other DIR] [--no-ask]

`--help` and `--version` first: each a new process running what the `candor` script runs
(`from bot.cli import main; main()`), one warm-up round, then `--runs` rounds; medians. Then the
home gets the sample handbook (`make demo`'s knowledge base), and each run is a new
`python -m bot.cli ask ... --kb handbook` process (the embedded Postgres started and stopped by it,
the embedder's export already cached), timed from spawn to exit; medians over `--runs`. `--other
DIR` times the checkout in DIR the same way, interleaved run by run with this one (PYTHONPATH=DIR,
same virtual environment), for a before/after in one sitting. `--no-ask` stops after `--help` and
`--version`.

Then one instrumented process says where the time goes: interpreter start, `import bot.cli`, the
command line's and the core's imports (made when `ask` runs), opening the core (the embedded
server's start, the schema check), the model load, the answer, and closing (the server's stop).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUESTION = "How many days of annual leave do full-time employees get?"
CANDOR = "import sys; from bot.cli import main; sys.argv[0] = 'candor'; main()"
"""What the `candor` console script runs (pyproject.toml: `candor = "bot.cli:main"`)."""
STARTUP = {"candor --help": ["--help"], "candor --version": ["--version"]}

PHASES = r"""
import time
t0 = time.perf_counter()
import asyncio, json, sys
import bot.cli  # what `candor` imports before it parses its arguments
t1 = time.perf_counter()
import bot.cli.commands, bot.render.text  # the app, built to parse `ask`, and its renderer
t2 = time.perf_counter()
from rag.model.answers import Question
from rag.config import load_settings
from rag.runtime import open_candor
from rag.model.types import AccessScope
t3 = time.perf_counter()

async def main():
    phases = {
        "import bot.cli": t1 - t0,
        "import the command line (typer, rich, the commands)": t2 - t1,
        "import the core (settings, runtime, stages, SQLAlchemy)": t3 - t2,
    }
    settings = load_settings()
    start = time.perf_counter()
    opened = open_candor(settings)
    candor = await opened.__aenter__()
    phases["open (database start, schema check)"] = time.perf_counter() - start
    start = time.perf_counter()
    await candor.warm_up()
    phases["embedder load"] = time.perf_counter() - start
    start = time.perf_counter()
    scope = AccessScope(frozenset(), frozenset(["handbook"]))
    answer = await candor.answer(Question(sys.argv[1], scope=scope, platform="cli"))
    phases["answer (incl. trace write)"] = time.perf_counter() - start
    start = time.perf_counter()
    await opened.__aexit__(None, None, None)
    phases["close (database stop)"] = time.perf_counter() - start
    assert answer.route == "answered", answer.route
    print(json.dumps(phases))

asyncio.run(main())
"""


def env_for(home: Path, backend: str, pythonpath: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CANDOR_")}
    env.update(CANDOR_HOME=str(home), CANDOR_EMBEDDER_BACKEND=backend, HF_HUB_OFFLINE="1")
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return env


def timed_ask(env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "ask", QUESTION, "--kb", "handbook"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    took = time.perf_counter() - started
    if done.returncode != 0 or "route: answered" not in done.stdout:
        raise SystemExit(f"candor ask failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return took


def timed_startup(args: list[str], env: dict[str, str], cwd: Path) -> float:
    """One `candor ARGS` process that needs no database (`--help`, `--version`), spawn to exit."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CANDOR, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )
    took = time.perf_counter() - started
    if done.returncode != 0 or not done.stdout.strip():
        raise SystemExit(f"candor {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return took


def startup(variants: dict[str, dict[str, str]], cwd: Path, runs: int) -> None:
    """`candor --help` and `--version`: a warm-up round, then `runs` rounds, every variant and command
    interleaved in each round; the medians."""
    for env in variants.values():
        for args in STARTUP.values():
            timed_startup(args, env, cwd)
    times: dict[tuple[str, str], list[float]] = {(name, command): [] for name in variants for command in STARTUP}
    for _ in range(runs):
        for name, env in variants.items():
            for command, args in STARTUP.items():
                times[(name, command)].append(timed_startup(args, env, cwd))
    print(f"start-up, {runs} runs each after a warm-up (interleaved), process start to exit:")
    for (name, command), values in times.items():
        shown = ", ".join(f"{v:.3f}" for v in values)
        print(f"  {command}, {name}: median {statistics.median(values):.3f} s  ({shown})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=None, help="CANDOR_HOME (default: a new temporary one)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--backend", default="onnx-int8", choices=["onnx-int8", "onnx", "torch"])
    parser.add_argument("--other", type=Path, default=None, help="another checkout, timed interleaved")
    parser.add_argument("--no-ask", action="store_true", help="time `--help` and `--version` only")
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="candor-cold-"))
    this = env_for(home, args.backend, None)
    variants = {"this checkout": this}
    if args.other is not None:
        variants[f"{args.other}"] = env_for(home, args.backend, args.other.resolve())
    startup(variants, home.parent, args.runs)
    if args.no_ask:
        return
    ingest = [sys.executable, "-m", "bot.cli", "ingest", str(REPO / "sample" / "handbook"), "--kb", "handbook"]
    subprocess.run(ingest, env=this, cwd=home.parent, check=True, capture_output=True)
    for env in variants.values():  # warm-up: exports cached, files in the page cache
        timed_ask(env, home.parent)
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.runs):
        for name, env in variants.items():
            times[name].append(timed_ask(env, home.parent))
    print(f"cold `candor ask`, {args.backend}, {args.runs} runs each (interleaved), process start to exit:")
    for name, values in times.items():
        shown = ", ".join(f"{v:.2f}" for v in values)
        print(f"  {name}: median {statistics.median(values):.2f} s  ({shown})")
    interpreter = min(timed_interpreter() for _ in range(3))  # a bare `python -c pass`: the floor
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", PHASES, QUESTION], env=this, cwd=home.parent, capture_output=True, text=True, timeout=300
    )
    total = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    phases = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"where the time goes (one instrumented process, this checkout, {total:.2f} s in all):")
    print(f"  interpreter start: {interpreter:.2f} s")
    for name, seconds in phases.items():
        print(f"  {name}: {seconds:.2f} s")
    rest = total - interpreter - sum(phases.values())
    print(f"  exit (the embedded server stopped at exit, interpreter teardown): {rest:.2f} s")


def timed_interpreter() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
