#!/usr/bin/env bash
# make a11y: axe-core on every owner page. Starts bin/ndiro-dev in local
# mode with the demo diary (NDIRO_DEMO=1) on a throwaway data directory and
# a free loopback port, then runs e2e/a11y.mjs, which drives Debian's
# Chromium through puppeteer-core, signs in as the demo owner, opens every
# owner page at 390x844 (a phone: touch, 3x pixels) and 1280x800, each in
# the light and the dark scheme, injects axe-core and fails on any
# violation.
#
# Needs Node 18 or later, npm and Chromium (CHROME_PATH, default
# /usr/bin/chromium). The npm packages are installed into a folder outside
# the repository (NDIRO_A11Y_NPM_DIR, default $TMPDIR/ndiro-a11y-npm) and
# reused while their versions match. Run it through `make a11y`, which
# builds bin/ndiro-dev first.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "a11y: $tool is missing; make a11y needs Node 18 or later and npm" >&2
    exit 1
  fi
done
export CHROME_PATH="${CHROME_PATH:-/usr/bin/chromium}"
if [ ! -x "$CHROME_PATH" ]; then
  echo "a11y: no Chromium at $CHROME_PATH; install it (apt-get install -y chromium) or set CHROME_PATH" >&2
  exit 1
fi
if [ ! -x bin/ndiro-dev ]; then
  echo "a11y: bin/ndiro-dev is missing; run make a11y, which builds it" >&2
  exit 1
fi

PACKAGES="axe-core@4.14.1 puppeteer-core@24.43.1"
NPM_DIR="${NDIRO_A11Y_NPM_DIR:-${TMPDIR:-/tmp}/ndiro-a11y-npm}"
if [ "$(cat "$NPM_DIR/installed" 2>/dev/null || true)" != "$PACKAGES" ]; then
  rm -rf "$NPM_DIR"
  mkdir -p "$NPM_DIR"
  # A package.json of its own, so npm installs here and not into a parent.
  echo '{"private": true}' >"$NPM_DIR/package.json"
  # No browser download: the script drives the machine's Chromium.
  # shellcheck disable=SC2086 # the package list is split on purpose
  (cd "$NPM_DIR" && PUPPETEER_SKIP_DOWNLOAD=1 npm install --no-audit --no-fund --loglevel=error $PACKAGES)
  echo "$PACKAGES" >"$NPM_DIR/installed"
fi
# The script imports its packages, which Node resolves from the script's
# own folder: run a copy beside node_modules.
cp e2e/a11y.mjs "$NPM_DIR/a11y.mjs"

RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/ndiro-a11y-run.XXXXXX")"
PID=""
cleanup() {
  if [ -n "$PID" ]; then
    kill "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
  fi
  rm -rf "$RUN_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PORT="$(node -e '
const s = require("node:net").createServer();
s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });')"
BASE="http://127.0.0.1:$PORT"

NDIRO_MODE=local NDIRO_DEMO=1 NDIRO_DATA_DIR="$RUN_DIR/var" NDIRO_ADDR="127.0.0.1:$PORT" \
  ./bin/ndiro-dev >"$RUN_DIR/ndiro.log" 2>&1 &
PID=$!

# The demo diary is seeded before the server answers: up to a few
# minutes on a busy 2-core machine. /healthz answers once it serves.
for i in $(seq 1 600); do
  if node -e 'fetch(process.argv[1], {signal: AbortSignal.timeout(2000)}).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$BASE/healthz"; then
    break
  fi
  if ! kill -0 "$PID" 2>/dev/null || [ "$i" = 600 ]; then
    echo "a11y: ndiro did not start on $BASE" >&2
    tail -n 40 "$RUN_DIR/ndiro.log" >&2
    exit 1
  fi
  sleep 0.5
done

if ! A11Y_BASE="$BASE" A11Y_PHOTO="$PWD/testdata/photos/phone-portrait-small.jpg" node "$NPM_DIR/a11y.mjs" "$@"; then
  echo "--- ndiro.log" >&2
  tail -n 40 "$RUN_DIR/ndiro.log" >&2
  exit 1
fi
