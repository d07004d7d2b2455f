#!/usr/bin/env bash
# What `make test` needs besides Python packages: headless Chromium (Debian's `chromium`), which the
# HTML report test and the review queue test drive (tests/browser.py). Nothing to do when a
# `chromium` is on PATH; otherwise it is installed with apt-get, through sudo when not root. Where
# that cannot be done, say what to install and stop, before a 20-minute run fails at its end.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
  exit 0
fi

cannot() {
  {
    echo "make test needs Chromium (a 'chromium' command) for the browser tests, and it is not installed."
    echo "$1"
  } >&2
  exit 1
}

if ! command -v apt-get >/dev/null 2>&1; then
  cannot "No apt-get here: install Chromium with this system's package manager so that 'chromium' is on PATH, then run make test again."
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    cannot "Not root and no sudo: as root, run 'apt-get install -y --no-install-recommends chromium', then make test again."
  fi
  sudo="sudo"
fi

echo "Installing Chromium for the browser tests (apt-get install chromium${sudo:+, with sudo})" >&2
if ! $sudo apt-get update || ! $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; then
  cannot "apt-get could not install it (above: why). Install the 'chromium' package by hand, then run make test again."
fi
if ! command -v chromium >/dev/null 2>&1; then
  cannot "apt-get installed the package, but no 'chromium' command is on PATH."
fi
