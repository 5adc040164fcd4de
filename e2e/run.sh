#!/usr/bin/env bash
# make e2e: the production path end to end. Starts independent servers
# from npm, each its own process on 127.0.0.1 — dynalite (DynamoDB), s3rver
# (S3) and oidc-provider (an OpenID Provider configured by
# e2e/oidc-provider.mjs; twice, the second strict about claims) — then runs
# e2e/e2e_test.go, which runs the release binary bin/ndiro in
# NDIRO_MODE=aws against them behind a TLS proxy and drives it as a browser
# would, and e2e/onemachine_test.go, which runs it in NDIRO_MODE=server
# (embedded storage) behind the same proxy with the same provider.
#
# NDIRO_E2E_TAGS (default e2e,nodynamic) and NDIRO_E2E_TIMEOUT (default
# 5m) are the go test build tags and timeout: make faults runs the fault
# suite (e2e/faults_test.go, tag faults) through this same script. Further
# arguments go to go test.
#
# Needs Go, Node 20 or later and npm. The npm packages are installed into a
# folder outside the repository (NDIRO_E2E_NPM_DIR, default
# $TMPDIR/ndiro-e2e-npm) and reused while their versions match. Run it
# through `make e2e`, which builds bin/ndiro first.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in node npm go; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "e2e: $tool is missing; make e2e needs Go, Node 20 or later and npm" >&2
    exit 1
  fi
done
if [ ! -x bin/ndiro ]; then
  echo "e2e: bin/ndiro is missing; run make e2e, which builds it" >&2
  exit 1
fi

PACKAGES="dynalite@4.0.0 s3rver@3.7.1 oidc-provider@9.13.3"
NPM_DIR="${NDIRO_E2E_NPM_DIR:-${TMPDIR:-/tmp}/ndiro-e2e-npm}"
if [ "$(cat "$NPM_DIR/installed" 2>/dev/null || true)" != "$PACKAGES" ]; then
  rm -rf "$NPM_DIR"
  mkdir -p "$NPM_DIR"
  # A package.json of its own, so npm installs here and not into a parent.
  echo '{"private": true}' >"$NPM_DIR/package.json"
  # shellcheck disable=SC2086 # the package list is split on purpose
  (cd "$NPM_DIR" && npm install --no-audit --no-fund --loglevel=error $PACKAGES)
  echo "$PACKAGES" >"$NPM_DIR/installed"
fi
# The provider script imports "oidc-provider", which Node resolves from
# the script's own folder: run a copy beside node_modules.
cp e2e/oidc-provider.mjs "$NPM_DIR/oidc-provider.mjs"

RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/ndiro-e2e-run.XXXXXX")"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$RUN_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Five free loopback ports: four servers and the test's TLS proxy (the
# providers must know the app's exact callback URL before they start).
read -r DDB_PORT S3_PORT OIDC_PORT STRICT_PORT PROXY_PORT < <(node -e '
const net = require("node:net");
const servers = [0, 1, 2, 3, 4].map(() => net.createServer());
Promise.all(servers.map((s) => new Promise((ok) => s.listen(0, "127.0.0.1", ok)))).then(() => {
  console.log(servers.map((s) => s.address().port).join(" "));
  servers.forEach((s) => s.close());
});')

CLIENT_ID=ndiro-e2e
CLIENT_SECRET="$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')"

node e2e/dynalite.js "$NPM_DIR/node_modules/dynalite/cli.js" --host 127.0.0.1 --port "$DDB_PORT" \
  --createTableMs 0 >"$RUN_DIR/dynalite.log" 2>&1 &
PIDS+=($!)
mkdir "$RUN_DIR/s3"
node "$NPM_DIR/node_modules/s3rver/bin/s3rver.js" -d "$RUN_DIR/s3" -a 127.0.0.1 -p "$S3_PORT" -s \
  >"$RUN_DIR/s3rver.log" 2>&1 &
PIDS+=($!)
OIDC_PORT="$OIDC_PORT" OIDC_CLIENT_ID="$CLIENT_ID" OIDC_CLIENT_SECRET="$CLIENT_SECRET" \
  OIDC_REDIRECT_URI="https://127.0.0.1:$PROXY_PORT/auth/callback" \
  node "$NPM_DIR/oidc-provider.mjs" >"$RUN_DIR/oidc-provider.log" 2>&1 &
PIDS+=($!)
# A second provider, strict about claims: the email only from userinfo.
OIDC_PORT="$STRICT_PORT" OIDC_CLIENT_ID="$CLIENT_ID" OIDC_CLIENT_SECRET="$CLIENT_SECRET" \
  OIDC_REDIRECT_URI="https://127.0.0.1:$PROXY_PORT/auth/callback" OIDC_STRICT_CLAIMS=1 \
  node "$NPM_DIR/oidc-provider.mjs" >"$RUN_DIR/oidc-provider-strict.log" 2>&1 &
PIDS+=($!)

# showlogs prints what the servers said, for a failed run.
showlogs() {
  for f in "$RUN_DIR"/*.log; do
    echo "--- $(basename "$f")"
    tail -n 40 "$f"
  done
}

for port in "$DDB_PORT" "$S3_PORT" "$OIDC_PORT" "$STRICT_PORT"; do
  for i in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      break
    fi
    if [ "$i" = 100 ]; then
      echo "e2e: nothing listens on 127.0.0.1:$port after 20 s" >&2
      showlogs >&2
      exit 1
    fi
    sleep 0.2
  done
done

if ! NDIRO_E2E_BIN="$PWD/bin/ndiro" \
  NDIRO_E2E_DYNAMODB="http://127.0.0.1:$DDB_PORT" \
  NDIRO_E2E_S3="http://127.0.0.1:$S3_PORT" \
  NDIRO_E2E_OIDC_ISSUER="http://127.0.0.1:$OIDC_PORT" \
  NDIRO_E2E_OIDC_STRICT_ISSUER="http://127.0.0.1:$STRICT_PORT" \
  NDIRO_E2E_OIDC_CLIENT_ID="$CLIENT_ID" \
  NDIRO_E2E_OIDC_CLIENT_SECRET="$CLIENT_SECRET" \
  NDIRO_E2E_PROXY_ADDR="127.0.0.1:$PROXY_PORT" \
  go test -tags "${NDIRO_E2E_TAGS:-e2e,nodynamic}" -count=1 -timeout "${NDIRO_E2E_TIMEOUT:-5m}" "$@" ./e2e; then
  showlogs >&2
  exit 1
fi
