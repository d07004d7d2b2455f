#!/usr/bin/env bash
# Smoke-test an image built from deploy/Containerfile against an existing Postgres with pgvector:
# the version, an ingest of the sample handbook, one answer with its citation, as the image's own
# non-root user with nothing downloaded (HF_HUB_OFFLINE=1 is the image's default).
#
#   deploy/smoke-test.sh localhost/candor:latest postgresql://candor@127.0.0.1:55432/candor
#
# Uses buildah (`buildah run --isolation chroot`); with docker or podman run the same commands.
set -euo pipefail
image="${1:-localhost/candor:latest}"
url="${2:?usage: deploy/smoke-test.sh IMAGE DATABASE_URL}"
cd "$(dirname "$0")/.."
container="$(buildah from "$image")"
trap 'buildah rm "$container" >/dev/null' EXIT
run() {
  buildah run --isolation chroot -e CANDOR_DATABASE_URL="$url" -e CANDOR_LOG_LEVEL=WARNING \
    -v "$PWD/sample:/sample:ro" "$container" -- "$@"
}
run id -u
run candor --version
run candor migrate
run candor ingest /sample/handbook --kb smoke-handbook
run candor ask "What is the minimum password length for company accounts?" --kb smoke-handbook --json \
  | python3 -c '
import json, sys
answer = json.load(sys.stdin)
assert answer["route"] == "answered" and "14 characters" in answer["text"], answer
assert answer["sources"] and all(s["citations"] for s in answer["sentences"]), answer
print("answered:", answer["text"][:160])
'
# `candor serve` in the container, and the image's own health check against it
port=18080
run candor serve --host 127.0.0.1 --port "$port" > /dev/null 2>&1 &
server=$!
for _ in $(seq 1 60); do
  if python3 -c "import urllib.request, sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:$port/healthz', timeout=2).status != 200)" 2>/dev/null; then
    break
  fi
  sleep 1
done
run python3 -c "import urllib.request, json; print('healthz:', json.load(urllib.request.urlopen('http://127.0.0.1:$port/healthz', timeout=4)))"
kill "$server"; pkill -f "candor serve --host 127.0.0.1 --port $port" || true; wait "$server" 2>/dev/null || true
echo "smoke test passed: $image"
