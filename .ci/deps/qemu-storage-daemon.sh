#!/usr/bin/env bash
# qemu-storage-daemon: the peer vhost-user-blk back end the front-end
# harness (crates/vhost-harness) measures ours against and checks its own
# data path with. Debian ships it in qemu-system-common. Idempotent.
set -euo pipefail
if command -v qemu-storage-daemon >/dev/null 2>&1; then
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
# Another installer may hold the dpkg lock (the guest test's deps run too).
apt_get() { apt-get -o DPkg::Lock::Timeout=600 "$@"; }
apt_get update -qq
apt_get install -y -qq --no-install-recommends qemu-system-common
command -v qemu-storage-daemon >/dev/null
