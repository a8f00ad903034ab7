//! fio's syncs (`fsync=N`, `fdatasync=N`) and its passes over a job's
//! file (`loops`, the scenario's `pass_size`), as one thread's state that
//! both engines keep and consult at the top of their loops, so that they
//! make the same calls as fio 3.33 at the same points.
//!
//! fio runs one pass per call of backend.c `do_io`. A pass ends when the
//! file has no room for another request (io_u.c `get_io_u` fails) or,
//! where the engine queues, when the pass has queued the file's size
//! (`bytes_issued >= total_bytes`; a synchronous engine's completed
//! request adds nothing to it). `do_io` then waits for what is in flight
//! and returns, and the next pass begins with libfio.c `clear_io_state`,
//! which resets `last_was_sync`. The sync that falls due after a pass's
//! last write is made only where the loop went on past it: when the pass
//! fell short of the file with no room for another request, or, on a
//! synchronous engine, while the job's bytes (`io_issue_bytes_exceeded`)
//! are not all issued. A queueing engine's pass that ends once it has
//! queued a size below the file's (fio's `size` over a larger
//! `filesize`) leaves it to the next pass, which begins with it. fio 3.33, 4 KiB
//! writes of a 1 MiB file with `fsync=1` (docs/evidence/fio-beside-model.sh):
//! `loops=2` makes 512 fsyncs under psync and 511 under libaio; a 1026 KiB
//! file makes 256 with one loop, 513 with two, under either. A job's
//! last pass may stop short of the file, by its bytes: fio's loop then
//! stops looking, and makes no sync. Where the job's passes end short of
//! fio's byte limit (`byte_limit`), the loop looks once more after the
//! last one and makes the sync due then.

use crate::model::IoShape;

/// Whether fio makes an `fsync` or `fdatasync` call before its next
/// request (fio 3.33, io_u.c `get_rw_ddir`, fio.h `should_fsync`): after
/// `writes` writes issued since the job's start (again since its ramp),
/// when a multiple of the job's `fsync` (an `fsync`, first where both
/// fall due) or of its `fdatasync` (an `fdatasync`), and not again until
/// a request has completed since the last call (`last_was_sync`).
/// `Some(true)`: an `fdatasync`.
pub fn sync_falls_due(shape: &IoShape, writes: u64, last_was_sync: bool) -> Option<bool> {
    let (fsync, fdatasync) = (shape.fsync, shape.fdatasync);
    if last_was_sync || writes == 0 {
        return None;
    }
    let due = |every: u32| every > 0 && writes % u64::from(every) == 0;
    match (due(fsync), due(fdatasync)) {
        (true, _) => Some(false),
        (false, true) => Some(true),
        (false, false) => None,
    }
}

/// Where a thread stands at the top of its loop, as its engine counts.
#[derive(Clone, Copy, Debug)]
pub struct LoopTop {
    /// Bytes issued since the thread's start (fio's `io_issue_bytes`).
    pub bytes: u64,
    /// Writes issued, counted as the syncs count them (since the ramp).
    pub writes: u64,
    /// Requests issued, counted as `number_ios` counts them (since the
    /// ramp).
    pub issued: u64,
    /// A request slot is free (fio takes an `io_u` before it decides).
    pub slot_free: bool,
    /// Requests in flight.
    pub in_flight: u32,
}

/// What a thread does at a pass's end before its next pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PassEnd {
    /// Make the sync that fell due with the pass's last write
    /// (`true`: an `fdatasync`).
    Sync(bool),
    /// Wait for every request in flight.
    Drain,
}

/// One thread's sync state and the pass it is in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassSyncs {
    /// fio's `last_was_sync`: set when a sync returns, cleared when a
    /// request completes and when a pass begins.
    last_was_sync: bool,
    /// Passes ended before the thread's current one.
    pass: u64,
    /// The current pass's requests are all issued and its last sync is
    /// decided: what is left is the wait for those in flight.
    closing: bool,
    /// A sync that fell due within a submission batch ended it
    /// ([`PassSyncs::sync_ends_batch`]): the thread reaps before it.
    batch_cut: bool,
}

impl PassSyncs {
    /// The passes ended before the thread's current one.
    pub fn pass(&self) -> u64 {
        self.pass
    }

