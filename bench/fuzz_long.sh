#!/usr/bin/env bash
# The long form of tests/service/http/test_api_fuzz.py (issue 15's gate): schemathesis against a demo
# server's /openapi.json with no token and with issuer, verifier and admin tokens, thousands of
# generated cases per operation (default 5000; FUZZ_EXAMPLES overrides). Exits non-zero when any
# run finds a server error or a response outside the documented schemas.
# Usage: bash bench/fuzz_long.sh [examples]
set -euo pipefail
cd "$(dirname "$0")/.."
EXAMPLES="${1:-${FUZZ_EXAMPLES:-5000}}"
PORT="${FUZZ_PORT:-18611}"
WORK="$(mktemp -d)"
trap 'kill "$SERVER" 2>/dev/null || true; rm -rf "$WORK"' EXIT
PAYSLIP_RATE_LIMIT_IP=off PAYSLIP_RATE_LIMIT_CLIENT=off PAYSLIP_RATE_LIMIT_TOKEN_IP=off \
  .venv/bin/python -m service serve --demo --port "$PORT" >"$WORK/out" 2>"$WORK/err" &
SERVER=$!
for _ in $(seq 60); do grep -q "listening on" "$WORK/out" && break; sleep 0.5; done
URL="http://127.0.0.1:$PORT"
tokens="$(.venv/bin/python - "$WORK/out" "$URL" <<'PY'
import json, sys, httpx
text = open(sys.argv[1]).read()
demo = json.loads(text[: text.rindex("listening on")])["demo"]
url = sys.argv[2]
def token(cid, secret):
    body = {"grant_type": "client_credentials", "client_id": cid, "client_secret": secret,
            "audience": url}
    return httpx.post(f"{url}/oauth/token", json=body).json()["access_token"]
print(token(demo["issuer"]["client_id"], demo["issuer"]["client_secret"]))
print(token(demo["verifier"]["client_id"], demo["verifier"]["client_secret"]))
PY
)"
ISSUER="$(sed -n 1p <<<"$tokens")"
VERIFIER="$(sed -n 2p <<<"$tokens")"
CHECKS=not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance
status=0
for who in nobody issuer verifier; do
  header=()
  [ "$who" = issuer ] && header=(-H "Authorization: Bearer $ISSUER")
  [ "$who" = verifier ] && header=(-H "Authorization: Bearer $VERIFIER")
  echo "== $who: $EXAMPLES examples per operation"
  if ! .venv/bin/st run "$URL/openapi.json" "${header[@]}" --checks "$CHECKS" \
      --phases examples,coverage,fuzzing --max-examples "$EXAMPLES" --workers 2 \
      | cut -c1-400 | tail -25; then
    status=1
  fi
done
exit $status
