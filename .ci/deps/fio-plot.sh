#!/usr/bin/env bash
# fio-plot, the PyPI package fio users chart their results with, in a
# virtual environment of its own (Debian's Python refuses system-wide pip
# installs), with `six` for fio's own fio_jsonplus_clat2csv. The fio
# output tests (crates/cli/tests/fio_tools.rs) look for it here.
set -euo pipefail
dir="${CINT_TOOLS_DIR:-${HOME:-/root}/.cache/cint-tools}/fio-plot"
version=1.1.21
if ! "$dir/bin/python" -c 'import six' >/dev/null 2>&1 \
    || ! "$dir/bin/pip" show fio-plot 2>/dev/null | grep -qx "Version: $version"; then
    rm -rf "$dir"
    mkdir -p "$(dirname "$dir")"
    if ! python3 -m venv "$dir" >/dev/null 2>&1; then
        # Debian ships venv support (ensurepip) in a package of its own.
        rm -rf "$dir"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv >/dev/null
        /usr/bin/python3 -m venv "$dir"
    fi
    "$dir/bin/pip" install -q --disable-pip-version-check "fio-plot==$version" six
fi
test -x "$dir/bin/fio-plot"
echo "fio-plot $version in $dir"
