#!/usr/bin/env bash
# fio-plot, the PyPI package fio users chart their results with, in a
# virtual environment of its own (Debian's Python refuses system-wide pip
# installs), with `six` for fio's own fio_jsonplus_clat2csv. The fio
# output tests (crates/cli/tests/fio_tools.rs) look for it here.
set -euo pipefail
. "$(dirname "$0")/lib/venv.sh"
dir="${CINT_TOOLS_DIR:-${HOME:-/root}/.cache/cint-tools}/fio-plot"
version=1.1.21
if ! "$dir/bin/python" -c 'import six' >/dev/null 2>&1 \
    || ! "$dir/bin/pip" show fio-plot 2>/dev/null | grep -qx "Version: $version"; then
    fresh_venv "$dir"
    "$dir/bin/pip" install -q --disable-pip-version-check "fio-plot==$version" six
fi
test -x "$dir/bin/fio-plot"
echo "fio-plot $version in $dir"
