"""`make test` installs the Chromium its browser tests drive (scripts/ensure_chromium.sh), through
apt-get, with sudo only when not root, and says what to do where it cannot. Run here against stand-in
`apt-get`, `sudo` and `id` commands on a PATH of their own, which record how they were called."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "scripts" / "ensure_chromium.sh"
MAKEFILE = Path(__file__).parents[2] / "Makefile"

APT_GET = f"""#!/bin/sh
echo "apt-get $* DEBIAN_FRONTEND=${{DEBIAN_FRONTEND:-}}" >> "$LOG"
if [ "$1" = install ]; then
  printf '#!/bin/sh\\n' > "$BIN/chromium" && {shutil.which("chmod")} +x "$BIN/chromium"
fi
"""
FAILING_APT_GET = """#!/bin/sh
echo "apt-get $*" >> "$LOG"
echo "E: Could not open lock file" >&2
exit 100
"""
SUDO = """#!/bin/sh
echo "sudo $1" >> "$LOG"
exec "$@"
"""


def _command(folder: Path, name: str, text: str) -> None:
    path = folder / name
    path.write_text(text)
    path.chmod(0o755)


def _machine(tmp_path: Path, *, uid: int, apt_get: str | None = APT_GET, sudo: bool = False) -> Path:
    """A PATH holding only what the script may find: `env`, an `id` reporting `uid`, and the rest as asked."""
    folder = tmp_path / "bin"
    folder.mkdir()
    env = shutil.which("env")
    assert env is not None
    (folder / "env").symlink_to(env)
    _command(folder, "id", f"#!/bin/sh\necho {uid}\n")
    if apt_get is not None:
        _command(folder, "apt-get", apt_get)
    if sudo:
        _command(folder, "sudo", SUDO)
    return folder


def _run(folder: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    log = tmp_path / "calls.log"
    log.touch()
    done = subprocess.run(
        ["/bin/bash", str(SCRIPT)],
        env={"PATH": str(folder), "LOG": str(log), "BIN": str(folder)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done, log.read_text().splitlines()


def test_nothing_is_installed_when_chromium_is_there(tmp_path: Path) -> None:
    folder = _machine(tmp_path, uid=1000)
    _command(folder, "chromium", "#!/bin/sh\n")
    done, calls = _run(folder, tmp_path)
    assert done.returncode == 0 and calls == []


def test_root_installs_debians_package_without_sudo(tmp_path: Path) -> None:
    done, calls = _run(_machine(tmp_path, uid=0), tmp_path)
    assert done.returncode == 0, done.stderr
    assert calls == [
        "apt-get update DEBIAN_FRONTEND=",
        "apt-get install -y --no-install-recommends chromium DEBIAN_FRONTEND=noninteractive",
    ]


def test_another_user_installs_it_through_sudo(tmp_path: Path) -> None:
    done, calls = _run(_machine(tmp_path, uid=1000, sudo=True), tmp_path)
    assert done.returncode == 0, done.stderr
    assert calls == [
        "sudo apt-get",
        "apt-get update DEBIAN_FRONTEND=",
        "sudo env",
        "apt-get install -y --no-install-recommends chromium DEBIAN_FRONTEND=noninteractive",
    ]
    assert "with sudo" in done.stderr


@pytest.mark.parametrize(
    ("uid", "apt_get", "says"),
    [
        (1000, APT_GET, "Not root and no sudo: as root, run 'apt-get install -y --no-install-recommends chromium'"),
        (0, None, "No apt-get here: install Chromium with this system's package manager"),
        (0, FAILING_APT_GET, "apt-get could not install it"),
    ],
)
def test_where_it_cannot_install_it_says_what_to_do_and_fails(
    tmp_path: Path, uid: int, apt_get: str | None, says: str
) -> None:
    done, _ = _run(_machine(tmp_path, uid=uid, apt_get=apt_get), tmp_path)
    assert done.returncode == 1
    assert "make test needs Chromium" in done.stderr and says in done.stderr


def test_make_test_runs_it_before_the_tests() -> None:
    dry_run = subprocess.run(
        ["make", "-n", "-f", str(MAKEFILE), "-C", str(MAKEFILE.parent), "test", "VENV=/nonexistent"],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout.splitlines()
    steps = [line for line in dry_run if "ensure_chromium.sh" in line or "-m pytest" in line]
    assert len(steps) == 2 and "ensure_chromium.sh" in steps[0] and "-m pytest" in steps[1]
