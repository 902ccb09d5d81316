#!/usr/bin/env bash
# A CJK font for the review UI: without one, Chinese items (HalluQA) render as empty boxes in the browser.
# Installed from Debian's packages (fonts-noto-cjk) when fontconfig finds no Chinese font and apt-get can run
# (root or sudo); otherwise one line says how, and the caller goes on. Called by `make demo`, `make review-ui`,
# `make stack-up` and `make test`.
set -uo pipefail
if [ -n "$(fc-list :lang=zh 2>/dev/null)" ]; then
  exit 0
fi
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"; else return 1; fi; }
if command -v apt-get >/dev/null && as_root true; then
  echo "[setup] installing a CJK font (Debian's fonts-noto-cjk) so the review UI shows Chinese text"
  as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-noto-cjk >/dev/null \
    && exit 0
fi
echo "[setup] no CJK font: Chinese items show as boxes in the review UI (install fonts-noto-cjk, or any CJK font)" >&2
