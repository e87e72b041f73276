#!/usr/bin/env bash
# Install what is missing, build the viewer into dist/ and serve it (foreground, Ctrl-C stops).
#   PORT=8080 HOST=127.0.0.1 by default; extra arguments go to the server (e.g. --cors, --no-range).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
SETUP_SKIP_BROWSER=1 source scripts/setup.sh
bash scripts/build-web.sh
port="${PORT:-8080}"
host="${HOST:-127.0.0.1}"
echo
echo "Tensorscope viewer: http://localhost:$port/"
echo "  open by URL:  http://localhost:$port/?url=https://…/model.gguf  (repeatable; hf://owner/repo/file works)"
echo "  embed demo:   http://localhost:$port/model-card.html"
exec node tests/e2e/server.mjs --root dist --port "$port" --host "$host" "$@"
