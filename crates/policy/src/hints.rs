//! Which hint the software side gives a request (docs/ALGORITHMS.md section 5,
//! cinterrupts Table 1): the kernel's default from the kind of call and
//! its flags, the application's per-request override, and what the block
//! layer does to hints when it splits or merges requests.

use crate::Hint;

/// The system call or kernel path that issued a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum IoCall {
    /// `read(2)`.
    Read = 0,
    /// `write(2)`.
    Write = 1,
    /// `pread(2)`.
    Pread = 2,
    /// `preadv(2)`.
    Preadv = 3,
    /// `pwrite(2)`.
    Pwrite = 4,
    /// `pwritev(2)`.
    Pwritev = 5,
    /// `preadv2(2)`: takes `RWF_*` flags.
    Preadv2 = 6,
    /// `pwritev2(2)`: takes `RWF_*` flags.
    Pwritev2 = 7,
    /// libaio `io_submit(2)`: one batch of requests.
    IoSubmit = 8,
    /// One `io_uring_enter(2)` submission batch.
    IoUringBatch = 9,
    /// `fsync(2)`.
    Fsync = 10,
    /// `fdatasync(2)`.
    Fdatasync = 11,
    /// `sync(2)`.
    Sync = 12,
    /// `syncfs(2)`.
    Syncfs = 13,
    /// `msync(2)`; the hint depends on `MS_SYNC`.
    Msync = 14,
    /// A filesystem journal commit.
    JournalCommit = 15,
    /// Page-cache writeback by the kernel's flusher threads.
    Writeback = 16,
}

impl IoCall {
    /// Every call, in declaration order (for tables and tests).
    pub const ALL: [IoCall; 17] = [
        IoCall::Read,
        IoCall::Write,
        IoCall::Pread,
        IoCall::Preadv,
        IoCall::Pwrite,
        IoCall::Pwritev,
        IoCall::Preadv2,
        IoCall::Pwritev2,
        IoCall::IoSubmit,
        IoCall::IoUringBatch,
        IoCall::Fsync,
        IoCall::Fdatasync,
        IoCall::Sync,
        IoCall::Syncfs,
        IoCall::Msync,
        IoCall::JournalCommit,
        IoCall::Writeback,
    ];

    /// The call with this numeric code (the C ABI's), if any.
    pub const fn from_code(code: u32) -> Option<IoCall> {
        if (code as usize) < Self::ALL.len() {
            Some(Self::ALL[code as usize])
        } else {
            None
        }
    }

    /// A write of the plain `write`/`pwrite(v)` family, the ones `O_DIRECT`
    /// makes Urgent.
    const fn is_plain_write(self) -> bool {
        matches!(self, IoCall::Write | IoCall::Pwrite | IoCall::Pwritev)
    }
}

/// Per-request `RWF_*` flags, as a bit set. The values of `HIPRI`,
/// `DSYNC`, `SYNC` and `NOWAIT` are Linux's; `URGENT` and `BARRIER` are the
/// cinterrupts additions, which upstream Linux does not define, placed
/// above every upstream flag (0x1..=0x80 as of Linux 6.14).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct RwFlags(pub u32);

impl RwFlags {
    /// No flags.
    pub const EMPTY: RwFlags = RwFlags(0);
    /// `RWF_HIPRI`: poll for the completion.
    pub const HIPRI: RwFlags = RwFlags(0x1);
    /// `RWF_DSYNC`.
    pub const DSYNC: RwFlags = RwFlags(0x2);
    /// `RWF_SYNC`.
    pub const SYNC: RwFlags = RwFlags(0x4);
    /// `RWF_NOWAIT`: fail instead of blocking; nobody waits, so no Urgent.
    pub const NOWAIT: RwFlags = RwFlags(0x8);
    /// `RWF_URGENT` (cinterrupts): mark this request Urgent.
    pub const URGENT: RwFlags = RwFlags(0x100);
    /// `RWF_BARRIER` (cinterrupts): mark this request Barrier.
    pub const BARRIER: RwFlags = RwFlags(0x200);

    /// Every flag in `other` is set here.
    pub const fn contains(self, other: RwFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The union of both sets.
    pub const fn union(self, other: RwFlags) -> RwFlags {
        RwFlags(self.0 | other.0)
    }
}

impl core::ops::BitOr for RwFlags {
    type Output = RwFlags;
    fn bitor(self, rhs: RwFlags) -> RwFlags {
        self.union(rhs)
    }
}

/// Where a request sits in the batch its call submitted. A call that
/// submits one request is a batch of one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BatchPosition {
    /// Index of the request in its batch, from 0.
    pub index: u32,
    /// Requests in the batch. 0 is read as 1.
    pub len: u32,
}

impl BatchPosition {
    /// A batch of one.
    pub const SINGLE: BatchPosition = BatchPosition { index: 0, len: 1 };

    /// This is the last request of its batch (an index past the end counts
    /// as last rather than leaving the batch without its Barrier).
    pub const fn is_last(self) -> bool {
        self.index as u64 + 1 >= self.len as u64
    }
}

