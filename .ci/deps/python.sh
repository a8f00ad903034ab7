#!/usr/bin/env bash
# The Python side's test dependencies, from PyPI, in a virtual environment
# of their own (Debian's Python refuses system-wide pip installs): maturin
# builds the package `cinterrupts` (python/), pytest runs python/tests on
# a real Ray, pandas, SimPy and matplotlib are what the package, the
# example and the walk-through use. `.ci/test` builds the package into
# this environment and runs the tests with its Python.
set -euo pipefail
. "$(dirname "$0")/lib/venv.sh"
dir="${CINT_TOOLS_DIR:-${HOME:-/root}/.cache/cint-tools}/python"
# Pinned so that a CI run tests what was tested here.
pins=(maturin==1.16.0 ray==2.60.0 pandas==3.1.1 pytest==9.2.0 simpy==4.1.2 matplotlib==3.11.2)
stamp="$dir/.pins"
if [ "$(cat "$stamp" 2>/dev/null)" != "${pins[*]}" ] || ! "$dir/bin/python" -c 'import ray, pandas' >/dev/null 2>&1; then
    fresh_venv "$dir"
    "$dir/bin/pip" install -q --disable-pip-version-check "${pins[@]}"
    echo "${pins[*]}" > "$stamp"
fi
"$dir/bin/python" -c 'import sys, ray, pandas; print("python", sys.version.split()[0], "ray", ray.__version__, "pandas", pandas.__version__)'
echo "python test environment in $dir"
