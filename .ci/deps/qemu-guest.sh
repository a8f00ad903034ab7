#!/usr/bin/env bash
# What the guest end-to-end test (crates/vhost-guest-tests) needs, from
# Debian's package registry only: QEMU (TCG; CI has no KVM), busybox-static
# for the initramfs, a static libc for the guest program, and the cloud
# kernel package, extracted into a cache folder and never installed as
# this machine's kernel. Idempotent: a second run does nothing.
set -euo pipefail

KERNEL_DIR="${CINT_GUEST_KERNEL_DIR:-/var/cache/cint-guest/root}"
CACHE="$(dirname "$KERNEL_DIR")"
apt_updated=0
apt_update() {
    if [ "$apt_updated" = 0 ]; then
        apt-get -o DPkg::Lock::Timeout=300 update -qq
        apt_updated=1
    fi
}

missing=()
command -v qemu-system-x86_64 >/dev/null 2>&1 || missing+=(qemu-system-x86)
[ -x /bin/busybox ] || missing+=(busybox-static)
[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || missing+=(libc6-dev)
if [ "${#missing[@]}" -gt 0 ]; then
    apt_update
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
        --no-install-recommends "${missing[@]}"
fi

if ls "$KERNEL_DIR"/boot/vmlinuz-* >/dev/null 2>&1; then
    echo "guest kernel: $(ls "$KERNEL_DIR"/boot/vmlinuz-*)"
    exit 0
fi
apt_update
# The metapackage names the current cloud kernel; download that package.
image=$(apt-cache depends linux-image-cloud-amd64 \
    | awk '/Depends: linux-image-[0-9].*-cloud-amd64$/ { print $2; exit }')
if [ -z "$image" ]; then
    echo "qemu-guest.sh: no kernel package behind linux-image-cloud-amd64" >&2
    exit 1
fi
mkdir -p "$CACHE"
tmp=$(mktemp -d "$CACHE/download.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# apt downloads as the _apt user where it can write.
chmod 0755 "$tmp"
chown _apt "$tmp" 2>/dev/null || true
(cd "$tmp" && apt-get download "$image" >/dev/null)
mkdir -p "$tmp/root"
dpkg-deb -x "$tmp"/"$image"_*.deb "$tmp/root"
rm -rf "$KERNEL_DIR"
mv "$tmp/root" "$KERNEL_DIR"
echo "guest kernel: $(ls "$KERNEL_DIR"/boot/vmlinuz-*)"