impl Default for BatchPosition {
    fn default() -> Self {
        BatchPosition::SINGLE
    }
}

/// What the kernel knows about a request when it assigns the default hint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct IoContext {
    /// The file descriptor is blocking (no `O_NONBLOCK`): a thread waits.
    pub blocking_fd: bool,
    /// The file was opened with `O_DIRECT`.
    pub o_direct: bool,
    /// Per-request `RWF_*` flags (`preadv2`/`pwritev2`, io_uring, libaio).
    pub rw_flags: RwFlags,
    /// `msync` was called with `MS_SYNC`.
    pub ms_sync: bool,
    /// The request's place in its submission batch.
    pub batch: BatchPosition,
}

/// The kernel's default hint for a request (cinterrupts Table 1), before
/// any `RWF_URGENT`/`RWF_BARRIER` override.
pub const fn default_hint(call: IoCall, ctx: &IoContext) -> Hint {
    match call {
        IoCall::Read
        | IoCall::Write
        | IoCall::Pread
        | IoCall::Preadv
        | IoCall::Pwrite
        | IoCall::Pwritev => {
            if ctx.blocking_fd || (call.is_plain_write() && ctx.o_direct) {
                Hint::Urgent
            } else {
                Hint::Unmarked
            }
        }
        IoCall::Preadv2 | IoCall::Pwritev2 => {
            if ctx.rw_flags.contains(RwFlags::NOWAIT) {
                Hint::Unmarked
            } else {
                Hint::Urgent
            }
        }
        IoCall::IoSubmit | IoCall::IoUringBatch => {
            if ctx.batch.is_last() {
                Hint::Barrier
            } else {
                Hint::Unmarked
            }
        }
        IoCall::Fsync | IoCall::Fdatasync | IoCall::Sync | IoCall::Syncfs => Hint::Urgent,
        IoCall::Msync => {
            if ctx.ms_sync && ctx.batch.is_last() {
                Hint::Barrier
            } else {
                Hint::Unmarked
            }
        }
        IoCall::JournalCommit => Hint::Urgent,
        IoCall::Writeback => Hint::Unmarked,
    }
}

/// The application's override, if its flags carry one: `RWF_URGENT` alone
/// is Urgent, `RWF_BARRIER` alone is Barrier, both together mean
/// "explicitly unmarked".
pub const fn override_hint(flags: RwFlags) -> Option<Hint> {
    let urgent = flags.contains(RwFlags::URGENT);
    let barrier = flags.contains(RwFlags::BARRIER);
    if urgent || barrier {
        Some(Hint::from_bits(urgent, barrier))
    } else {
        None
    }
}

/// The hint a request carries: the application's override if there is
/// one, else the kernel's default.
///
/// # Example
///
/// ```
/// use cint_policy::hints::{request_hint, BatchPosition, IoCall, IoContext, RwFlags};
/// use cint_policy::Hint;
///
/// // A blocking pread: a thread waits for it.
/// let blocking = IoContext { blocking_fd: true, ..IoContext::default() };
/// assert_eq!(request_hint(IoCall::Pread, &blocking), Hint::Urgent);
/// // The last request of an io_submit batch carries the Barrier.
/// let last = IoContext { batch: BatchPosition { index: 15, len: 16 }, ..IoContext::default() };
/// assert_eq!(request_hint(IoCall::IoSubmit, &last), Hint::Barrier);
/// // Both override flags: explicitly unmarked.
/// let both = IoContext { rw_flags: RwFlags::URGENT | RwFlags::BARRIER, ..blocking };
/// assert_eq!(request_hint(IoCall::Pread, &both), Hint::Unmarked);
/// ```
pub const fn request_hint(call: IoCall, ctx: &IoContext) -> Hint {
    match override_hint(ctx.rw_flags) {
        Some(hint) => hint,
        None => default_hint(call, ctx),
    }
}

/// The hint of every child when the block layer splits a request: the
/// parent's.
pub const fn split_hint(parent: Hint) -> Hint {
    parent
}

/// The hint of a request merged from two: the union of their hints, where
/// Urgent and Barrier together become Urgent (an Urgent waiter must not
/// wait for a Barrier's batch).
///
/// # Example
///
/// ```
/// use cint_policy::hints::merge_hints;
/// use cint_policy::Hint;
///
/// assert_eq!(merge_hints(Hint::Barrier, Hint::Urgent), Hint::Urgent);
/// assert_eq!(merge_hints(Hint::Unmarked, Hint::Barrier), Hint::Barrier);
/// ```
pub const fn merge_hints(a: Hint, b: Hint) -> Hint {
    match (a, b) {
        (Hint::Urgent, _) | (_, Hint::Urgent) => Hint::Urgent,
        (Hint::Barrier, _) | (_, Hint::Barrier) => Hint::Barrier,
        (Hint::Unmarked, Hint::Unmarked) => Hint::Unmarked,
    }
}
