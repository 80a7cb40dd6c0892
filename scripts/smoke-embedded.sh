#!/usr/bin/env bash
# Starts the built app exactly as `npm start` does, with no DATABASE_URL/REDIS_URL and a fresh DATA_DIR,
# then registers, logs in, calls /api/auth/me, and stops it with SIGTERM (must exit 0).
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
curl -fsS "$base/api/health" | grep -q '"status":"ok"'
curl -fsS "$base/api/ready" >/dev/null
curl -fsS -X POST "$base/api/auth/register" -H 'Content-Type: application/json' \
  -d '{"email":"smoke@example.com","password":"smoke-password-1","name":"Smoke"}' >/dev/null
token=$(curl -fsS -X POST "$base/api/auth/login" -H 'Content-Type: application/json' \
  -d '{"email":"smoke@example.com","password":"smoke-password-1"}' | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).data.accessToken))')
curl -fsS "$base/api/auth/me" -H "Authorization: Bearer $token" | grep -q smoke@example.com
curl -fsS "$base/api/docs" >/dev/null
kill -TERM "$PID"
wait "$PID"
echo "embedded smoke passed"
