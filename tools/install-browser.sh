#!/usr/bin/env sh
# Headless Chromium and its WebDriver for the browser tests of the explorer page: Debian's
# `chromium` and `chromium-driver` packages (browsers downloaded at install time by other
# tools do not run here). Does nothing when both are already on PATH.
set -eu
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends chromium chromium-driver
