#!/usr/bin/env bash
# The system packages the test suite drives for real: Debian's chromium and chromium-driver (the report.html
# browser test; Selenium is given the driver's path and never downloads one) and PostgreSQL (the history's
# team store). Installed where missing and this is root on Debian; elsewhere the tests that need them skip
# (fail under CI=true), naming the install line. Called by `make test`.
set -euo pipefail
missing=()
command -v chromium >/dev/null && command -v chromedriver >/dev/null || missing+=(chromium chromium-driver)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "note: not installed (needs root and apt-get): ${missing[*]}; the tests that drive them will skip" >&2
    exit 0
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
