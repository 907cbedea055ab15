#!/usr/bin/env bash
# Debian's chromium for the memory browser's test (tests/http/test_browser.py drives it with
# playwright-core; no browser is ever downloaded). Installs it when missing, as root on Debian;
# elsewhere it says what to install.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
  echo "install Debian's chromium (/usr/bin/chromium) for the browser test" >&2
fi
