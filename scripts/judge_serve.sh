#!/usr/bin/env bash
# Start / stop the local vLLM CPU judge (SmolLM2-135M-Instruct) on 127.0.0.1.
#   scripts/judge_serve.sh start   # waits until GET /health is 200 (25-35 s), writes .judge/server.pid
#   scripts/judge_serve.sh spawn   # starts it and returns at once (make demo: the gate runs while vLLM loads)
#   scripts/judge_serve.sh wait [S] # waits up to S seconds (default 180) until it is healthy
#   scripts/judge_serve.sh stop    # SIGTERM to the PID, then waits for it to exit
#   scripts/judge_serve.sh status
# Port: JUDGEWATCH_JUDGE_PORT (default 8011). Served model name: smollm2-135m-instruct.
# The dtype it chooses is written to .judge/server-<port>.serving.json ({"dtype": "float32"}) and printed as
# `export JUDGEWATCH_JUDGE_SERVING=...`: the judge configuration declares it (docs/operations.md, judge fingerprint).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
JUDGE_HOME=${JUDGEWATCH_JUDGE_HOME:-$here/.judge}
PORT=${JUDGEWATCH_JUDGE_PORT:-8011}
PIDFILE=$JUDGE_HOME/server-$PORT.pid
SERVINGFILE=$JUDGE_HOME/server-$PORT.serving.json
LOG=$JUDGE_HOME/server-$PORT.log
MODEL_DIR=$JUDGE_HOME/models/SmolLM2-135M-Instruct
NAME=smollm2-135m-instruct
# bfloat16 needs AVX-512 to be fast on a CPU: on an AVX2-only CPU vLLM's bfloat16 path generated 9 tokens/s against
# 43 in float32 (bench/README.md), and stalled under load. JUDGEWATCH_JUDGE_DTYPE overrides the choice.
if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then default_dtype=bfloat16; else default_dtype=float32; fi
DTYPE=${JUDGEWATCH_JUDGE_DTYPE:-$default_dtype}

running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }
healthy() { curl -fsS -m 2 "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; }
wait_healthy() {  # up to $1 seconds; exits 0 once healthy, 1 when vLLM exited or the time ran out
  for _ in $(seq 1 "$1"); do
    if healthy; then echo "[judge] ready: http://127.0.0.1:$PORT/v1 (model $NAME, pid $(cat "$PIDFILE"))"; exit 0; fi
    if ! running; then echo "[judge] vLLM exited during start-up; last lines of $LOG:" >&2; tail -30 "$LOG" >&2; exit 1; fi
    sleep 1
  done
  echo "[judge] not healthy after $1 s; see $LOG" >&2; exit 1
}

cmd=${1:-start}
case "$cmd" in
  start|spawn)
    if running && healthy; then echo "[judge] already serving on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"; exit 0; fi
    if running; then
      echo "[judge] already starting on 127.0.0.1:$PORT (pid $(cat "$PIDFILE")), log $LOG"
    else
      [ -f "$MODEL_DIR/.complete" ] || bash "$here/scripts/judge_setup.sh"
      mkdir -p "$JUDGE_HOME/cache/vllm" "$JUDGE_HOME/cache/inductor" "$JUDGE_HOME/tmp"
      echo "[judge] starting vLLM (CPU, $DTYPE) on 127.0.0.1:$PORT, log $LOG"
      VLLM_CPU_KVCACHE_SPACE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 \
      VLLM_CACHE_ROOT=$JUDGE_HOME/cache/vllm TORCHINDUCTOR_CACHE_DIR=$JUDGE_HOME/cache/inductor \
      TMPDIR=$JUDGE_HOME/tmp HF_HOME=$JUDGE_HOME/cache/hf \
      setsid "$JUDGE_HOME/venv/bin/python" -m vllm.entrypoints.openai.api_server \
        --model "$MODEL_DIR" --served-model-name "$NAME" --host 127.0.0.1 --port "$PORT" \
        --dtype "$DTYPE" --max-model-len 2048 --enforce-eager --seed 0 \
        --structured-outputs-config '{"backend":"guidance","disable_any_whitespace":true}' \
        >"$LOG" 2>&1 < /dev/null &
      echo $! >"$PIDFILE"
      printf '{"dtype": "%s"}\n' "$DTYPE" >"$SERVINGFILE"
    fi
    [ -f "$SERVINGFILE" ] && echo "[judge] serving flags: export JUDGEWATCH_JUDGE_SERVING='$(cat "$SERVINGFILE")'"
    if [ "$cmd" = spawn ]; then echo "[judge] not waiting: \`$0 wait\` waits for it (\`judgewatch demo\` does)"; exit 0; fi
    wait_healthy 180 ;;
  wait)
    running || { echo "[judge] not started on 127.0.0.1:$PORT" >&2; exit 1; }
    wait_healthy "${2:-180}" ;;
  stop)
    if running; then
      pid=$(cat "$PIDFILE"); kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -0 "$pid" 2>/dev/null && { kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid"; }
      echo "[judge] stopped (pid $pid)"
    fi
    rm -f "$PIDFILE" "$SERVINGFILE" ;;
  status)
    if running && healthy; then echo "serving on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"; else echo "not serving"; exit 1; fi ;;
  *) echo "usage: $0 start|spawn|wait [SECONDS]|stop|status" >&2; exit 2 ;;
esac
