//! Where a random job's requests land, as fio 3.33 draws it (io_u.c
//! `get_next_rand_offset`, `get_next_buflen`, `mark_random_map`;
//! lib/axmap.c), for the jobs whose offsets decide something: a buffered
//! job (its page-cache hits) and a job of several sizes under fio's
//! random map (the map cuts requests short). Both engines draw them here,
//! each from its own seeded stream.
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
//! `random_distribution` chooses the block: uniformly (fio's default);
//! by Zipf's law, Pareto's or a normal law (lib/zipf.c, lib/gauss.c: a
//! rank or value among the file's blocks of the job's smallest size,
//! scattered by fio's multiplicative hash); or zone by zone (`zoned`,
//! `zoned_abs`: a zone by its share of the requests, then a block
//! uniformly within it). fio keeps no random map beside any of these
//! (init.c: "a non-uniform random distribution excludes usage of a
//! random map"): blocks repeat and nothing is cut.
//!
//! The map keeps the covered blocks as disjoint runs, so it holds one
//! entry per run, at most one per request since it last started again.

use std::collections::BTreeMap;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::zipf::Zipf;
use crate::{Distribution, IoJob, RandomMap, Zone};

/// Draws of a size beyond the first before a request that does not fit
/// is cut at the file's end instead (fio draws until one fits; only a
/// file barely larger than the job's largest size gets here).
const REDRAWS: u32 = 64;

/// One thread's random offsets.
#[derive(Debug)]
pub struct RandomOffsets {
    rng: ChaCha8Rng,
    /// The job's file (its `size`), in bytes.
    size: u64,
    /// A block of the map: the job's smallest request size.
    unit: u64,
    /// Each direction's smallest size (reads, writes): fio's `blockalign`
    /// default, what its offsets are multiples of.
    align: [u64; 2],
    mode: RandomMap,
    /// How the block is drawn.
    draw: Draw,
    /// Covered runs of blocks, start to end (exclusive); two runs never
    /// touch.
    covered: BTreeMap<u64, u64>,
    /// Blocks covered.
    covered_blocks: u64,
    /// Where the last request placed landed.
    last: u64,
}

impl RandomOffsets {
    /// Offsets for a random job of `io` over the first `size` bytes (its
    /// file: the job's `size`, or less where the engine's file is
    /// smaller), drawing from `rng`, or `None` when the job's offsets
    /// decide nothing in the model: a direct job whose requests the map
    /// cannot cut.
    pub fn new(io: &IoJob, size: u64, rng: ChaCha8Rng) -> Option<RandomOffsets> {
        let shape = &io.shape;
        let sizes_vary = !shape.bssplit.is_empty() || shape.bsrange.is_some();
        let mapped = shape.random_distribution == Distribution::Uniform;
        let cut = mapped && io.shape.random_map == RandomMap::Map && sizes_vary;
        if !(io.through_page_cache() || cut) {
            return None;
        }
        Self::drawn(io, size, rng)
    }

    /// [`RandomOffsets::new`]'s, and beside them, for requests that reach
    /// a real file (where a device's caches and layout see them), a
    /// non-uniform distribution's, which keeps no map (fio keeps none
    /// beside one). Not a uniform job's map of one size: nothing is cut,
    /// and its runs would grow with the requests where fio keeps a bitmap.
    pub fn on_a_file(io: &IoJob, size: u64, rng: ChaCha8Rng) -> Option<RandomOffsets> {
        if io.shape.random_distribution == Distribution::Uniform {
            Self::new(io, size, rng)
        } else {
            Self::drawn(io, size, rng)
        }
    }

    /// The offsets of a random job, whether or not they decide anything.
    fn drawn(io: &IoJob, size: u64, mut rng: ChaCha8Rng) -> Option<RandomOffsets> {
        let shape = &io.shape;
        let mapped = shape.random_distribution == Distribution::Uniform;
        if !io.rw.is_random() || shape.trace.is_some() {
            return None;
        }
        let smallest = |write| crate::shape::smallest_block_of(shape, io.bs, write);
        let align = [smallest(false), smallest(true)];
        let unit = align[0].min(align[1]).max(1);
        let draw = Draw::new(&shape.random_distribution, size.div_ceil(unit), &mut rng);
        Some(RandomOffsets {
            rng,
            size,
            unit,
            align,
            // fio keeps no map beside a non-uniform distribution.
            mode: if mapped {
                io.shape.random_map
            } else {
                RandomMap::Off
            },
            draw,
            covered: BTreeMap::new(),
            covered_blocks: 0,
            last: 0,
        })
    }

