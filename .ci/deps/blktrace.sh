#!/usr/bin/env bash
# blkparse from Debian's blktrace package: the trace reader's test checks
# cint-trace's blktrace parser against blkparse's reading of the same file.
set -euo pipefail
if ! command -v blkparse >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq blktrace >/dev/null
fi
blkparse -V
