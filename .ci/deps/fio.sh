#!/usr/bin/env bash
# fio from Debian's packages: its example job files and its own
# post-processing tools are what the fio tests run against.
set -euo pipefail
if ! command -v fio >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio >/dev/null
fi
fio --version