    /// Where a request of `write` lands, and the bytes fio issues there:
    /// `bytes` drawn by `draw_size`, drawn again while it does not fit
    /// before the file's end, then cut where the map is covered.
    pub fn place(
        &mut self,
        write: bool,
        bytes: u64,
        mut draw_size: impl FnMut() -> u64,
    ) -> (u64, u64) {
        let blocks = self.blocks();
        let align = self.align[usize::from(write)].max(1);
        let last = (self.size / align).max(1);
        if self.mode != RandomMap::Off && self.covered_blocks >= blocks {
            self.covered.clear();
            self.covered_blocks = 0;
        }
        let mut offset = self.draw.block(&mut self.rng, last, align) * align;
        if self.mode != RandomMap::Off {
            let block = self.next_uncovered((offset / self.unit).min(blocks - 1), blocks);
            offset = block * self.unit;
        }
        // Within the file (a block of the smaller direction's size near
        // its end).
        offset = offset.min(self.size.saturating_sub(align.min(self.size)));
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

    /// Where the last request placed landed.
    pub fn last(&self) -> u64 {
        self.last
    }

    /// The map's blocks: the file's whole blocks of the job's smallest
    /// size.
    fn blocks(&self) -> u64 {
        (self.size / self.unit).max(1)
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
        let blocks = self.blocks();
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

/// How a block is drawn: fio's `random_distribution`, set up once.
#[derive(Debug)]
enum Draw {
    Uniform,
    /// Ranks by Zipf's law over `n` blocks, scattered, turned by `off`.
    Zipf {
        zipf: Zipf,
        n: u64,
        off: u64,
    },
    /// `n - 1` times `U^power`, scattered, turned by `off`.
    Pareto {
        power: f64,
        n: u64,
        off: u64,
    },
    /// Twelve uniform values over `0..=n` averaged, moved by up to
    /// `stddev`, scattered, turned by `off`.
    Normal {
        n: u64,
        stddev: u64,
        off: u64,
    },
    /// Per hundredth of the requests, its zone: start and end in hundredths
    /// of the file (`zoned`) or in bytes (`zoned_abs`).
    Zoned {
        zones: Box<[(u64, u64); 100]>,
        bytes: bool,
    },
}

/// fio's `__hash_u64`, the golden-ratio multiply that scatters ranks.
fn scatter(v: u64) -> u64 {
    v.wrapping_mul(0x61C8_8646_80B5_83EB)
}

/// A uniform value in [0, 1] as fio's draws make it (`__rand` over
/// `FRAND32_MAX`).
fn unit_draw(rng: &mut ChaCha8Rng) -> f64 {
    f64::from(rng.gen::<u32>()) / f64::from(u32::MAX)
}

/// fio's cap on the terms of zeta it sums (`ZIPF_MAX_GEN`).
const ZIPF_MAX_GEN: u64 = 10_000_000;

impl Draw {
    /// The draw of `d` over `n` blocks (fio's `nranges`); the random turn
    /// of Zipf's and Pareto's ranks is drawn here, as fio draws it once.
    fn new(d: &Distribution, n: u64, rng: &mut ChaCha8Rng) -> Draw {
        let n = n.max(1);
        let off = |center: Option<f64>, rng: &mut ChaCha8Rng| match center {
            Some(c) => (n as f64 * c) as u64,
            None => u64::from(rng.gen::<u32>()),
        };
        match d {
            Distribution::Uniform => Draw::Uniform,
            Distribution::Zipf { theta, center } => Draw::Zipf {
                zipf: Zipf::new(n, *theta, ZIPF_MAX_GEN),
                n,
                off: off(*center, rng),
            },
            Distribution::Pareto { h, center } => Draw::Pareto {
                power: h.ln() / (1.0 - h).ln(),
                n,
                off: off(*center, rng),
            },
            Distribution::Normal { dev, center } => Draw::Normal {
                n,
                stddev: if *dev == 0.0 {
                    0
                } else {
                    ((n as f64 * dev / 100.0).ceil() as u64).min(n / 2)
                },
                // fio turns by `nranges * (center - 0.5)`, in unsigned
                // arithmetic.
                off: center.map_or(0, |c| (n as f64 * (c - 0.5)) as i64 as u64),
            },
            Distribution::Zoned(zones) => Draw::Zoned {
                zones: zone_table(zones),
                bytes: false,
            },
            Distribution::ZonedAbs(zones) => Draw::Zoned {
                zones: zone_table(zones),
                bytes: true,
            },
        }
    }

    /// A block, in units of `align`, among `last` of them.
    fn block(&self, rng: &mut ChaCha8Rng, last: u64, align: u64) -> u64 {
        match self {
            Draw::Uniform => rng.gen_range(0..last),
            Draw::Zipf { zipf, n, off } => {
                let rank = zipf.rank(unit_draw(rng));
                scatter(rank).wrapping_add(*off) % n
            }
            Draw::Pareto { power, n, off } => {
                let v = ((n - 1) as f64 * unit_draw(rng).powf(*power)) as u64;
                scatter(v).wrapping_add(*off) % n
            }
            Draw::Normal { n, stddev, off } => {
                const ITERS: u64 = 12;
                let mut sum: u64 = (0..ITERS)
                    .map(|_| u64::from(rng.gen::<u32>()) % (n + 1))
                    .sum();
                sum = sum.div_ceil(ITERS);
                if *stddev > 0 {
                    let r = f64::from(rng.gen::<u32>()) / (f64::from(u32::MAX) + 1.0);
                    let mut dev = (*stddev as f64 * r) as i64 - (*stddev / 2) as i64;
                    // fio halves until the value is in range; with every
                    // draw at the top and no deviation left, its loop
                    // would not end: the model stops there.
                    while dev > 0 && sum as i64 + dev >= *n as i64 {
                        dev /= 2;
                    }
                    sum = (sum as i64).wrapping_add(dev) as u64;
                }
                scatter(sum).wrapping_add(*off) % n
            }
            Draw::Zoned { zones, bytes } => {
                let (start, end) = zones[rng.gen_range(0..100usize)];
                let (first, blocks) = if *bytes {
                    (start / align, end / align - start / align)
                } else {
                    (start * last / 100, last * (end - start) / 100)
                };
                first
                    + if blocks == 0 {
                        0
                    } else {
                        rng.gen_range(0..blocks)
                    }
            }
        }
    }
}

/// fio's `zone_state_index`: for each hundredth of the requests, its
/// zone's start and end (hundredths of the file, or bytes).
fn zone_table(zones: &[Zone]) -> Box<[(u64, u64); 100]> {
    let mut table = Box::new([(0, 0); 100]);
    let (mut access, mut size) = (0usize, 0u64);
    for z in zones {
        for slot in table.iter_mut().skip(access).take(z.access as usize) {
            *slot = (size, size + z.size);
        }
        access += z.access as usize;
        size += z.size;
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn offsets(size: u64, unit: u64, mode: RandomMap) -> RandomOffsets {
        RandomOffsets {
            rng: ChaCha8Rng::seed_from_u64(1),
            size,
            unit,
            align: [unit, unit],
            mode,
            draw: Draw::Uniform,
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
        let mut draw = ChaCha8Rng::seed_from_u64(2);
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

    /// A zone takes its share of the requests, uniformly within it.
    #[test]
    fn zones_take_their_share_of_the_requests() {
        let zones = [
            Zone {
                access: 60,
                size: 10,
            },
            Zone {
                access: 40,
                size: 90,
            },
        ];
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let d = Draw::new(&Distribution::Zoned(zones.to_vec()), 1000, &mut rng);
        let first = (0..10_000)
            .filter(|_| d.block(&mut rng, 1000, 4096) < 100)
            .count();
        assert!(
            (5_700..6_300).contains(&first),
            "{first} of 10 000 in the first tenth"
        );
        let abs = [Zone {
            access: 100,
            size: 8192,
        }];
        let d = Draw::new(&Distribution::ZonedAbs(abs.to_vec()), 1000, &mut rng);
        assert!((0..1000).all(|_| d.block(&mut rng, 1000, 4096) < 2));
    }

    /// A direct job of one size: its offsets decide nothing in the model,
    /// but on a real file a skewed distribution places its requests, and
    /// keeps no map; a uniform one keeps none there either.
    #[test]
    fn on_a_file_a_skewed_direct_job_draws_its_offsets() {
        let text = "name = \"o\"\n[[strategy]]\nname = \"n\"\nkind = \"none\"\n\
                    [[job]]\nname = \"r\"\nengine = \"libaio\"\n\
                    rw = \"randread\"\nsize = \"64MiB\"\n";
        let sc = crate::load_str(text, "o.toml", &[]).expect("valid");
        let Some(mut io) = sc.jobs[0].io().cloned() else {
            panic!("an I/O job");
        };
        let rng = || ChaCha8Rng::seed_from_u64(7);
        assert!(RandomOffsets::new(&io, io.size, rng()).is_none());
        assert!(RandomOffsets::on_a_file(&io, io.size, rng()).is_none());
        io.shape.random_distribution = Distribution::Zipf {
            theta: 1.2,
            center: None,
        };
        assert!(RandomOffsets::new(&io, io.size, rng()).is_none());
        let mut o = RandomOffsets::on_a_file(&io, io.size, rng()).expect("drawn on a file");
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..5000 {
            let (offset, bytes) = o.place(false, 4096, || 4096);
            assert_eq!((offset % 4096, bytes), (0, 4096));
            assert!(offset + bytes <= io.size);
            seen.insert(offset);
        }
        // Zipf's 1.2 over 16 384 blocks: about a thousand distinct
        // (docs/FIO.md, "Offsets"), where uniform draws give 4 300.
        assert!(seen.len() < 2_000, "{} distinct blocks", seen.len());
        assert!(o.covered.is_empty(), "no map beside a skewed distribution");
    }

    /// Zipf's, Pareto's and the normal law's blocks stay in the file.
    #[test]
    fn skewed_draws_stay_in_the_file() {
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        for d in [
            Distribution::Zipf {
                theta: 1.2,
                center: Some(0.5),
            },
            Distribution::Pareto {
                h: 0.2,
                center: None,
            },
            Distribution::Normal {
                dev: 30.0,
                center: Some(0.1),
            },
        ] {
            let draw = Draw::new(&d, 777, &mut rng);
            assert!(
                (0..10_000).all(|_| draw.block(&mut rng, 777, 4096) < 777),
                "{d:?}"
            );
        }
    }

    /// The runs stay sorted, disjoint and apart, and add up to the
    /// blocks covered.
    fn runs_are_sound(o: &RandomOffsets) {
        let mut end = None;
        let mut sum = 0;
        for (&start, &stop) in &o.covered {
            assert!(start < stop, "an empty run at {start}");
            assert!(
                end.is_none_or(|e| e < start),
                "runs touch or overlap at {start}"
            );
            sum += stop - start;
            end = Some(stop);
        }
        assert_eq!(sum, o.covered_blocks);
    }

    proptest::proptest! {
        /// Under the map, over random files and mixes of sizes, each pass
        /// gives every block exactly once, every request lands within the
        /// file at a multiple of the block and is cut, never grown, and
        /// a pass's bytes are the file's.
        #[test]
        fn each_pass_gives_every_block_once(
            unit_shift in 9u32..14,
            blocks in 1u64..400,
            multiples in proptest::collection::vec(1u64..20, 1..4),
            seed in 0u64..1000,
        ) {
            let unit = 1u64 << unit_shift;
            let size = blocks * unit;
            let mut o = offsets(size, unit, RandomMap::Map);
            o.rng = ChaCha8Rng::seed_from_u64(seed << 1);
            let mut draw = ChaCha8Rng::seed_from_u64(seed << 1 | 1);
            for _pass in 0..2 {
                let mut seen = vec![false; blocks as usize];
                let mut total = 0;
                while total < size {
                    let want = multiples[draw.gen_range(0..multiples.len())] * unit;
                    let (offset, issued) = o.place(false, want, || unit);
                    proptest::prop_assert_eq!(offset % unit, 0);
                    proptest::prop_assert!(issued > 0 && issued <= want.max(unit));
                    proptest::prop_assert!(offset + issued <= size);
                    for b in offset / unit..(offset + issued).div_ceil(unit) {
                        proptest::prop_assert!(!seen[b as usize], "block {} twice in a pass", b);
                        seen[b as usize] = true;
                    }
                    total += issued;
                    runs_are_sound(&o);
                }
                proptest::prop_assert_eq!(total, size);
                proptest::prop_assert!(seen.iter().all(|&s| s));
            }
        }
    }
}
