#!/usr/bin/env bash
# Captures a real blktrace of a fio job inside a QEMU guest, where the guest
# kernel is ours to configure (the development machine's own kernel refuses
# blktrace's relay files). Not part of CI: it boots a VM and runs fio once.
#
# Needs what .ci/deps installs: qemu-guest.sh (QEMU, busybox-static, the
# Debian cloud kernel unpacked in a cache folder), fio.sh and blktrace.sh.
#
# Usage: capture-blktrace.sh OUT_DIR
# Writes into OUT_DIR: fio-guest.blktrace.0 (the binary trace of /dev/vda,
# queue and complete events only), fio-guest.fio (the job), fio.out (fio's
# report), console.log (the guest's serial console) and versions.txt.
set -euo pipefail

out=${1:?usage: capture-blktrace.sh OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
kernel_root="${CINT_GUEST_KERNEL_DIR:-/var/cache/cint-guest/root}"
vmlinuz=$(ls "$kernel_root"/boot/vmlinuz-* | head -n 1)
kver=${vmlinuz##*/vmlinuz-}
moddir="$kernel_root/lib/modules/$kver/kernel/drivers"
for tool in qemu-system-x86_64 fio blktrace busybox; do
    command -v "$tool" >/dev/null || { echo "capture-blktrace.sh: $tool missing (run .ci/deps)" >&2; exit 2; }
done
grep -q '^CONFIG_BLK_DEV_IO_TRACE=y' "$kernel_root/boot/config-$kver" \
    || { echo "capture-blktrace.sh: guest kernel $kver lacks CONFIG_BLK_DEV_IO_TRACE" >&2; exit 1; }

mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,out,lib/modules,lib64}

# The guest's userland: busybox for the shell, fio and blktrace with every
# shared library ldd names, at the same paths.
cp /bin/busybox "$root/bin/busybox"
for applet in sh mount mkdir sleep kill cat tar insmod poweroff sync ls; do
    ln -s busybox "$root/bin/$applet"
done
copy_with_libs() {
    local bin=$1
    cp "$bin" "$root/bin/"
    ldd "$bin" | awk '/=> \//{ print $3 } /^\t\/lib64/{ print $1 }' | while read -r lib; do
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
}
copy_with_libs "$(command -v fio)"
copy_with_libs "$(command -v blktrace)"

# virtio-pci and virtio-blk are modules in the cloud kernel; load order
# follows their dependencies.
modules="virtio/virtio_ring.ko virtio/virtio.ko virtio/virtio_pci_modern_dev.ko
virtio/virtio_pci_legacy_dev.ko virtio/virtio_pci.ko block/virtio_blk.ko"
for m in $modules; do cp "$moddir/$m" "$root/lib/modules/"; done

# Two jobs at once on the raw disk, as in fio-2jobs.fio but small enough
# for a trace of a few hundred KB: a reader at depth 4 on the first half,
# a writer capped at 2,000 IOPS on the second.
cat > "$root/fio-guest.fio" <<'EOF'
[global]
ioengine=libaio
direct=1
filename=/dev/vda
size=128m

[reader]
rw=randread
bs=4k
iodepth=4
offset=0
number_ios=1000

[writer]
rw=randwrite
bs=16k
iodepth=1
offset=128m
rate_iops=2000
number_ios=300
EOF

cat > "$root/init" <<'EOF'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /out
for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci virtio_blk; do
    insmod /lib/modules/$m.ko
done
sleep 1
cd /out
# Queue and complete events only: the requests and their completions.
blktrace -d /dev/vda -a queue -a complete -o fio-guest > blktrace.out 2>&1 &
tracer=$!
sleep 2
fio /fio-guest.fio > fio.out 2>&1
sleep 1
kill -INT $tracer
wait $tracer
cp /fio-guest.fio /out/
echo "guest: $(cat /proc/version)" > guest.txt
tar -cf /dev/vdb -C /out .
sync
echo CAPTURE-DONE
poweroff -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null) > "$work/initramfs.cpio"

truncate -s 256M "$work/disk.img"
truncate -s 64M "$work/out.img"
# TCG by default: on the development machine /dev/kvm opens, but the nested
# guest stops at boot ("KVM internal error ... emulation failure"), and
# with -cpu host QEMU aborts setting an MSR. CINT_CAPTURE_KVM=1 tries KVM.
accel=(-accel tcg)
if [ "${CINT_CAPTURE_KVM:-0}" = 1 ]; then accel=(-enable-kvm); fi
# One vCPU, so blktrace writes one per-CPU file (.0).
timeout 1200 qemu-system-x86_64 "${accel[@]}" -smp 1 -m 1024 -nographic -no-reboot \
    -kernel "$vmlinuz" -initrd "$work/initramfs.cpio" \
    -append "console=ttyS0 panic=-1 quiet" \
    -drive file="$work/disk.img",format=raw,if=virtio \
    -drive file="$work/out.img",format=raw,if=virtio \
    > "$out/console.log" 2>&1 || true
grep -q CAPTURE-DONE "$out/console.log" \
    || { echo "capture-blktrace.sh: the guest did not finish; see $out/console.log" >&2; exit 1; }
tar -xf "$work/out.img" -C "$out"
{
    echo "date: $(date -u +%FT%TZ)"
    echo "guest kernel: $kver"
    cat "$out/guest.txt"
    echo "accelerator: ${accel[*]}"
    qemu-system-x86_64 --version | head -n 1
    fio --version
    blktrace -v
} > "$out/versions.txt"
ls -l "$out"
