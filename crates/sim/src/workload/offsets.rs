//! Where a random job's requests land, as fio 3.33 draws it (io_u.c
//! `get_next_rand_offset`, `get_next_buflen`, `mark_random_map`;
//! lib/axmap.c), for the jobs whose offsets decide something: a buffered
//! job (its page-cache hits) and a job of several sizes under fio's
//! random map (the map cuts requests short).
//!
//! fio draws a block uniformly among the file's blocks of the
//! direction's smallest size, and with its random map (the default):
//! - a block the map already covers gives way to the next one it does
//!   not, wrapping at the file's end (`axmap_next_free`);
//! - the request covers blocks from there until one the map covers
//!   (`axmap_set_nr`), and is cut there: a 64 KiB request that meets a
//!   covered block after 8 KiB issues 8 KiB;
//! - once every block is covered, the map starts again (`fio_file_reset`,
//!   which a time-based job and the model's jobs, which end by their own
//!   counts, reach).
//!
//! With `norandommap` blocks repeat and nothing is cut. fio's LFSR keeps
//! no map: each block starts a request once per pass, and nothing is cut;
//! the model draws such a start as the map does and marks only it.
//!
//! A drawn size that does not fit between the offset and the file's end
//! is drawn again (`get_next_buflen`'s loop).
//!
//! The map keeps the covered blocks as disjoint runs, so it holds one
//! entry per run, at most one per request since it last started again.

use std::collections::BTreeMap;

use cint_scenario::{IoJob, RandomMap, Rw, Work};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::engine::{stream_rng, OFFSET_STREAM_BASE};

/// Draws of a size beyond the first before a request that does not fit
/// is cut at the file's end instead (fio draws until one fits; only a
/// file barely larger than the job's largest size gets here).
const REDRAWS: u32 = 64;

/// One thread's random offsets.
#[derive(Debug)]
pub(crate) struct RandomOffsets {
    rng: ChaCha8Rng,
    /// The job's file (its `size`), in bytes.
    size: u64,
    /// A block of the map: the job's smallest request size.
    unit: u64,
    /// Each direction's smallest size (reads, writes): fio's `blockalign`
    /// default, what its offsets are multiples of.
    align: [u64; 2],
    mode: RandomMap,
    /// Covered runs of blocks, start to end (exclusive); two runs never
    /// touch.
    covered: BTreeMap<u64, u64>,
    /// Blocks covered.
    covered_blocks: u64,
    /// Where the last request placed landed.
    last: u64,
}

impl RandomOffsets {
    /// Offsets for a random job of `io` drawing from stream `stream`, or
    /// `None` when the job's offsets decide nothing: a direct job whose
    /// requests the map cannot cut.
    pub(crate) fn new(io: &IoJob, seed: u64, stream: u64) -> Option<RandomOffsets> {
        let random = matches!(io.rw, Rw::RandRead | Rw::RandWrite | Rw::RandRw);
        let shape = &io.shape;
        let sizes_vary = !shape.bssplit.is_empty() || shape.bsrange.is_some();
        let cut = io.shape.random_map == RandomMap::Map && sizes_vary;
        if !random || shape.trace.is_some() || !(io.through_page_cache() || cut) {
            return None;
        }
        let smallest = |write: bool| -> u64 {
            let split = if write && !shape.bssplit_write.is_empty() {
                &shape.bssplit_write
            } else {
                &shape.bssplit
            };
            let range = if write {
                shape.bsrange_write.or(shape.bsrange)
            } else {
                shape.bsrange
            };
            match range {
                Some((lo, _)) => lo,
                None => split.iter().map(|s| s.bytes).min().unwrap_or(io.bs),
            }
        };
        let align = [smallest(false), smallest(true)];
        Some(RandomOffsets {
            rng: stream_rng(seed, OFFSET_STREAM_BASE | stream),
            size: io.size,
            unit: align[0].min(align[1]).max(1),
            align,
            mode: io.shape.random_map,
            covered: BTreeMap::new(),
            covered_blocks: 0,
            last: 0,
        })
    }

    /// Where a request of `write` lands, and the bytes fio issues there:
    /// `bytes` drawn by `draw_size`, drawn again while it does not fit
    /// before the file's end, then cut where the map is covered.
    pub(crate) fn place(
        &mut self,
        write: bool,
        bytes: u64,
        mut draw_size: impl FnMut() -> u64,
    ) -> (u64, u64) {
        let blocks = (self.size / self.unit).max(1);
        let align = self.align[usize::from(write)].max(1);
        let last = (self.size / align).max(1);
        let mut offset = self.rng.gen_range(0..last) * align;
        if self.mode != RandomMap::Off {
            if self.covered_blocks >= blocks {
                self.covered.clear();
                self.covered_blocks = 0;
            }
            let block = self.next_uncovered((offset / self.unit).min(blocks - 1), blocks);
            offset = block * self.unit;
        }
        let mut bytes = bytes;
        let mut redraws = 0;
        while offset + bytes > self.size && redraws < REDRAWS {
            bytes = draw_size();
            redraws += 1;
        }
        let bytes = bytes.min(self.size.saturating_sub(offset)).max(1);
        let bytes = match self.mode {
            RandomMap::Off => bytes,
            RandomMap::Lfsr => {
                self.cover(offset / self.unit, 1);
                bytes
            }
            RandomMap::Map => {
                let first = offset / self.unit;
                let want = bytes.div_ceil(self.unit);
                let got = self.cover(first, want);
                bytes.min(got * self.unit)
            }
        };
        self.last = offset;
        (offset, bytes)
    }

