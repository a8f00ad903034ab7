//! A KVell-like store under YCSB (the cinterrupts artifact's KVell,
//! `kvell/slabworker.c`; docs/APPS.md):
//!
//! * one worker thread pinned per core of `cpus`, each with its own
//!   libaio context and a ring of `ring` requests that injector threads
//!   keep full: the injectors run on cores outside the model, and put a
//!   new operation in the ring as each one completes (a closed loop);
//! * the worker loop: take every operation in the ring (a request for
//!   each page not in KVell's own page cache, `worker_cpu` each),
//!   `io_submit` everything pending in one call (the last request
//!   Barrier, docs/ALGORITHMS.md section 5), then `io_getevents(min_nr =
//!   max_nr = submitted)`, which Linux 5.0 wakes on every completion and
//!   puts back to sleep while fewer are ready, then the callbacks: an
//!   update's read queues its page's write for the next round. With
//!   nothing to do the worker calls `usleep(1)`, which sleeps
//!   `idle_sleep` (the timer slack). No batch size is fixed: a batch is
//!   what the ring holds when the worker comes round;
//! * items of `item_size` bytes, four to a 4 KiB page, placed by a hash
//!   of their key; a get is one page read, an update a read then a write
//!   of that page, an insert one write, a scan of n items n page reads;
//!   KVell's page cache keeps the `cache_pages` most recently used pages
//!   (a hit needs no I/O);
//! * YCSB's mixes (A 50% read / 50% update, B 95/5, C all reads, D 95%
//!   read / 5% insert, E `scan_share` percent scans and inserts, F 50%
//!   read / 50% read-modify-write), keys uniform or zipfian with YCSB's
//!   constant 0.99 (D's "latest" is drawn as the workload's
//!   distribution). A scan's latency runs from its first request to its
//!   last completion; the others' from their injection.

use std::collections::{BTreeMap, HashMap, VecDeque};

use cint_policy::hints::{self, BatchPosition, IoCall, IoContext, RwFlags};
use cint_policy::Nanos;
use cint_scenario::app::Kvell;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::world::{Cont, Wait, World};
use cint_scenario::zipf::Zipf;

/// YCSB's zipfian constant.
const ZIPFIAN_THETA: f64 = 0.99;
/// A page.
const PAGE: u64 = 4096;

/// YCSB's operation types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpKind {
    Read,
    Update,
    ReadModifyWrite,
    Insert,
    Scan,
}

impl OpKind {
    /// The result's job name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Update => "update",
            OpKind::ReadModifyWrite => "read-modify-write",
            OpKind::Insert => "insert",
            OpKind::Scan => "scan",
        }
    }

    /// The operation types of a workload.
    pub(crate) fn of(spec: &Kvell) -> Vec<OpKind> {
        match spec.workload {
            'A' | 'B' => vec![OpKind::Read, OpKind::Update],
            'D' => vec![OpKind::Read, OpKind::Insert],
            'E' => match spec.scan_share {
                100 => vec![OpKind::Scan],
                0 => vec![OpKind::Insert],
                _ => vec![OpKind::Scan, OpKind::Insert],
            },
            'F' => vec![OpKind::Read, OpKind::ReadModifyWrite],
            _ => vec![OpKind::Read],
        }
    }
}

/// KVell's page cache: the most recently used pages.
#[derive(Debug, Default)]
struct Lru {
    capacity: u64,
    stamp: u64,
    by_page: HashMap<u64, u64>,
    by_stamp: BTreeMap<u64, u64>,
}

impl Lru {
    /// Whether `page` is cached; a hit becomes the most recent.
    fn hit(&mut self, page: u64) -> bool {
        let Some(old) = self.by_page.get(&page).copied() else {
            return false;
        };
        self.by_stamp.remove(&old);
        self.stamp += 1;
        self.by_stamp.insert(self.stamp, page);
        self.by_page.insert(page, self.stamp);
        true
    }

    /// `page` was read or written: it is cached, the oldest evicted.
    fn insert(&mut self, page: u64) {
        if self.capacity == 0 || self.hit(page) {
            return;
        }
        self.stamp += 1;
        self.by_page.insert(page, self.stamp);
        self.by_stamp.insert(self.stamp, page);
        while self.by_page.len() as u64 > self.capacity {
            let Some((_, p)) = self.by_stamp.pop_first() else {
                break;
            };
            self.by_page.remove(&p);
        }
    }
}

