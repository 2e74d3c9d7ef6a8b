#!/usr/bin/env bash
# Install Debian's `chromium` (used headless by tests/test_docs_browser.py to check that the built
# documentation typesets its math offline) unless a chromium is already on PATH. Idempotent.
set -euo pipefail
for candidate in chromium chromium-browser; do
    if command -v "$candidate" >/dev/null 2>&1; then
        exit 0
    fi
done
if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
else
    SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q chromium
command -v chromium >/dev/null 2>&1 || { echo "install-chromium: chromium still not on PATH" >&2; exit 1; }
