#!/usr/bin/env bash
# The test command behind `make test`: brings up what the tests need, runs pytest, tears it down.
# - the real vLLM CPU judge on 127.0.0.1:$JUDGEWATCH_JUDGE_PORT (default 8012, apart from the demo's 8011)
# - PostgreSQL at $JUDGEWATCH_TEST_POSTGRES_URL: used as it is when it answers; otherwise installed from Debian's
#   packages, started, and given the URL's role and database (scripts/test_postgres.sh)
# - Debian's chromium for the browser tests (apt-get, never a playwright browser download); with `CI` set, a
#   browser test without chromium fails instead of skipping
# - Debian's prometheus (promtool, prometheus) for the alert-rule, dashboard and scrape tests
# - Debian's npm, with which the az:// tests install Azurite (with `CI` set, they fail without it)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
export JUDGEWATCH_JUDGE_PORT=${JUDGEWATCH_JUDGE_PORT:-8012}
export JUDGEWATCH_TEST_VLLM_URL=${JUDGEWATCH_TEST_VLLM_URL:-http://127.0.0.1:$JUDGEWATCH_JUDGE_PORT/v1}
export JUDGEWATCH_TEST_POSTGRES_URL=${JUDGEWATCH_TEST_POSTGRES_URL:-postgresql+psycopg://postgres@127.0.0.1:5432/test}
export PREFECT_SERVER_ANALYTICS_ENABLED=false GRADIO_ANALYTICS_ENABLED=False DO_NOT_TRACK=1
export PREFECT_HOME=${PREFECT_HOME:-$here/.judgewatch/prefect-test}
mkdir -p "$PREFECT_HOME"  # Prefect creates only the last level of its home folder

bash scripts/test_postgres.sh

install() {  # install PACKAGE WHAT COMMAND...: Debian's PACKAGE, for WHAT, when one of the COMMANDs is missing
  local package=$1 what=$2 command; shift 2
  for command in "$@"; do
    command -v "$command" >/dev/null && continue
    echo "[tests] installing Debian's $package for $what"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null) \
      || echo "[tests] could not install $package" >&2
    return
  done
}
install chromium "the browser tests" chromium
bash scripts/ui_fonts.sh  # the browser tests' Chinese items need a CJK font, as the review UI does
install prometheus "the alert-rule and scrape tests" promtool prometheus
install npm "the Azurite tests (judgewatch/testing/object_stores.py)" npm

started_judge=0
if ! JUDGEWATCH_JUDGE_PORT=$JUDGEWATCH_JUDGE_PORT bash scripts/judge_serve.sh status >/dev/null 2>&1; then
  bash scripts/judge_serve.sh start
  started_judge=1
fi
cleanup() { [ "$started_judge" = 1 ] && bash scripts/judge_serve.sh stop || true; }
trap cleanup EXIT

.venv/bin/python -m pytest "$@"