    /// fio's `last_was_sync`: the thread's last call was a sync.
    pub fn last_was_sync(&self) -> bool {
        self.last_was_sync
    }

    /// A request completed.
    pub fn completed(&mut self) {
        self.last_was_sync = false;
    }

    /// A sync returned.
    pub fn synced(&mut self) {
        self.last_was_sync = true;
        self.batch_cut = false;
    }

    /// Whether the sync due after a request of a submission batch, one
    /// that left `writes` issued, ends the batch there. fio looks for it
    /// as it takes each request slot (io_u.c `get_rw_ddir`); where one
    /// falls due while requests wait uncommitted, its libaio engine
    /// answers busy (engines/libaio.c `fio_libaio_queue`), and fio commits
    /// them, reaps at least one completion (`iodepth_batch_complete_min`
    /// of them where that many are in flight) and makes the sync as it
    /// takes the slot again (backend.c `io_queue_event`,
    /// `wait_for_completions`). fio 3.33, 4 KiB writes over 1 MiB at depth
    /// 16 in batches of 8, `iodepth_batch_complete_min=8`, `fsync=3`: 21
    /// fsyncs, where a sync looked for only between batches made 10.
    /// The thread then reaps first ([`PassSyncs::reaps_before_sync`]).
    pub fn sync_ends_batch(&mut self, shape: &IoShape, writes: u64) -> bool {
        let due = self.sync_due(shape, writes).is_some();
        self.batch_cut |= due;
        due
    }

    /// Whether the thread reaps before the sync due, a sync having ended
    /// its last batch; asked once.
    pub fn reaps_before_sync(&mut self) -> bool {
        std::mem::take(&mut self.batch_cut)
    }

    /// The bytes issued at which the thread issues no more for now: the
    /// end of its pass, or its `io_size`; `None`: no such limit.
    #[inline]
    pub fn issue_limit(&self, shape: &IoShape) -> Option<u64> {
        let total = shape.io_size?;
        Some(match shape.pass_size {
            Some(pass) => self.pass.saturating_add(1).saturating_mul(pass).min(total),
            None => total,
        })
    }

    /// What is left of the current pass after `bytes` issued, where the
    /// next request's size must fit it: a job of passes whose offsets run
    /// in order (`in_order`; the random map fits a random job's). fio
    /// draws a size again until it fits (io_u.c `get_next_buflen`).
    pub fn room_in_pass(&self, shape: &IoShape, bytes: u64, in_order: bool) -> Option<u64> {
        shape.pass_size.filter(|_| in_order)?;
        Some(self.issue_limit(shape)?.saturating_sub(bytes))
    }

    /// Whether a sync falls due before the thread's next request, within
    /// a pass. `Some(true)`: an `fdatasync`. The engine then also needs a
    /// request left and a free slot, as fio decides when it takes one.
    pub fn sync_due(&self, shape: &IoShape, writes: u64) -> Option<bool> {
        sync_falls_due(shape, writes, self.last_was_sync)
    }

