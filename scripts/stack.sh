#!/usr/bin/env bash
# judgewatch as a service on one machine (127.0.0.1), the way a platform team runs it:
#   scripts/stack.sh up        # start what is not running yet (running it twice is harmless)
#   scripts/stack.sh status    # each part, its URL or PID, healthy or not (exit 1 when one is not)
#   scripts/stack.sh down      # stop exactly the processes `up` started (by their recorded PIDs)
#   scripts/stack.sh commands  # the command line of every service (deploy/compose runs the same ones)
#   scripts/stack.sh env       # the exports that point a shell's prefect and judgewatch commands at the stack
# Parts: PostgreSQL databases judgewatch_prefect (Prefect's) and judgewatch (the store, migrated); a Prefect server
# on PostgreSQL; the work pool `judgewatch` (process) with two workers, each in its own folder; the Prefect
# variables prefect.yaml reads; the judge's global concurrency limit; `prefect deploy --all`; the vLLM judge
# (scripts/judge_serve.sh); the review UI; the OTLP/HTTP trace receiver (`judgewatch ingest serve`), whose picks the
# `ingest-judging` deployment judges on a schedule. PIDs, logs and the receiver's token live in $JUDGEWATCH_STACK_DIR.
# Configuration (environment, defaults in brackets):
#   JUDGEWATCH_STACK_DIR [.judgewatch/stack]   JUDGEWATCH_PREFECT_PORT [4200]   JUDGEWATCH_REVIEW_PORT [7860]
#   JUDGEWATCH_PG_URL [postgresql://postgres@127.0.0.1:5432]   (server, user, password; no database)
#   JUDGEWATCH_PREFECT_DB [judgewatch_prefect]   JUDGEWATCH_STORE_DB [judgewatch]
#   JUDGEWATCH_STACK_JUDGE [vllm]: vllm (start scripts/judge_serve.sh on JUDGEWATCH_JUDGE_PORT [8011]) or
#     external (use JUDGEWATCH_JUDGE_URL as it is: another vLLM, or the simulator)
#   JUDGEWATCH_JUDGE_URL [http://127.0.0.1:$JUDGEWATCH_JUDGE_PORT/v1]   JUDGEWATCH_JUDGE_MODEL [smollm2-135m-instruct]
#   JUDGEWATCH_JUDGE_SLOTS [64]: the judge's global limit, what it serves at once (vLLM's --max-num-seqs)
#   JUDGEWATCH_WORK_POOL [judgewatch]   JUDGEWATCH_WORKERS [2]   JUDGEWATCH_WORKER_LIMIT [4] (flow runs per worker)
#   JUDGEWATCH_GIT_REPOSITORY [this checkout's path]   JUDGEWATCH_GIT_BRANCH [the checkout's current branch]
#   JUDGEWATCH_INGEST_PORT [4318]   JUDGEWATCH_INGEST_TOKEN [made once, kept in $JUDGEWATCH_STACK_DIR/ingest.token]
#   JUDGEWATCH_INGEST_JUDGE_CRON [*/5 * * * *]: when the received spans are judged (the ingest-judging deployment)
#   JUDGEWATCH_INGEST_CONFIG [none: source otlp, 1% sampled]: the receiver's source YAML (kind otlp, name otlp)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=${JUDGEWATCH_STACK_BIN:-$here/.venv/bin}
STATE=${JUDGEWATCH_STACK_DIR:-$here/.judgewatch/stack}
HOST=${JUDGEWATCH_STACK_HOST:-127.0.0.1}  # where the server and the review UI listen
PREFECT_PORT=${JUDGEWATCH_PREFECT_PORT:-4200}
REVIEW_PORT=${JUDGEWATCH_REVIEW_PORT:-7860}
INGEST_PORT=${JUDGEWATCH_INGEST_PORT:-4318}
INGEST_CRON=${JUDGEWATCH_INGEST_JUDGE_CRON:-*/5 * * * *}
PG_URL=${JUDGEWATCH_PG_URL:-postgresql://postgres@127.0.0.1:5432}
PREFECT_DB=${JUDGEWATCH_PREFECT_DB:-judgewatch_prefect}
STORE_DB=${JUDGEWATCH_STORE_DB:-judgewatch}
JUDGE_MODE=${JUDGEWATCH_STACK_JUDGE:-vllm}
export JUDGEWATCH_JUDGE_PORT=${JUDGEWATCH_JUDGE_PORT:-8011}
JUDGE_URL=${JUDGEWATCH_JUDGE_URL:-http://127.0.0.1:$JUDGEWATCH_JUDGE_PORT/v1}
SERVING_FILE=${JUDGEWATCH_JUDGE_HOME:-$here/.judge}/server-$JUDGEWATCH_JUDGE_PORT.serving.json  # judge_serve.sh's
JUDGE_MODEL=${JUDGEWATCH_JUDGE_MODEL:-smollm2-135m-instruct}
JUDGE_SLOTS=${JUDGEWATCH_JUDGE_SLOTS:-64}
POOL=${JUDGEWATCH_WORK_POOL:-judgewatch}
WORKERS=${JUDGEWATCH_WORKERS:-2}
WORKER_LIMIT=${JUDGEWATCH_WORKER_LIMIT:-4}  # flow runs one worker runs at once; more wait for a free worker
GIT_REPOSITORY=${JUDGEWATCH_GIT_REPOSITORY:-$here}
GIT_BRANCH=${JUDGEWATCH_GIT_BRANCH:-$(git -C "$here" rev-parse --abbrev-ref HEAD 2>/dev/null || echo main)}

API=http://127.0.0.1:$PREFECT_PORT/api
PREFECT_DB_URL=${PG_URL/postgresql:/postgresql+asyncpg:}/$PREFECT_DB
STORE_URL=${PG_URL/postgresql:/postgresql+psycopg:}/$STORE_DB
DATA_DIR=$STATE/data
HEARTBEAT_S=${JUDGEWATCH_HEARTBEAT_S:-30}  # flow runs' heartbeat; silent for 3 beats = crashed (Prefect's minimum is 30)

# One command line per service; `commands` prints them and deploy/compose/compose.yaml runs the same ones.
cmd_prefect_server=(prefect server start --host "$HOST" --port "$PREFECT_PORT")
cmd_prefect_db_create=(judgewatch db create --database-url "${PG_URL/postgresql:/postgresql+psycopg:}/$PREFECT_DB")
cmd_store_create=(judgewatch db create --database-url "$STORE_URL")
cmd_store_migrate=(judgewatch db migrate --database-url "$STORE_URL")
cmd_work_pool=(prefect work-pool create "$POOL" --type process --overwrite)
cmd_judge_limit=(judgewatch judges limit "$JUDGE_URL" "$JUDGE_SLOTS")
cmd_deploy=(prefect --no-prompt deploy --all)
cmd_worker=(prefect worker start --pool "$POOL" --type process --limit "$WORKER_LIMIT" --name)  # + judgewatch-worker-N
cmd_review_ui=(judgewatch review-ui --host "$HOST" --port "$REVIEW_PORT" --database-url "$STORE_URL")
cmd_ingest=(judgewatch ingest serve --host "$HOST" --port "$INGEST_PORT" --database-url "$STORE_URL")
[ -n "${JUDGEWATCH_INGEST_CONFIG:-}" ] && cmd_ingest+=(--config "$JUDGEWATCH_INGEST_CONFIG")  # name otlp, rates...
prefect_variables=(
  "judgewatch_git_repository=$GIT_REPOSITORY" "judgewatch_git_branch=$GIT_BRANCH" "judgewatch_work_pool=$POOL"
  "judgewatch_database_url=$STORE_URL" "judgewatch_data_dir=$DATA_DIR" "judgewatch_judge_url=$JUDGE_URL"
  "judgewatch_judge_model=$JUDGE_MODEL" "judgewatch_ingest_judge_cron=$INGEST_CRON"
)

say() { echo "[stack] $*"; }
pidfile() { echo "$STATE/$1.pid"; }
group_alive() { kill -0 "$1" 2>/dev/null || pgrep -g "$1" >/dev/null 2>&1; }  # the process or any of its group
alive() { [ -f "$(pidfile "$1")" ] && kill -0 "$(cat "$(pidfile "$1")")" 2>/dev/null; }
http_ok() { curl -fsS -m 3 -o /dev/null "$1" 2>/dev/null; }
client_env() { env PREFECT_API_URL="$API" JUDGEWATCH_DATABASE_URL="$STORE_URL" JUDGEWATCH_DATA_DIR="$DATA_DIR" \
  JUDGEWATCH_JUDGE_URL="$JUDGE_URL" JUDGEWATCH_JUDGE_MODEL="$JUDGE_MODEL" PREFECT_SERVER_ANALYTICS_ENABLED=false "$@"; }
run() { local exe=$1; shift; client_env "$BIN/$exe" "$@"; }

# set_variable NAME VALUE: what `prefect variable set NAME VALUE --overwrite` does, through the REST API (no
# Python start-up per variable). Values are stored as JSON strings.
set_variable() {
  local body; body=$(printf '{"name": "%s", "value": "%s"}' "$1" "$2")
  curl -fsS -m 10 -o /dev/null -X PATCH "$API/variables/name/$1" -H 'content-type: application/json' -d "$body" 2>/dev/null \
    || curl -fsS -m 10 -o /dev/null -X POST "$API/variables/" -H 'content-type: application/json' -d "$body"
}

# A flow run whose worker died (SIGKILL, lost machine) stops sending heartbeats: this automation marks it Crashed
# after three missed beats, so the run ends in a state a pipeline can read and can be re-triggered. It is the
# "detect zombie flows" automation of Prefect's documentation, created once (by name) through the REST API.
ZOMBIE_AUTOMATION="judgewatch: crash flow runs without heartbeat"
crash_zombies_automation() {
  local found
  found=$(curl -fsS -m 10 -X POST "$API/automations/filter" -H 'content-type: application/json' \
    -d "{\"automations\": {\"name\": {\"any_\": [\"$ZOMBIE_AUTOMATION\"]}}}")
  [ "$found" != "[]" ] && return 0
  curl -fsS -m 10 -o /dev/null -X POST "$API/automations/" -H 'content-type: application/json' -d @- <<JSON
{"name": "$ZOMBIE_AUTOMATION", "enabled": true,
 "trigger": {"type": "event", "posture": "Proactive", "threshold": 1, "within": $((HEARTBEAT_S * 3)),
   "after": ["prefect.flow-run.heartbeat"],
   "expect": ["prefect.flow-run.heartbeat", "prefect.flow-run.Completed", "prefect.flow-run.Failed",
              "prefect.flow-run.Cancelled", "prefect.flow-run.Crashed"],
   "match": {"prefect.resource.id": ["prefect.flow-run.*"]}, "for_each": ["prefect.resource.id"]},
 "actions": [{"type": "change-flow-run-state", "state": "CRASHED",
   "message": "No heartbeat for $((HEARTBEAT_S * 3)) s: the worker running this flow run died."}]}
JSON
}

# start NAME DIR CMD...: a new session (so `down` can stop its whole process group), PID and log in $STATE.
start() {
  local name=$1 dir=$2; shift 2
  if alive "$name"; then say "$name already running (pid $(cat "$(pidfile "$name")"))"; return; fi
  mkdir -p "$dir"
  (cd "$dir" && exec setsid "$@" >"$STATE/$name.log" 2>&1 </dev/null) &
  echo $! >"$(pidfile "$name")"
  say "$name started (pid $!, log $STATE/$name.log)"
}

wait_for() {  # wait_for NAME URL SECONDS
  local name=$1 url=$2 deadline=$((SECONDS + $3))
  until http_ok "$url"; do
    if ! alive "$name"; then say "$name exited during start-up; last lines of $STATE/$name.log:"; tail -20 "$STATE/$name.log"; exit 1; fi
    if [ $SECONDS -ge $deadline ]; then say "$name not healthy after $3 s; see $STATE/$name.log"; exit 1; fi
    sleep 1
  done
}

up() {
  if [ "$GIT_BRANCH" = HEAD ]; then  # the workers' pull step clones a branch, and a detached HEAD names none
    echo "[stack] $here is on a detached HEAD: check out a branch, or set JUDGEWATCH_GIT_BRANCH to the one the" \
      "workers should clone" >&2
    exit 2
  fi
  local t0=$SECONDS
  mkdir -p "$STATE" "$DATA_DIR"
  say "PostgreSQL databases $PREFECT_DB and $STORE_DB on ${PG_URL#*@}"
  local -n cmd
  for cmd in cmd_prefect_db_create cmd_store_create cmd_store_migrate; do run "${cmd[@]}" | sed 's/^/[stack]   /'; done

  start prefect-server "$STATE" env PREFECT_API_DATABASE_CONNECTION_URL="$PREFECT_DB_URL" \
    PREFECT_SERVER_ANALYTICS_ENABLED=false PREFECT_HOME="$STATE/prefect-home" "$BIN/${cmd_prefect_server[@]}"
  wait_for prefect-server "$API/health" 180
  say "Prefect server: http://$HOST:$PREFECT_PORT (database $PREFECT_DB)"

  if [ "$JUDGE_MODE" = vllm ]; then
    if ! bash "$here/scripts/judge_serve.sh" status >/dev/null 2>&1; then
      bash "$here/scripts/judge_serve.sh" start | sed 's/^/[stack]   /'
      touch "$STATE/judge.started"
    fi
    # the dtype judge_serve.sh chose is part of the judge configuration the workers and the review UI see
    if [ -z "${JUDGEWATCH_JUDGE_SERVING:-}" ] && [ -f "$SERVING_FILE" ]; then
      export JUDGEWATCH_JUDGE_SERVING; JUDGEWATCH_JUDGE_SERVING=$(cat "$SERVING_FILE")
    fi
  fi
  say "judge: $JUDGE_URL (model $JUDGE_MODEL${JUDGEWATCH_JUDGE_SERVING:+, serving $JUDGEWATCH_JUDGE_SERVING})"

  for kv in "${prefect_variables[@]}"; do set_variable "${kv%%=*}" "${kv#*=}"; done
  say "Prefect variables set: ${#prefect_variables[@]} (judgewatch_*)"
  run "${cmd_work_pool[@]}" >/dev/null && say "work pool $POOL (process)"
  crash_zombies_automation && say "automation: flow runs silent for $((HEARTBEAT_S * 3)) s are marked Crashed"
  run "${cmd_judge_limit[@]}" | sed 's/^/[stack] /'
  (cd "$here" && run "${cmd_deploy[@]}" >"$STATE/deploy.log" 2>&1) || { say "prefect deploy failed:"; tail -30 "$STATE/deploy.log"; exit 1; }
  say "deployments: $(grep -o "Deployment '[^']*'" "$STATE/deploy.log" | sort -u | tr '\n' ' ')"

  for i in $(seq 1 "$WORKERS"); do
    start "worker-$i" "$STATE/worker-$i" env PREFECT_API_URL="$API" PREFECT_HOME="$STATE/worker-$i/prefect-home" \
      PREFECT_SERVER_ANALYTICS_ENABLED=false PREFECT_FLOWS_HEARTBEAT_FREQUENCY="$HEARTBEAT_S" "$BIN/${cmd_worker[@]}" "judgewatch-worker-$i"
  done
  start review-ui "$STATE" env JUDGEWATCH_DATA_DIR="$DATA_DIR" GRADIO_ANALYTICS_ENABLED=False \
    "$BIN/${cmd_review_ui[@]}"
  start ingest "$STATE" env JUDGEWATCH_DATA_DIR="$DATA_DIR" JUDGEWATCH_INGEST_TOKEN="$(ingest_token)" \
    "$BIN/${cmd_ingest[@]}"
  wait_for review-ui "http://$HOST:$REVIEW_PORT/" 180
  wait_for ingest "http://$HOST:$INGEST_PORT/healthz" 60
  say "OTLP receiver: http://$HOST:$INGEST_PORT/v1/traces (bearer token in the env file), judged on '$INGEST_CRON'"
  say "up in $((SECONDS - t0)) s"
  (umask 077 && env_lines >"$STATE/env")  # it holds the receiver's token
  say "your shell talks to this stack (Prefect server and store) after:  source $STATE/env"
  status
}

# The receiver's bearer token: JUDGEWATCH_INGEST_TOKEN when set, else one made on the first `up` and kept (0600).
ingest_token() {
  if [ -n "${JUDGEWATCH_INGEST_TOKEN:-}" ]; then printf '%s' "$JUDGEWATCH_INGEST_TOKEN"; return; fi
  local file=$STATE/ingest.token
  if [ ! -s "$file" ]; then (umask 077 && "$BIN/python" -c 'import secrets; print(secrets.token_urlsafe(32))' >"$file"); fi
  cat "$file"
}

env_lines() {  # what a shell needs so that `prefect` and `judgewatch` commands use this stack, not their defaults
  printf 'export PREFECT_API_URL=%s\n' "$API"
  printf 'export JUDGEWATCH_DATABASE_URL=%s\n' "$STORE_URL"
  # an OpenTelemetry SDK's OTLP/HTTP exporter in this shell sends its traces to the stack's receiver
  printf 'export JUDGEWATCH_INGEST_TOKEN=%s\n' "$(ingest_token)"
  printf 'export OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:%s/v1/traces\n' "$INGEST_PORT"
  printf "export OTEL_EXPORTER_OTLP_TRACES_HEADERS='Authorization=Bearer%%20%s'\n" "$(ingest_token)"
  if [ "$JUDGE_MODE" = vllm ] && [ -f "$SERVING_FILE" ]; then
    printf "export JUDGEWATCH_JUDGE_SERVING='%s'\n" "$(cat "$SERVING_FILE")"
  fi
}

down() {
  local name pid
  for f in "$STATE"/*.pid; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .pid); pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 80); do group_alive "$pid" || break; sleep 0.25; done  # a worker drains its events first
      if group_alive "$pid"; then
        kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
        for _ in $(seq 1 40); do group_alive "$pid" || break; sleep 0.25; done
      fi
      say "$name stopped (pid $pid)"
    fi
    rm -f "$f"
  done
  if [ -f "$STATE/judge.started" ]; then
    bash "$here/scripts/judge_serve.sh" stop | sed 's/^/[stack] /'
    rm -f "$STATE/judge.started"
  elif [ "$JUDGE_MODE" = vllm ] && bash "$here/scripts/judge_serve.sh" status >/dev/null 2>&1; then
    say "the vLLM judge on port $JUDGEWATCH_JUDGE_PORT was not started by stack-up and keeps running: make judge-down stops it"
  fi
  rm -f "$STATE/env"
}

status() {
  local bad=0 i
  line() {  # line NAME WHERE CHECK...: healthy when the check succeeds
    local s=down; if "${@:3}" >/dev/null 2>&1; then s=healthy; else bad=1; fi
    printf '%-15s %-42s %s\n' "$1" "$2" "$s"
  }
  pid() { cat "$(pidfile "$1")" 2>/dev/null || echo -; }
  serves() { alive "$1" && http_ok "$2"; }
  line prefect-server "http://$HOST:$PREFECT_PORT (pid $(pid prefect-server))" serves prefect-server "$API/health"
  for i in $(seq 1 "$WORKERS"); do line "worker-$i" "pool $POOL (pid $(pid "worker-$i"))" alive "worker-$i"; done
  line judge "$JUDGE_URL" http_ok "${JUDGE_URL%/v1}/health"
  line review-ui "http://$HOST:$REVIEW_PORT (pid $(pid review-ui))" serves review-ui "http://$HOST:$REVIEW_PORT/"
  line ingest "http://$HOST:$INGEST_PORT/v1/traces (pid $(pid ingest))" serves ingest "http://$HOST:$INGEST_PORT/healthz"
  line store "${STORE_URL/+psycopg/}" run judgewatch db migrate --database-url "$STORE_URL"
  return $bad
}

commands() {
  show() { local -n cmd=cmd_$1; printf '%s: %s\n' "${1//_/-}" "${cmd[*]}"; }  # show NAME: the line of cmd_NAME
  for c in prefect_server prefect_db_create store_create store_migrate work_pool judge_limit deploy; do show "$c"; done
  for i in $(seq 1 "$WORKERS"); do printf 'worker-%s: %s judgewatch-worker-%s\n' "$i" "${cmd_worker[*]}" "$i"; done
  for c in review_ui ingest; do show "$c"; done
}

main() {
  case "${1:-status}" in
    up) up ;;
    down) down ;;
    status) status ;;
    commands) commands ;;
    env) env_lines ;;
    *) echo "usage: $0 up|down|status|commands|env" >&2; exit 2 ;;
  esac
}
main "$@"; exit $?  # on one line: bash has read it whole, so editing this file while it runs cannot derail it
