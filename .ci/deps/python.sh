#!/usr/bin/env bash
# The Python side's test dependencies, from PyPI, in a virtual environment
# of their own (Debian's Python refuses system-wide pip installs): maturin
# builds the package `cinterrupts` (python/), pytest runs python/tests on
# a real Ray, pandas, SimPy and matplotlib are what the package, the
# example and the walk-through use. `.ci/test` builds the package into
# this environment and runs the tests with its Python.
set -euo pipefail
dir="${CINT_TOOLS_DIR:-${HOME:-/root}/.cache/cint-tools}/python"
# Pinned so that a CI run tests what was tested here.
pins=(maturin==1.16.0 ray==2.60.0 pandas==3.1.1 pytest==9.2.0 simpy==4.1.2 matplotlib==3.11.2)
stamp="$dir/.pins"
if [ "$(cat "$stamp" 2>/dev/null)" != "${pins[*]}" ] || ! "$dir/bin/python" -c 'import ray, pandas' >/dev/null 2>&1; then
    rm -rf "$dir"
    mkdir -p "$(dirname "$dir")"
    if ! python3 -m venv "$dir" >/dev/null 2>&1; then
        # Debian ships venv support (ensurepip) in a package of its own.
        rm -rf "$dir"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv >/dev/null
        /usr/bin/python3 -m venv "$dir"
    fi
    "$dir/bin/pip" install -q --disable-pip-version-check "${pins[@]}"
    echo "${pins[*]}" > "$stamp"
fi
"$dir/bin/python" -c 'import sys, ray, pandas; print("python", sys.version.split()[0], "ray", ray.__version__, "pandas", pandas.__version__)'
echo "python test environment in $dir"
