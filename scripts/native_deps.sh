#!/usr/bin/env bash
# What the package's C extension is built with: a C compiler and OpenSSL's headers for the sampling rule's hash
# over whole blocks (judgewatch/traffic/_unit_hash.c). Installed from Debian's packages (gcc, libssl-dev) when
# missing and apt-get can run (root or sudo); otherwise the install goes on without it and sampling computes the
# same hashes in Python (about 0.9 us a row slower).
set -euo pipefail
have() { command -v "${1}" >/dev/null; }
if have cc && [ -f /usr/include/openssl/sha.h ]; then
  exit 0
fi
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif have sudo && sudo -n true 2>/dev/null; then sudo "$@"; else return 1; fi; }
if have apt-get && as_root true; then
  echo "[setup] installing Debian's gcc and libssl-dev for the sampling C extension"
  as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libssl-dev >/dev/null \
    && exit 0
fi
echo "[setup] no C compiler or OpenSSL headers: sampling runs without its C extension (same values, slower)" >&2
