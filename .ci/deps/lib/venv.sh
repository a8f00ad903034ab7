# Sourced by the .ci/deps scripts that need a Python virtual environment of
# their own (Debian's Python refuses system-wide pip installs).

# fresh_venv DIR: a new, empty virtual environment at DIR (whatever was
# there is removed), with Debian's venv support installed if the Python at
# hand lacks it.
fresh_venv() {
    local dir="$1"
    rm -rf "$dir"
    mkdir -p "$(dirname "$dir")"
    if ! python3 -m venv "$dir" >/dev/null 2>&1; then
        # Debian ships venv support (ensurepip) in a package of its own.
        rm -rf "$dir"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv >/dev/null
        /usr/bin/python3 -m venv "$dir"
    fi
}
