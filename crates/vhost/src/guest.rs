//! Guest-memory accesses of the request path with one address
//! translation each.
//!
//! vm-memory's `Bytes` accessors walk a slice iterator built to cross
//! region boundaries; out of line, that walk cost about 15% of the back
//! end's CPU (issue #12). A guest's RAM is one or a few large regions, so
//! a header, a status byte or a data buffer almost always lies in one:
//! these helpers translate once (`get_slice`) and fall back to the general
//! accessor only for a range that crosses regions or leaves memory, so
//! what they accept and refuse is exactly what the general path does.

use vm_memory::bitmap::Bitmap;
use vm_memory::{Address, ByteValued, Bytes, GuestAddress, GuestMemoryBackend, VolatileSlice};

/// `count` bytes at `addr` if they lie in one region.
fn one_region<M: GuestMemoryBackend>(
    mem: &M,
    addr: GuestAddress,
    count: usize,
) -> Option<VolatileSlice<'_, vm_memory::bitmap::MS<'_, M>>> {
    mem.get_slice(addr, count).ok()
}

/// Whether `[addr, addr + len)` is guest memory.
pub fn in_memory<M: GuestMemoryBackend>(mem: &M, addr: GuestAddress, len: usize) -> bool {
    one_region(mem, addr, len).is_some() || mem.check_range(addr, len)
}

/// Reads a `T` at `addr`.
pub fn read_obj<M: GuestMemoryBackend, T: ByteValued>(mem: &M, addr: GuestAddress) -> Option<T> {
    match one_region(mem, addr, std::mem::size_of::<T>()) {
        Some(s) => s.read_obj(0).ok(),
        None => mem.read_obj(addr).ok(),
    }
}

/// Writes `val` at `addr`; false if it is not all guest memory.
pub fn write_obj<M: GuestMemoryBackend, T: ByteValued>(
    mem: &M,
    val: T,
    addr: GuestAddress,
) -> bool {
    match one_region(mem, addr, std::mem::size_of::<T>()) {
        Some(s) => s.write_obj(val, 0).is_ok(),
        None => mem.write_obj(val, addr).is_ok(),
    }
}

/// Writes `buf` at `addr`; false if it is not all guest memory.
pub fn write_slice<M: GuestMemoryBackend>(mem: &M, buf: &[u8], addr: GuestAddress) -> bool {
    match one_region(mem, addr, buf.len()) {
        Some(s) => s.write_slice(buf, 0).is_ok(),
        None => mem.write_slice(buf, addr).is_ok(),
    }
}

/// Zeroes `[addr, addr + len)`; false if it is not all guest memory.
/// In one region this is a `memset`, not a copy from a page of zeros.
pub fn zero<M: GuestMemoryBackend>(mem: &M, addr: GuestAddress, len: usize) -> bool {
    if let Some(s) = one_region(mem, addr, len) {
        let guard = s.ptr_guard_mut();
        // SAFETY: `get_slice` checked that these `len` bytes lie in one
        // mapped region that `mem` keeps mapped while `s` lives; guest
        // memory is plain bytes shared with the guest, which is what
        // vm-memory's own writes into a `VolatileSlice` assume too.
        unsafe { std::ptr::write_bytes(guard.as_ptr(), 0, len) };
        s.bitmap().mark_dirty(0, len);
        return true;
    }
    static ZEROS: [u8; 4096] = [0; 4096];
    let mut off = 0usize;
    while off < len {
        let n = (len - off).min(ZEROS.len());
        let Some(at) = addr.checked_add(off as u64) else {
            return false;
        };
        if mem.write_slice(&ZEROS[..n], at).is_err() {
            return false;
        }
        off += n;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use vm_memory::GuestMemoryMmap;

    /// Two adjacent regions, so a range can cross from one to the other.
    fn two_regions() -> GuestMemoryMmap<()> {
        GuestMemoryMmap::from_ranges(&[(GuestAddress(0), 0x1000), (GuestAddress(0x1000), 0x1000)])
            .unwrap()
    }

    #[test]
    fn agrees_with_the_general_path_inside_across_and_outside() {
        let mem = two_regions();
        for (addr, len) in [
            (0x10, 16),
            (0xff8, 16),
            (0x1ff8, 16),
            (0x2000, 1),
            (0xfff, 2),
        ] {
            let a = GuestAddress(addr);
            assert_eq!(
                in_memory(&mem, a, len),
                mem.check_range(a, len),
                "{addr:#x}+{len}"
            );
            let ok = write_obj(&mem, [0x5au8; 16], a);
            assert_eq!(ok, mem.check_range(a, 16), "{addr:#x}");
            if ok {
                assert_eq!(read_obj::<_, [u8; 16]>(&mem, a), Some([0x5a; 16]));
                assert_eq!(mem.read_obj::<[u8; 16]>(a).ok(), Some([0x5a; 16]));
            }
        }
        assert!(write_slice(&mem, &[7; 32], GuestAddress(0xff0)));
        assert_eq!(
            mem.read_obj::<[u8; 32]>(GuestAddress(0xff0)).ok(),
            Some([7; 32])
        );
        assert!(!write_slice(&mem, &[7; 32], GuestAddress(0x1ff0)));
        assert_eq!(read_obj::<_, u64>(&mem, GuestAddress(0x1ffc)), None);
        // Zeroing inside one region, across both, and past the end.
        assert!(zero(&mem, GuestAddress(0xff4), 8));
        assert_eq!(
            mem.read_obj::<[u8; 16]>(GuestAddress(0xff0)).ok(),
            Some([7, 7, 7, 7, 0, 0, 0, 0, 0, 0, 0, 0, 7, 7, 7, 7])
        );
        assert!(zero(&mem, GuestAddress(0xff0), 32));
        assert_eq!(
            mem.read_obj::<[u8; 32]>(GuestAddress(0xff0)).ok(),
            Some([0; 32])
        );
        assert!(!zero(&mem, GuestAddress(0x1ff0), 32));
    }
}
