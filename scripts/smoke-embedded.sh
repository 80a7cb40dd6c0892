#!/usr/bin/env bash
# Starts the built app exactly as `npm start` does, with no DATABASE_URL/REDIS_URL and a fresh DATA_DIR,
# then registers, logs in, calls /api/auth/me, uploads a document that the in-process worker indexes and
# search finds, and stops it with SIGTERM (must exit 0).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"
DATA_DIR=$(mktemp -d)
PORT=${SMOKE_PORT:-39123}
LOG="$DATA_DIR/app.log"
trap 'kill "$PID" 2>/dev/null || true; rm -rf "$DATA_DIR"' EXIT

npx nest build
env -u DATABASE_URL -u REDIS_URL DATA_DIR="$DATA_DIR" PORT="$PORT" HOST=127.0.0.1 node dist/src/main.js >"$LOG" 2>&1 &
PID=$!
for _ in $(seq 1 120); do
  curl -fsS "http://127.0.0.1:$PORT/api/health" >/dev/null 2>&1 && break
  kill -0 "$PID" 2>/dev/null || { cat "$LOG"; echo "app exited during start-up"; exit 1; }
  sleep 1
done
base="http://127.0.0.1:$PORT"
# Prints one field of the JSON on stdin, by its path (e.g. data.id).
json() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(process.argv[1].split(".").reduce((v,k)=>v[k],JSON.parse(s))))' "$1"; }
curl -fsS "$base/api/health" | grep -q '"status":"ok"'
curl -fsS "$base/api/ready" >/dev/null
curl -fsS -X POST "$base/api/auth/register" -H 'Content-Type: application/json' \
  -d '{"email":"smoke@example.com","password":"smoke-password-1","name":"Smoke"}' >/dev/null
token=$(curl -fsS -X POST "$base/api/auth/login" -H 'Content-Type: application/json' \
  -d '{"email":"smoke@example.com","password":"smoke-password-1"}' | json data.accessToken)
curl -fsS "$base/api/auth/me" -H "Authorization: Bearer $token" | grep -q smoke@example.com
curl -fsS "$base/api/docs" >/dev/null

# Background work on the embedded default (BullMQ's PostgreSQL backend): an upload is indexed by the
# in-process worker and found by search.
project=$(curl -fsS -X POST "$base/api/projects" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -d '{"name":"Smoke project"}' | json data.id)
printf 'The embedded smoke test checks that the lighthouse keeper logs every passing ship.\n' >"$DATA_DIR/note.txt"
doc=$(curl -fsS -X POST "$base/api/documents/upload" -H "Authorization: Bearer $token" \
  -F "file=@$DATA_DIR/note.txt;type=text/plain" -F "projectId=$project" | json data.id)
status=""
for _ in $(seq 1 60); do
  status=$(curl -fsS "$base/api/documents/$doc" -H "Authorization: Bearer $token" | json data.status)
  [ "$status" = indexed ] && break
  [ "$status" = failed ] && { echo "document indexing failed"; exit 1; }
  sleep 0.5
done
[ "$status" = indexed ] || { cat "$LOG"; echo "document not indexed in time (status: $status)"; exit 1; }
curl -fsS -X POST "$base/api/rag/search" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -d "{\"query\":\"lighthouse keeper\",\"projectId\":\"$project\"}" | grep -q "$doc"
kill -TERM "$PID"
wait "$PID"
echo "embedded smoke passed"