    /// At the top of the loop of a job with passes, once the current
    /// pass's requests are all issued: the sync fio makes there, then the
    /// wait for what is in flight, then the next pass. `size`: the job's
    /// file, `bs` its block size; `sync_engine`: its engine completes
    /// each request within its call. `None`: nothing to do first (within
    /// a pass, at the job's end, or a new pass begun).
    pub fn at_pass_end(
        &mut self,
        shape: &IoShape,
        (size, bs): (u64, u64),
        sync_engine: bool,
        top: LoopTop,
    ) -> Option<PassEnd> {
        let (pass, total) = (shape.pass_size?, shape.io_size?);
        let end = self.issue_limit(shape)?;
        if top.bytes < end {
            return None;
        }
        if !self.closing {
            if !top.slot_free {
                // A full queue is reaped first, in fio's loop as in the
                // engines', and what completes clears `last_was_sync`.
                return None;
            }
            self.closing = true;
            // fio's loop looks for another request until the job's bytes
            // reach its limit; a pass cut by that limit ends the job there.
            let looks_again = top.bytes < shape.byte_limit.unwrap_or(total);
            // A queueing engine's loop goes on where the pass ended at the
            // file's end before it queued the file's size: no request fits
            // what is left. A pass that leaves room for one ended once it
            // had queued its bytes (a `size` below the file's), where fio
            // stops before it looks for the sync due, and makes it as the
            // next pass begins.
            let files_end = pass < size && size - pass < crate::shape::smallest_block(shape, bs);
            let at_the_files_end =
                files_end && top.bytes.saturating_sub(self.pass.saturating_mul(pass)) >= pass;
            let loop_goes_on = looks_again && (at_the_files_end || sync_engine);
            let due = sync_falls_due(shape, top.writes, self.last_was_sync);
            let count_left = shape.number_ios.is_none_or(|n| top.issued < n);
            if let (true, true, Some(datasync)) = (loop_goes_on, count_left, due) {
                return Some(PassEnd::Sync(datasync));
            }
        }
        if top.bytes >= total {
            return None;
        }
        if top.in_flight > 0 {
            return Some(PassEnd::Drain);
        }
        self.pass = top.bytes / pass;
        self.closing = false;
        self.last_was_sync = false;
        self.batch_cut = false;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(fsync: u32, io_size: u64, pass_size: u64) -> IoShape {
        IoShape {
            fsync,
            io_size: Some(io_size),
            pass_size: Some(pass_size),
            ..IoShape::default()
        }
    }

    /// Runs one thread of 4 KiB writes at depth 1 through the rules, the
    /// way an engine's loop does, and counts its syncs.
    fn syncs_made(shape: &IoShape, size: u64, sync_engine: bool) -> u64 {
        syncs_made_of(shape, (size, 4096), sync_engine)
    }

    /// [`syncs_made`] with writes of `bs` over a file of `size`.
    fn syncs_made_of(shape: &IoShape, (size, bs): (u64, u64), sync_engine: bool) -> u64 {
        let mut state = PassSyncs::default();
        let (mut bytes, mut writes, mut syncs) = (0u64, 0u64, 0u64);
        let total = shape.io_size.unwrap();
        for _ in 0..100_000 {
            let top = LoopTop {
                bytes,
                writes,
                issued: writes,
                slot_free: true,
                in_flight: 0,
            };
            match state.at_pass_end(shape, (size, bs), sync_engine, top) {
                Some(PassEnd::Sync(_)) => {
                    syncs += 1;
                    state.synced();
                    continue;
                }
                Some(PassEnd::Drain) => unreachable!("nothing in flight"),
                None => {}
            }
            let limit = state.issue_limit(shape).unwrap();
            if bytes >= total {
                return syncs;
            }
            if let (true, Some(_datasync)) = (bytes < limit, state.sync_due(shape, writes)) {
                syncs += 1;
                state.synced();
                continue;
            }
            bytes += bs;
            writes += 1;
            state.completed();
        }
        panic!("the loop did not end");
    }

    #[test]
    fn syncs_follow_fio_at_the_ends_of_passes() {
        let mib = 1 << 20;
        // fio 3.33, rw=write bs=4k fsync=1 (fsync=4 where given), psync
        // and libaio, counted on this machine.
        let cases = [
            // (size, pass, passes, fsync, psync's, libaio's)
            (mib, mib, 1, 1, 255, 255),
            (mib, mib, 2, 1, 512, 511),
            (mib, mib, 3, 1, 769, 767),
            (mib, mib, 2, 4, 128, 127),
            (1026 << 10, mib, 1, 1, 256, 256),
            (1026 << 10, mib, 2, 1, 513, 513),
            (1026 << 10, mib, 1, 4, 64, 64),
        ];
        for (size, pass, passes, fsync, psync, libaio) in cases {
            let mut s = shape(fsync, pass * passes, pass);
            // fio's limit, size times loops, past what the passes make.
            s.byte_limit = Some(size * passes).filter(|&l| l > pass * passes);
            assert_eq!(
                (syncs_made(&s, size, true), syncs_made(&s, size, false)),
                (psync, libaio),
                "size {size}, {passes} passes, fsync={fsync}"
            );
        }
    }

    /// Where the job's bytes end at a pass's end, fio's loop stops there
    /// and makes no sync, even where the pass fell short of its file; where
    /// they stop short of fio's limit, it looks once more and makes it.
    /// fio 3.33, 4 KiB writes, `fsync=1`, psync and libaio alike:
    /// `size=1026k io_size=1m loops=2` makes 512 fsyncs (the second pass
    /// begins with one); `size=1m io_size=1026k` 256 under psync and 255
    /// under libaio, whose pass ends once it has queued the file's size.
    #[test]
    fn a_job_ends_its_loop_at_its_byte_limit() {
        let mib = 1 << 20;
        let within = shape(1, 2 * mib, mib);
        assert_eq!(syncs_made(&within, 1026 << 10, true), 512);
        assert_eq!(syncs_made(&within, 1026 << 10, false), 512);
        let mut past = shape(1, mib, mib);
        past.byte_limit = Some(1026 << 10);
        assert_eq!(syncs_made(&past, mib, true), 256);
        assert_eq!(syncs_made(&past, mib, false), 255);
        past.byte_limit = None;
        assert_eq!(syncs_made(&past, mib, true), 255);
    }

    /// A queueing engine's pass that ends once it has queued a size below
    /// its file's makes no sync there: fio's `do_io` stops before it looks
    /// for one, and the next pass begins with it. fio 3.33, 8 KiB writes
    /// at depth 1 under libaio, `size=100k filesize=256k fsync=1`:
    /// `loops=2` makes 24 fsyncs for 25 writes (the model 25 before the
    /// third session of 2026-11-29, when such syncs were refused); `bs=8k`
    /// over a 100 KiB file, whose pass ends at the file's end, makes the
    /// sync there.
    #[test]
    fn a_pass_ended_by_its_queued_bytes_leaves_the_sync_to_the_next() {
        let kib = 1 << 10;
        let s = shape(1, 200 * kib, 104 * kib);
        let syncs = |s: &IoShape, size: u64, sync_engine: bool| {
            syncs_made_of(s, (size, 8 * kib), sync_engine)
        };
        assert_eq!(syncs(&s, 256 * kib, false), 24);
        // A file of 100 KiB holds 12 requests: each pass ends at its end,
        // and the loop goes on to fio's limit, 200 KiB (25 fsyncs for 24
        // writes, libaio and psync alike).
        let mut at_end = shape(1, 192 * kib, 96 * kib);
        at_end.byte_limit = Some(200 * kib);
        assert_eq!(syncs(&at_end, 100 * kib, false), 25);
    }

    #[test]
    fn no_sync_follows_a_job_ended_by_its_count() {
        // A pass short of its file would make one, but the job's
        // number_ios ends fio's loop first.
        let mut without = shape(1, 1 << 20, 1 << 20);
        without.byte_limit = Some(1026 << 10);
        let mut with_count = without.clone();
        with_count.number_ios = Some(256);
        assert_eq!(syncs_made(&with_count, 1026 << 10, true), 255);
        assert_eq!(syncs_made(&without, 1026 << 10, true), 256);
    }

    #[test]
    fn a_pass_waits_for_its_requests_in_flight_before_the_next() {
        let s = shape(0, 8 << 12, 4 << 12);
        let mut state = PassSyncs::default();
        let top = |bytes, in_flight| LoopTop {
            bytes,
            writes: bytes / 4096,
            issued: bytes / 4096,
            slot_free: true,
            in_flight,
        };
        assert_eq!(state.issue_limit(&s), Some(4 << 12));
        assert_eq!(
            state.at_pass_end(&s, (4 << 12, 4096), false, top(3 << 12, 2)),
            None
        );
        assert_eq!(
            state.at_pass_end(&s, (4 << 12, 4096), false, top(4 << 12, 2)),
            Some(PassEnd::Drain)
        );
        assert_eq!(state.issue_limit(&s), Some(4 << 12), "not before the drain");
        assert_eq!(
            state.at_pass_end(&s, (4 << 12, 4096), false, top(4 << 12, 0)),
            None
        );
        assert_eq!(state.issue_limit(&s), Some(8 << 12), "the next pass");
        // The job's end is the engine's own.
        assert_eq!(
            state.at_pass_end(&s, (4 << 12, 4096), false, top(8 << 12, 3)),
            None
        );
    }
}
