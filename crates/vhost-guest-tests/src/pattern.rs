//! The pseudo-random pattern the guest writes, regenerated on the host to
//! check the image byte for byte. Must match `guest/cint-guest.c` exactly.

/// splitmix64's output function for input `x`.
pub fn splitmix64(x: u64) -> u64 {
    let mut x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Byte at disk offset `offset` of the pattern with `seed`. It depends on
/// the position, so data written to or read from the wrong place differs.
pub fn pattern_byte(seed: u64, offset: u64) -> u8 {
    let word = splitmix64(seed.wrapping_add(offset / 8));
    (word >> (8 * (offset % 8))) as u8
}

/// FNV-1a 64 state before any byte.
pub const FNV_OFFSET: u64 = 0xCBF2_9CE4_8422_2325;

/// FNV-1a 64 of `bytes`, continuing from `hash`.
pub fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01B3);
    }
    hash
}

/// Bytes of `data`, which starts at disk offset `start`, that differ from
/// the pattern.
pub fn mismatches(seed: u64, start: u64, data: &[u8]) -> u64 {
    data.iter()
        .zip(start..)
        .filter(|&(&b, off)| b != pattern_byte(seed, off))
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference_sequence() {
        // The first outputs of the reference splitmix64 generator seeded
        // with 0 (its state advances by the golden ratio each call).
        assert_eq!(splitmix64(0), 0xE220_A839_7B1D_CDAF);
        assert_eq!(splitmix64(0x9E37_79B9_7F4A_7C15), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn fnv1a_matches_the_published_vectors() {
        assert_eq!(fnv1a(FNV_OFFSET, b""), 0xCBF2_9CE4_8422_2325);
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xAF63_DC4C_8601_EC8C);
    }

    #[test]
    fn a_shifted_block_is_detected() {
        let seed = 7;
        let good: Vec<u8> = (4096..8192).map(|o| pattern_byte(seed, o)).collect();
        assert_eq!(mismatches(seed, 4096, &good), 0);
        assert!(mismatches(seed, 0, &good) > 4000);
    }
}
