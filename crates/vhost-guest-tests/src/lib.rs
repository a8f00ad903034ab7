//! End-to-end test of `cint vhost` with a real, unmodified guest kernel
//! (issue #12): QEMU (TCG) boots a Debian cloud kernel with an initramfs
//! built here (busybox-static, the virtio modules and the static guest
//! program in `guest/`), one vhost-user-blk disk per strategy, each served
//! by its own back end, and one disk with two queues on a guest with two
//! vCPUs. The guest checks data integrity and reports its interrupt counts,
//! per queue vector; the host checks the images and compares the counts
//! with the back ends', per queue.
//!
//! Prerequisites (installed by `.ci/deps/qemu-guest.sh`): Debian's
//! `qemu-system-x86` and `busybox-static`, the kernel package extracted
//! under `CINT_GUEST_KERNEL_DIR` (default `/var/cache/cint-guest/root`), a
//! C compiler with a static libc, and the `cint` binary.

pub mod backend;
pub mod error;
pub mod guest_output;
pub mod initramfs;
pub mod kernel;
pub mod pattern;
pub mod qemu;
pub mod run;
pub mod skip;

pub use error::{Error, Result};
