//! Heap buffers aligned for `O_DIRECT`.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

/// Alignment of [`IoBuf::new`]: a page, enough for every `O_DIRECT`
/// device's logical block.
pub const DIRECT_ALIGN: usize = 4096;

/// An owned, zero-initialised byte buffer whose start is aligned for
/// `O_DIRECT` (or deliberately not: [`IoBuf::misaligned`]).
pub struct IoBuf {
    base: NonNull<u8>,
    layout: Layout,
    offset: usize,
    len: usize,
}

// SAFETY: IoBuf uniquely owns its allocation, like a Box<[u8]>.
unsafe impl Send for IoBuf {}
// SAFETY: shared references only read the bytes.
unsafe impl Sync for IoBuf {}

impl IoBuf {
    /// A zeroed buffer of `len` bytes aligned to [`DIRECT_ALIGN`].
    pub fn new(len: usize) -> IoBuf {
        Self::with_offset(len, 0)
    }

    /// A zeroed buffer of `len` bytes starting `shift` bytes past an
    /// aligned address: an `O_DIRECT` request on it fails with `EINVAL`
    /// unless `shift` is a multiple of the device's block size.
    pub fn misaligned(len: usize, shift: usize) -> IoBuf {
        Self::with_offset(len, shift)
    }

    fn with_offset(len: usize, offset: usize) -> IoBuf {
        let size = (len + offset).max(1);
        let layout = match Layout::from_size_align(size, DIRECT_ALIGN) {
            Ok(layout) => layout,
            Err(_) => std::alloc::handle_alloc_error(Layout::new::<u8>()),
        };
        // SAFETY: `layout` has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let Some(base) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(layout)
        };
        IoBuf {
            base,
            layout,
            offset,
            len,
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length buffer.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `offset + len` bytes from `base` are allocated and
        // initialised (zeroed at allocation), and `&self` forbids writers.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(self.offset), self.len) }
    }

    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes this the only
        // reference.
        unsafe { std::slice::from_raw_parts_mut(self.base.as_ptr().add(self.offset), self.len) }
    }

    /// Address of the first byte, for the device.
    pub(crate) fn addr(&self) -> usize {
        self.base.as_ptr() as usize + self.offset
    }
}

impl Drop for IoBuf {
    fn drop(&mut self) {
        // SAFETY: `base` was allocated with exactly `layout`.
        unsafe { dealloc(self.base.as_ptr(), self.layout) };
    }
}

impl std::fmt::Debug for IoBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IoBuf")
            .field("len", &self.len)
            .field("offset", &self.offset)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_and_contents() {
        let mut buf = IoBuf::new(8192);
        assert_eq!(buf.addr() % DIRECT_ALIGN, 0);
        assert!(buf.as_slice().iter().all(|&b| b == 0));
        buf.as_mut_slice()[8191] = 7;
        assert_eq!(buf.as_slice()[8191], 7);
        let odd = IoBuf::misaligned(4096, 1);
        assert_eq!(odd.addr() % DIRECT_ALIGN, 1);
        assert_eq!(odd.len(), 4096);
    }
}