/// An operation in a worker's hands.
#[derive(Clone, Copy, Debug)]
struct Op {
    kind: OpKind,
    /// Its index in the result's operation types.
    stat: usize,
    injected: Nanos,
    /// Its requests in the ring's count.
    size: u32,
    /// Its first request's submission (scans measure from it).
    first_issue: Option<Nanos>,
    /// Requests not completed yet.
    left: u32,
}

/// A request a worker has to submit.
#[derive(Clone, Copy, Debug)]
struct Piece {
    op: u32,
    page: u64,
    write: bool,
    /// An update's read: its write follows.
    then_write: bool,
}

/// Where a worker's loop is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Take the ring's operations and submit.
    Top,
    /// `io_submit` returned: `io_getevents` for the submitted requests.
    GetEvents,
    /// Enough events: hand them out and run the callbacks.
    Callbacks,
}

/// One worker.
#[derive(Debug)]
struct Worker {
    /// Operations injected, not taken: type, injection time, requests.
    ring: VecDeque<(OpKind, Nanos, u32)>,
    /// Requests of the operations injected and not completed: the ring
    /// holds `ring` requests (a scan of n items is n of them).
    queued: u32,
    ops: Vec<Option<Op>>,
    free_ops: Vec<u32>,
    pending: Vec<Piece>,
    /// Requests in flight by slot.
    slots: HashMap<u32, Piece>,
    /// Requests of the last `io_submit`, which `io_getevents` waits for.
    submitted: u32,
    phase: Phase,
}

/// One store's state.
#[derive(Debug)]
pub(crate) struct Store {
    spec: Kvell,
    zipf: Option<Zipf>,
    cache: Lru,
    pages: u64,
    /// Per worker (app thread index order).
    workers: Vec<Worker>,
    /// The app thread index of worker 0.
    first_thread: usize,
    /// The result's operation types (indices into the apps' stats).
    stats: Vec<(OpKind, usize)>,
}

impl Store {
    pub(crate) fn new(spec: Kvell, first_thread: usize, stats: Vec<(OpKind, usize)>) -> Store {
        let per_page = (PAGE / spec.item_size.max(1)).max(1);
        let pages = spec.items.div_ceil(per_page).max(1);
        let workers = spec
            .cpus
            .iter()
            .map(|_| Worker {
                ring: VecDeque::new(),
                ops: Vec::new(),
                free_ops: Vec::new(),
                queued: 0,
                pending: Vec::new(),
                slots: HashMap::new(),
                submitted: 0,
                phase: Phase::Top,
            })
            .collect();
        Store {
            zipf: spec
                .zipfian
                .then(|| Zipf::new(spec.items, ZIPFIAN_THETA, spec.items)),
            cache: Lru {
                capacity: spec.cache_pages,
                ..Lru::default()
            },
            pages,
            spec,
            workers,
            first_thread,
            stats,
        }
    }

    /// The worker threads' cores.
    pub(crate) fn cores(spec: &Kvell) -> Vec<u32> {
        spec.cpus.clone()
    }

    /// Request slots per worker: the ring's requests or the longest
    /// scan, with the updates' writes, up to the driver's tags.
    pub(crate) fn slots(spec: &Kvell, tags: u32) -> u32 {
        spec.ring
            .max(spec.scan_length)
            .saturating_mul(2)
            .clamp(1, tags.max(1))
    }

    /// The next operation YCSB's mix draws.
    fn draw_kind(&self, rng: &mut ChaCha8Rng) -> OpKind {
        let p = rng.gen_range(0..100u32);
        match self.spec.workload {
            'A' if p < 50 => OpKind::Read,
            'A' => OpKind::Update,
            'B' if p < 95 => OpKind::Read,
            'B' => OpKind::Update,
            'D' if p < 95 => OpKind::Read,
            'D' => OpKind::Insert,
            'E' if p < u32::from(self.spec.scan_share) => OpKind::Scan,
            'E' => OpKind::Insert,
            'F' if p < 50 => OpKind::Read,
            'F' => OpKind::ReadModifyWrite,
            _ => OpKind::Read,
        }
    }

    /// The page of a key drawn from the workload's distribution: items
    /// are placed by a hash of their key (YCSB scrambles its zipfian
    /// ranks the same way).
    fn draw_page(&self, rng: &mut ChaCha8Rng) -> u64 {
        let key = match &self.zipf {
            Some(z) => z.rank(rng.gen()),
            None => rng.gen_range(0..self.spec.items),
        };
        // FNV-1a of the key's bytes, as YCSB's scrambling hashes.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in key.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h % self.pages
    }
}

