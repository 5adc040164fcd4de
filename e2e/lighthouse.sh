#!/usr/bin/env bash
# make lighthouse: Lighthouse (mobile) on the owner's month, a meal page
# and a share link's page, filled with testdata's phone photos and their
# sized copies; "Properly size images" (uses-responsive-images) and "Serve
# images in modern formats" (modern-image-formats) must pass on each.
# TestLighthouse (internal/server, run only when NDIRO_LIGHTHOUSE_DIR is
# set) starts the app and runs e2e/lighthouse.mjs with Debian's Chromium.
#
# Needs Go, Node 20 or later, npm and /usr/bin/chromium (CHROME_PATH
# overrides it). Lighthouse 12.8.2 and puppeteer-core are installed into
# a folder outside the repository (NDIRO_LIGHTHOUSE_NPM_DIR, default
# $TMPDIR/ndiro-lighthouse-npm) and reused while their versions match;
# the audits themselves need no network.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in node npm go; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "lighthouse: $tool is missing; make lighthouse needs Go, Node 20 or later and npm" >&2
    exit 1
  fi
done
CHROME="${CHROME_PATH:-/usr/bin/chromium}"
if [ ! -x "$CHROME" ]; then
  echo "lighthouse: no Chromium at $CHROME (apt-get install chromium, or set CHROME_PATH)" >&2
  exit 1
fi

PACKAGES="lighthouse@12.8.2 puppeteer-core@24.43.1"
NPM_DIR="${NDIRO_LIGHTHOUSE_NPM_DIR:-${TMPDIR:-/tmp}/ndiro-lighthouse-npm}"
if [ "$(cat "$NPM_DIR/installed" 2>/dev/null || true)" != "$PACKAGES" ]; then
  rm -rf "$NPM_DIR"
  mkdir -p "$NPM_DIR"
  echo '{"private": true}' >"$NPM_DIR/package.json"
  # shellcheck disable=SC2086 # the package list is split on purpose
  (cd "$NPM_DIR" && npm install --no-audit --no-fund --loglevel=error $PACKAGES)
  echo "$PACKAGES" >"$NPM_DIR/installed"
fi
cp e2e/lighthouse.mjs "$NPM_DIR/lighthouse.mjs"

NDIRO_LIGHTHOUSE_DIR="$NPM_DIR" CHROME_PATH="$CHROME" \
  go test -tags nodynamic -count=1 -timeout 10m -run '^TestLighthouse$' -v ./internal/server "$@"
