//! What a job completed in its warm-up, which both engines keep aside.
//!
//! fio counts a job's requests and bytes from its start (io_u.c
//! `io_completed`: `io_blocks`, `io_bytes`; ioengines.c: `total_io_u`)
//! but takes no latency sample until its ramp ends (`should_account`),
//! and drops the counts there (time.c `ramp_time_over`, libfio.c
//! `reset_all_stats`). A job that ends within its ramp never has them
//! dropped: fio 3.33 reports 256 reads and no latency sample for a psync
//! job of `size=1m bs=4k ramp_time=100ms`, over its whole 13 ms. The
//! engines report such a job the same way, from this tally.

use crate::{FioDirection, FioSync};

/// Requests, bytes and sync calls completed before a job's window
/// opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WarmupTally {
    /// Requests completed, reads then writes.
    pub ios: [u64; 2],
    /// Bytes they moved, reads then writes.
    pub bytes: [u64; 2],
    /// `fsync` and `fdatasync` calls returned.
    pub sync_ios: u64,
    /// The `fsync` calls among them.
    pub fsync_ios: u64,
}

impl WarmupTally {
    /// A request of `bytes` completed (`write`: a write).
    pub fn request(&mut self, write: bool, bytes: u64) {
        let d = usize::from(write);
        self.ios[d] += 1;
        self.bytes[d] += bytes;
    }

    /// An `fsync` (`datasync` false) or `fdatasync` call returned.
    pub fn sync(&mut self, datasync: bool) {
        self.sync_ios += 1;
        self.fsync_ios += u64::from(!datasync);
    }

    /// Another thread's tally of the same job added to this one.
    pub fn merge(&mut self, other: &WarmupTally) {
        for d in 0..2 {
            self.ios[d] += other.ios[d];
            self.bytes[d] += other.bytes[d];
        }
        self.sync_ios += other.sync_ios;
        self.fsync_ios += other.fsync_ios;
    }

    /// Requests completed, both directions.
    pub fn total_ios(&self) -> u64 {
        self.ios[0] + self.ios[1]
    }

    /// Bytes moved, both directions.
    pub fn total_bytes(&self) -> u64 {
        self.bytes[0] + self.bytes[1]
    }

    /// The job's reads and writes in fio's terms: counts without a
    /// latency sample.
    pub fn directions(&self) -> [FioDirection; 2] {
        [0, 1].map(|d| FioDirection {
            ios: self.ios[d],
            bytes: self.bytes[d],
            ..FioDirection::default()
        })
    }

    /// The job's sync calls in fio's terms: counts without a latency
    /// sample.
    pub fn syncs(&self) -> FioSync {
        FioSync {
            ios: self.sync_ios,
            fsync_ios: self.fsync_ios,
            ..FioSync::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_counts_each_direction_and_merges_another() {
        let mut a = WarmupTally::default();
        a.request(false, 4096);
        a.request(true, 8192);
        a.sync(true);
        let mut b = WarmupTally::default();
        b.request(false, 4096);
        b.sync(false);
        a.merge(&b);
        assert_eq!((a.total_ios(), a.total_bytes()), (3, 16384));
        let [read, write] = a.directions();
        assert_eq!((read.ios, read.bytes, read.lat.n), (2, 8192, 0));
        assert_eq!((write.ios, write.bytes), (1, 8192));
        let sync = a.syncs();
        assert_eq!((sync.ios, sync.fsync_ios, sync.lat.n), (2, 1, 0));
    }
}