fn stat_of(store: &Store, kind: OpKind) -> usize {
    store
        .stats
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(0, |&(_, s)| s)
}

impl World<'_> {
    /// Runs KVell worker `t` (app thread `i` of store `s`) on.
    pub(crate) fn kvell_step(&mut self, t: usize, i: usize, s: usize) {
        let now = self.now();
        let apps = self.apps.as_deref_mut().expect("an application thread");
        let store = &mut apps.kvells[s];
        let w = i - store.first_thread;
        // The injectors keep the ring full (the first time, and after
        // every completion below); a scan longer than the ring goes in
        // alone.
        loop {
            let wk = &store.workers[w];
            if wk.queued >= store.spec.ring {
                break;
            }
            let rng = &mut apps.threads[i].rng;
            let kind = store.draw_kind(rng);
            let n = match kind {
                OpKind::Scan if store.spec.scan_uniform => {
                    rng.gen_range(1..=store.spec.scan_length)
                }
                OpKind::Scan => store.spec.scan_length,
                _ => 1,
            };
            if wk.queued > 0 && wk.queued + n > store.spec.ring {
                break;
            }
            let wk = &mut store.workers[w];
            wk.queued += n;
            wk.ring.push_back((kind, now, n));
        }
        match store.workers[w].phase {
            Phase::Top => self.kvell_take_and_submit(t, i, s, w),
            Phase::GetEvents => {
                let apps = self.apps.as_deref_mut().expect("an application thread");
                let submitted = apps.kvells[s].workers[w].submitted;
                if self.threads[t].ready.len() as u32 >= submitted {
                    apps.kvells[s].workers[w].phase = Phase::Callbacks;
                    let n = u64::from(submitted);
                    let cost = n * self.costs.aio_getevents_event;
                    self.set_burst(t, cost, Cont::App);
                } else {
                    // Linux 5.0: every completion wakes the waiter, which
                    // sleeps again while fewer than min_nr are ready.
                    self.block(t, Wait::AppIo);
                }
            }
            Phase::Callbacks => self.kvell_callbacks(t, s, w),
        }
    }

    /// Takes what the ring holds and submits every pending request in one
    /// `io_submit`; or sleeps when there is nothing to do.
    fn kvell_take_and_submit(&mut self, t: usize, i: usize, s: usize, w: usize) {
        let now = self.now();
        let free = self.threads[t].free_slots.len();
        let apps = self.apps.as_deref_mut().expect("an application thread");
        let store = &mut apps.kvells[s];
        let mut cpu = 0;
        let mut hits = Vec::new();
        loop {
            let need = store.workers[w].pending.len();
            let Some(&(kind, injected, n)) = store.workers[w].ring.front() else {
                break;
            };
            if need + n as usize > free {
                break;
            }
            store.workers[w].ring.pop_front();
            let stat = stat_of(store, kind);
            let op = Op {
                kind,
                stat,
                injected,
                size: n,
                first_issue: None,
                left: 0,
            };
            let wk = &mut store.workers[w];
            let id = match wk.free_ops.pop() {
                Some(id) => {
                    wk.ops[id as usize] = Some(op);
                    id
                }
                None => {
                    wk.ops.push(Some(op));
                    (wk.ops.len() - 1) as u32
                }
            };
            let mut requests = 0;
            let cpu_before = cpu;
            for _ in 0..n {
                let page = store.draw_page(&mut apps.threads[i].rng);
                cpu += store.spec.worker_cpu;
                let write = kind == OpKind::Insert;
                let then_write = matches!(kind, OpKind::Update | OpKind::ReadModifyWrite);
                if !write && !then_write && store.cache.hit(page) {
                    continue;
                }
                requests += 1;
                store.workers[w].pending.push(Piece {
                    op: id,
                    page,
                    write,
                    then_write,
                });
            }
            if requests == 0 {
                // Every page cached: done in the worker, no I/O, once the
                // worker's CPU has reached its last item. A scan's time
                // runs from its first item, as an uncached one's from its
                // first request; any other operation's from its
                // injection.
                store.workers[w].ops[id as usize] = None;
                store.workers[w].free_ops.push(id);
                store.workers[w].queued -= n;
                let start = match kind {
                    OpKind::Scan => now + cpu_before,
                    _ => injected,
                };
                let bytes = store.spec.item_size * u64::from(n);
                hits.push((stat, (now + cpu).saturating_sub(start), bytes));
                continue;
            }
            if let Some(Some(o)) = store.workers[w].ops.get_mut(id as usize) {
                o.left = requests;
            }
        }
        let pending = std::mem::take(&mut store.workers[w].pending);
        let idle_sleep = store.spec.idle_sleep;
        for (stat, latency, bytes) in hits {
            apps.record_stat(stat, latency, bytes);
        }
        let store = &mut apps.kvells[s];
        if pending.is_empty() {
            // Nothing taken, nothing to submit: usleep(1).
            store.workers[w].phase = Phase::Top;
            let at = now + cpu + self.costs.timer_setup + idle_sleep;
            self.set_burst(t, cpu + self.costs.timer_setup, Cont::AppSleep(at));
            return;
        }
        let k = pending.len() as u32;
        for (index, piece) in pending.iter().enumerate() {
            let hint = hints::request_hint(
                IoCall::IoSubmit,
                &IoContext {
                    blocking_fd: false,
                    o_direct: true,
                    rw_flags: RwFlags::EMPTY,
                    ms_sync: false,
                    batch: BatchPosition {
                        index: index as u32,
                        len: k,
                    },
                },
            );
            let Some(&r) = self.threads[t].free_slots.last() else {
                break;
            };
            self.app_request(t, piece.write, PAGE, hint);
            let apps = self.apps.as_deref_mut().expect("an application thread");
            let wk = &mut apps.kvells[s].workers[w];
            wk.slots.insert(r, *piece);
            if let Some(Some(o)) = wk.ops.get_mut(piece.op as usize) {
                // The io_submit call starts after the worker's CPU.
                o.first_issue.get_or_insert(now + cpu);
            }
        }
        let apps = self.apps.as_deref_mut().expect("an application thread");
        let wk = &mut apps.kvells[s].workers[w];
        wk.submitted = k;
        wk.phase = Phase::GetEvents;
        let c = self.costs;
        let entry = cpu + c.syscall + c.aio_submit_call + u64::from(k) * c.aio_submit_iocb;
        self.start_call(t, entry);
    }

    /// The events are in hand: free the slots, complete the operations,
    /// queue updates' writes.
    fn kvell_callbacks(&mut self, t: usize, s: usize, w: usize) {
        let now = self.now();
        let n = self.threads[t].ready.len();
        for _ in 0..n {
            let Some(&r) = self.threads[t].ready.front() else {
                break;
            };
            self.app_reap(t);
            let apps = self.apps.as_deref_mut().expect("an application thread");
            let store = &mut apps.kvells[s];
            let Some(piece) = store.workers[w].slots.remove(&r) else {
                continue;
            };
            store.cache.insert(piece.page);
            if piece.then_write {
                store.workers[w].pending.push(Piece {
                    write: true,
                    then_write: false,
                    ..piece
                });
                continue;
            }
            let wk = &mut store.workers[w];
            let Some(Some(op)) = wk.ops.get_mut(piece.op as usize) else {
                continue;
            };
            op.left = op.left.saturating_sub(1);
            if op.left > 0 {
                continue;
            }
            let op = *op;
            wk.ops[piece.op as usize] = None;
            wk.free_ops.push(piece.op);
            wk.queued = wk.queued.saturating_sub(op.size);
            let start = match op.kind {
                OpKind::Scan => op.first_issue.unwrap_or(op.injected),
                _ => op.injected,
            };
            // Every item of the operation: a scan's n, one otherwise.
            let bytes = store.spec.item_size * u64::from(op.size);
            apps.record_stat(op.stat, now.saturating_sub(start), bytes);
        }
        let apps = self.apps.as_deref_mut().expect("an application thread");
        apps.kvells[s].workers[w].phase = Phase::Top;
        self.set_burst(
            t,
            self.costs.syscall + self.costs.aio_getevents_call,
            Cont::App,
        );
    }

    /// A worker's `usleep` timer is armed: it sleeps.
    pub(crate) fn app_sleep(&mut self, t: usize, at: Nanos) {
        if at <= self.now() {
            self.app_cont(t);
        } else {
            self.block_with_timer(t, Wait::AppIo, at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lru_keeps_the_most_recent_pages() {
        let mut l = Lru {
            capacity: 2,
            ..Lru::default()
        };
        l.insert(1);
        l.insert(2);
        assert!(l.hit(1));
        l.insert(3);
        assert!(l.hit(1) && l.hit(3) && !l.hit(2));
    }
}