    /// The first block from `block` on that the map does not cover,
    /// wrapping at `blocks`; the map is never full here.
    fn next_uncovered(&self, block: u64, blocks: u64) -> u64 {
        match self.covered.range(..=block).next_back() {
            Some((_, &end)) if end > block => {
                if end < blocks {
                    end
                } else {
                    // Past the end: the first uncovered block from 0.
                    match self.covered.get(&0) {
                        Some(&end) => end,
                        None => 0,
                    }
                }
            }
            _ => block,
        }
    }

    /// Covers up to `want` blocks from the uncovered `first`, stopping at
    /// a covered block or the map's end; the blocks covered.
    fn cover(&mut self, first: u64, want: u64) -> u64 {
        let blocks = (self.size / self.unit).max(1);
        let next_start = self
            .covered
            .range(first + 1..)
            .next()
            .map_or(blocks, |(&s, _)| s);
        let end = (first + want.max(1)).min(next_start).min(blocks);
        let got = end - first;
        // Join the run that ends here and the one that starts at `end`.
        let start = match self.covered.range(..first).next_back() {
            Some((&s, &e)) if e == first => s,
            _ => first,
        };
        let end = match self.covered.remove(&end) {
            Some(e) => e,
            None => end,
        };
        self.covered.insert(start, end);
        self.covered_blocks += got;
        got
    }
}

/// Every thread's random offsets, where they decide something (boxed: a
/// thread without is one word to look at).
#[derive(Debug, Default)]
pub(crate) struct Offsets(Vec<Option<Box<RandomOffsets>>>);

impl Offsets {
    /// For threads of `thread_jobs` (each thread's job index, in thread
    /// order) of scenario `sc`.
    pub(crate) fn new(sc: &cint_scenario::Scenario, thread_jobs: &[u32]) -> Offsets {
        Offsets(
            thread_jobs
                .iter()
                .enumerate()
                .map(|(t, &j)| match sc.jobs.get(j as usize).map(|j| &j.work) {
                    Some(Work::Io(io)) => RandomOffsets::new(io, sc.seed, t as u64).map(Box::new),
                    _ => None,
                })
                .collect(),
        )
    }

    /// Thread `t`'s offsets, when its job draws them.
    pub(crate) fn of(&mut self, t: usize) -> Option<&mut RandomOffsets> {
        self.0.get_mut(t).and_then(Option::as_deref_mut)
    }

    /// Where thread `t`'s last request landed, when its job draws its
    /// offsets.
    pub(crate) fn last(&self, t: usize) -> Option<u64> {
        self.0.get(t).and_then(Option::as_deref).map(|o| o.last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offsets(size: u64, unit: u64, mode: RandomMap) -> RandomOffsets {
        RandomOffsets {
            rng: stream_rng(1, 0),
            size,
            unit,
            align: [unit, unit],
            mode,
            covered: BTreeMap::new(),
            covered_blocks: 0,
            last: 0,
        }
    }

    /// Under the map a pass covers every block exactly once, with
    /// requests cut where they meet covered blocks: the bytes of a pass
    /// are the file's.
    #[test]
    fn a_pass_of_the_map_covers_each_block_once() {
        let (size, unit) = (4 << 20, 4096);
        let mut o = offsets(size, unit, RandomMap::Map);
        let mut seen = vec![0u32; (size / unit) as usize];
        let mut draw = stream_rng(2, 0);
        let mut total = 0;
        let mut requests = 0;
        while total < size {
            let bytes = [4096, 65536][draw.gen_range(0..2)];
            let (offset, issued) = o.place(false, bytes, || 4096);
            assert_eq!(offset % unit, 0);
            assert!(issued > 0 && issued <= bytes && offset + issued <= size);
            for b in offset / unit..(offset + issued).div_ceil(unit) {
                seen[b as usize] += 1;
            }
            total += issued;
            requests += 1;
        }
        assert_eq!(total, size);
        assert!(seen.iter().all(|&n| n == 1), "each block once");
        // Cut requests: far more than the 30 of a 34 KiB mean.
        assert!(requests > 40, "{requests} requests");
        // The next request starts a new pass.
        let (offset, _) = o.place(false, 4096, || 4096);
        assert!(offset < size);
        assert_eq!(o.covered_blocks, 1);
    }

    /// The runs stay disjoint and apart, and count the blocks covered.
    #[test]
    fn covered_runs_merge_and_count() {
        let mut o = offsets(64 * 4096, 4096, RandomMap::Map);
        assert_eq!(o.cover(10, 4), 4);
        assert_eq!(o.cover(20, 4), 4);
        // Cut at the run at 20; joined to both runs.
        assert_eq!(o.cover(14, 10), 6);
        assert_eq!(o.covered.len(), 1);
        assert_eq!(o.covered.get(&10), Some(&24));
        assert_eq!(o.next_uncovered(12, 64), 24);
        assert_eq!(o.next_uncovered(5, 64), 5);
        assert_eq!(o.cover(60, 10), 4, "cut at the map's end");
        assert_eq!(o.next_uncovered(61, 64), 0, "wraps to the first uncovered");
        assert_eq!(o.covered_blocks, 18);
    }

    /// fio's LFSR starts each block once a pass and never cuts.
    #[test]
    fn the_lfsr_starts_each_block_once_and_cuts_nothing() {
        let (size, unit) = (1 << 20, 4096);
        let mut o = offsets(size, unit, RandomMap::Lfsr);
        let mut starts = std::collections::HashSet::new();
        for _ in 0..size / unit {
            let (offset, issued) = o.place(false, 8192, || 4096);
            assert!(starts.insert(offset), "a start repeated within a pass");
            assert!(issued == 8192 || offset + 8192 > size);
        }
    }
}
