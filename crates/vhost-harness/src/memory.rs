//! The "guest" memory the front end shares with the back end: one memfd,
//! mapped shared at guest-physical address 0, handed over with
//! `SET_MEM_TABLE`. Everything the back end reads (rings, request headers,
//! data) lives here, and everything it writes comes back through it.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};

use crate::Error;

/// Guest-physical addresses are offsets into the region, which starts at 0.
pub type Gpa = u64;

/// A shared memfd mapping, with a bump allocator for rings and buffers.
pub struct GuestMemory {
    file: File,
    base: NonNull<u8>,
    size: u64,
    next_free: AtomicU64,
}

// SAFETY: the mapping is plain shared memory that lives as long as the
// struct; every access goes through bounds-checked methods that use
// volatile or atomic operations, because the back end writes it concurrently.
unsafe impl Send for GuestMemory {}
// SAFETY: as for `Send`: no method hands out references into the mapping.
unsafe impl Sync for GuestMemory {}

impl GuestMemory {
    /// Creates `size` bytes of zeroed shared memory (rounded up to a page).
    pub fn new(size: u64) -> Result<Self, Error> {
        let size = size.div_ceil(4096) * 4096;
        let name = c"cint-vhost-harness";
        // SAFETY: `name` is a valid NUL-terminated string; the result is checked.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(Error::Memory(io::Error::last_os_error()));
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        let file = unsafe { File::from_raw_fd(fd) };
        file.set_len(size).map_err(Error::Memory)?;
        // SAFETY: mapping a file we own, of the length we just set; the
        // result is checked before use and unmapped in `Drop`.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(Error::Memory(io::Error::last_os_error()));
        }
        let base = NonNull::new(ptr.cast::<u8>())
            .ok_or_else(|| Error::Memory(io::Error::other("mmap returned a null mapping")))?;
        Ok(Self {
            file,
            base,
            size,
            next_free: AtomicU64::new(0),
        })
    }

    /// The memfd the back end maps.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Size in bytes; guest-physical addresses from `size()` on are outside
    /// guest memory.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The front end's own virtual address of the mapping (vhost-user's
    /// `userspace_addr`, and the base of ring addresses in `SET_VRING_ADDR`).
    pub fn host_addr(&self) -> u64 {
        self.base.as_ptr() as u64
    }

    /// Reserves `len` bytes aligned to `align` (a power of two).
    pub fn alloc(&self, len: u64, align: u64) -> Result<Gpa, Error> {
        let mut cur = self.next_free.load(Ordering::Relaxed);
        loop {
            let start = cur.div_ceil(align) * align;
            let end = start.checked_add(len).ok_or(Error::OutOfGuestMemory)?;
            if end > self.size {
                return Err(Error::OutOfGuestMemory);
            }
            match self
                .next_free
                .compare_exchange(cur, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Ok(start),
                Err(seen) => cur = seen,
            }
        }
    }

    /// The allocator's position, to hand back with `release_to`.
    pub fn mark(&self) -> Gpa {
        self.next_free.load(Ordering::Relaxed)
    }

    /// Frees everything allocated since `mark`, for reuse by the next run.
    /// The caller makes sure the device no longer owns any of it.
    pub fn release_to(&self, mark: Gpa) {
        self.next_free.fetch_min(mark, Ordering::Relaxed);
    }

    fn ptr(&self, gpa: Gpa, len: u64, align: u64) -> *mut u8 {
        let end = gpa.checked_add(len);
        assert!(
            end.is_some_and(|e| e <= self.size) && gpa % align == 0,
            "front-end bug: access {gpa:#x}+{len} outside or misaligned in guest memory"
        );
        // SAFETY: `gpa + len <= size`, so the result stays inside the mapping.
        unsafe { self.base.as_ptr().add(gpa as usize) }
    }

    /// Copies `data` into guest memory at `gpa`.
    pub fn write(&self, gpa: Gpa, data: &[u8]) {
        let p = self.ptr(gpa, data.len() as u64, 1);
        // SAFETY: the range is inside the mapping (checked by `ptr`); the back
        // end may touch it concurrently, which only means it sees old or new
        // bytes: there are no Rust references into the mapping.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) };
    }

    /// Copies guest memory at `gpa` into `out`.
    pub fn read(&self, gpa: Gpa, out: &mut [u8]) {
        let p = self.ptr(gpa, out.len() as u64, 1);
        // SAFETY: as in `write`.
        unsafe { std::ptr::copy_nonoverlapping(p, out.as_mut_ptr(), out.len()) };
    }

    /// Fills `len` bytes at `gpa` with `byte`.
    pub fn fill(&self, gpa: Gpa, len: u64, byte: u8) {
        let p = self.ptr(gpa, len, 1);
        // SAFETY: as in `write`.
        unsafe { std::ptr::write_bytes(p, byte, len as usize) };
    }

    /// Reads one byte with a volatile load (the back end writes status bytes).
    pub fn read_u8(&self, gpa: Gpa) -> u8 {
        let p = self.ptr(gpa, 1, 1);
        // SAFETY: in bounds (checked by `ptr`).
        unsafe { std::ptr::read_volatile(p) }
    }

    /// Writes one byte with a volatile store.
    pub fn write_u8(&self, gpa: Gpa, v: u8) {
        let p = self.ptr(gpa, 1, 1);
        // SAFETY: in bounds (checked by `ptr`).
        unsafe { std::ptr::write_volatile(p, v) };
    }

    /// Writes a little-endian u32 (x86 and every host we run on is little-endian,
    /// which virtio 1.0 requires of the layout).
    pub fn write_u32(&self, gpa: Gpa, v: u32) {
        self.write(gpa, &v.to_le_bytes());
    }

    /// Writes a little-endian u64.
    pub fn write_u64(&self, gpa: Gpa, v: u64) {
        self.write(gpa, &v.to_le_bytes());
    }

    /// Reads a little-endian u32.
    pub fn read_u32(&self, gpa: Gpa) -> u32 {
        let mut b = [0u8; 4];
        self.read(gpa, &mut b);
        u32::from_le_bytes(b)
    }

    /// A 16-bit ring index shared with the back end.
    pub fn atomic_u16(&self, gpa: Gpa) -> &AtomicU16 {
        let p = self.ptr(gpa, 2, 2);
        // SAFETY: aligned (checked by `ptr`), inside a mapping that lives as
        // long as `self`; the back end accesses it with atomic operations too.
        unsafe { &*(p.cast::<AtomicU16>()) }
    }
}

impl Drop for GuestMemory {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`; no references into
        // it outlive `self` (atomics borrowed from it are tied to `&self`).
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.size as usize) };
    }
}
