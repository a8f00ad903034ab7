//! Hint rules of docs/ALGORITHMS.md section 5 (cinterrupts Table 1): one test per row
//! of the table, the override flags, split and merge.

use cint_policy::hints::{
    default_hint, merge_hints, override_hint, request_hint, split_hint, BatchPosition, IoCall,
    IoContext, RwFlags,
};
use cint_policy::Hint;

fn ctx() -> IoContext {
    IoContext::default()
}

fn blocking() -> IoContext {
    IoContext {
        blocking_fd: true,
        ..ctx()
    }
}

fn in_batch(index: u32, len: u32) -> IoContext {
    IoContext {
        batch: BatchPosition { index, len },
        ..ctx()
    }
}

#[test]
fn plain_read_write_family_is_urgent_on_a_blocking_fd() {
    for call in [
        IoCall::Read,
        IoCall::Write,
        IoCall::Pread,
        IoCall::Preadv,
        IoCall::Pwrite,
        IoCall::Pwritev,
    ] {
        assert_eq!(default_hint(call, &blocking()), Hint::Urgent, "{call:?}");
        assert_eq!(default_hint(call, &ctx()), Hint::Unmarked, "{call:?}");
    }
}

#[test]
fn o_direct_makes_writes_urgent_but_not_reads() {
    let direct = IoContext {
        o_direct: true,
        ..ctx()
    };
    for call in [IoCall::Write, IoCall::Pwrite, IoCall::Pwritev] {
        assert_eq!(default_hint(call, &direct), Hint::Urgent, "{call:?}");
    }
    for call in [IoCall::Read, IoCall::Pread, IoCall::Preadv] {
        assert_eq!(default_hint(call, &direct), Hint::Unmarked, "{call:?}");
    }
}

#[test]
fn preadv2_pwritev2_are_urgent_unless_nowait() {
    let nowait = IoContext {
        rw_flags: RwFlags::NOWAIT | RwFlags::HIPRI,
        ..ctx()
    };
    for call in [IoCall::Preadv2, IoCall::Pwritev2] {
        assert_eq!(default_hint(call, &ctx()), Hint::Urgent, "{call:?}");
        assert_eq!(default_hint(call, &nowait), Hint::Unmarked, "{call:?}");
        // Other flags do not matter.
        let hipri = IoContext {
            rw_flags: RwFlags::HIPRI | RwFlags::DSYNC,
            ..ctx()
        };
        assert_eq!(default_hint(call, &hipri), Hint::Urgent, "{call:?}");
    }
}

#[test]
fn batches_get_a_barrier_on_their_last_request_only() {
    for call in [IoCall::IoSubmit, IoCall::IoUringBatch] {
        let hints: Vec<Hint> = (0..4)
            .map(|i| default_hint(call, &in_batch(i, 4)))
            .collect();
        assert_eq!(
            hints,
            [
                Hint::Unmarked,
                Hint::Unmarked,
                Hint::Unmarked,
                Hint::Barrier
            ],
            "{call:?}"
        );
        // A batch of one is its own last request; so is a zero length.
        assert_eq!(default_hint(call, &ctx()), Hint::Barrier);
        assert_eq!(default_hint(call, &in_batch(0, 0)), Hint::Barrier);
        // Blocking fd does not change batch semantics.
        let blocking_first = IoContext {
            blocking_fd: true,
            ..in_batch(0, 2)
        };
        assert_eq!(default_hint(call, &blocking_first), Hint::Unmarked);
    }
}

#[test]
fn sync_calls_and_journal_commits_are_urgent() {
    for call in [
        IoCall::Fsync,
        IoCall::Fdatasync,
        IoCall::Sync,
        IoCall::Syncfs,
        IoCall::JournalCommit,
    ] {
        assert_eq!(default_hint(call, &ctx()), Hint::Urgent, "{call:?}");
        assert_eq!(
            default_hint(call, &in_batch(0, 3)),
            Hint::Urgent,
            "{call:?}"
        );
    }
}

#[test]
fn msync_with_ms_sync_marks_its_last_request_barrier() {
    let sync = |index, len| IoContext {
        ms_sync: true,
        ..in_batch(index, len)
    };
    assert_eq!(default_hint(IoCall::Msync, &sync(0, 3)), Hint::Unmarked);
    assert_eq!(default_hint(IoCall::Msync, &sync(2, 3)), Hint::Barrier);
    // MS_ASYNC: nobody waits.
    assert_eq!(default_hint(IoCall::Msync, &in_batch(2, 3)), Hint::Unmarked);
}

#[test]
fn writeback_is_unmarked() {
    assert_eq!(default_hint(IoCall::Writeback, &blocking()), Hint::Unmarked);
    assert_eq!(default_hint(IoCall::Writeback, &ctx()), Hint::Unmarked);
}

#[test]
fn overrides_win_over_every_default_and_both_mean_unmarked() {
    let with = |flags| IoContext {
        rw_flags: flags,
        blocking_fd: true,
        ..in_batch(3, 4)
    };
    assert_eq!(override_hint(RwFlags::EMPTY), None);
    assert_eq!(override_hint(RwFlags::NOWAIT), None);
    for call in IoCall::ALL {
        assert_eq!(request_hint(call, &with(RwFlags::URGENT)), Hint::Urgent);
        assert_eq!(request_hint(call, &with(RwFlags::BARRIER)), Hint::Barrier);
        assert_eq!(
            request_hint(call, &with(RwFlags::URGENT | RwFlags::BARRIER)),
            Hint::Unmarked,
            "{call:?}: both flags are explicitly unmarked"
        );
        // Without override flags, the default.
        let plain = with(RwFlags::EMPTY);
        assert_eq!(request_hint(call, &plain), default_hint(call, &plain));
    }
    // RWF_URGENT on a NOWAIT request still wins.
    let nowait_urgent = IoContext {
        rw_flags: RwFlags::NOWAIT | RwFlags::URGENT,
        ..ctx()
    };
    assert_eq!(request_hint(IoCall::Preadv2, &nowait_urgent), Hint::Urgent);
}

#[test]
fn every_call_code_round_trips() {
    for (code, call) in IoCall::ALL.iter().enumerate() {
        assert_eq!(*call as u32, code as u32);
        assert_eq!(IoCall::from_code(code as u32), Some(*call));
    }
    assert_eq!(IoCall::from_code(IoCall::ALL.len() as u32), None);
    assert_eq!(IoCall::from_code(u32::MAX), None);
}

#[test]
fn split_children_keep_the_parent_hint() {
    for hint in [Hint::Unmarked, Hint::Urgent, Hint::Barrier] {
        assert_eq!(split_hint(hint), hint);
    }
}

#[test]
fn merge_is_the_union_with_urgent_over_barrier() {
    use Hint::{Barrier as B, Unmarked as N, Urgent as U};
    let table = [
        (N, N, N),
        (N, U, U),
        (N, B, B),
        (U, U, U),
        (U, B, U),
        (B, B, B),
    ];
    for (a, b, merged) in table {
        assert_eq!(merge_hints(a, b), merged, "{a:?} + {b:?}");
        assert_eq!(merge_hints(b, a), merged, "{b:?} + {a:?}");
    }
    // Associative, so the order in which a run of requests merges does not
    // matter.
    let all = [N, U, B];
    for a in all {
        for b in all {
            for c in all {
                assert_eq!(
                    merge_hints(merge_hints(a, b), c),
                    merge_hints(a, merge_hints(b, c))
                );
            }
        }
    }
}

#[test]
fn flag_set_operations() {
    let f = RwFlags::URGENT | RwFlags::NOWAIT;
    assert!(f.contains(RwFlags::URGENT));
    assert!(f.contains(RwFlags::NOWAIT));
    assert!(!f.contains(RwFlags::BARRIER));
    assert!(f.contains(RwFlags::EMPTY));
    assert_eq!(f.0, 0x108);
}

#[test]
fn hint_words_decode_the_two_bits_and_refuse_the_rest() {
    assert_eq!(Hint::from_wire(0), Ok(Hint::Unmarked));
    assert_eq!(Hint::from_wire(1), Ok(Hint::Urgent));
    assert_eq!(Hint::from_wire(2), Ok(Hint::Barrier));
    // Both bits: "explicitly unmarked" (docs/ALGORITHMS.md section 5).
    assert_eq!(Hint::from_wire(3), Ok(Hint::Unmarked));
    for bits in [4, 5, 8, 0x100, u32::MAX] {
        assert_eq!(
            Hint::from_wire(bits),
            Err(cint_policy::PolicyError::UnknownHintBits(bits))
        );
    }
    for hint in [Hint::Unmarked, Hint::Urgent, Hint::Barrier] {
        assert_eq!(Hint::from_wire(hint.to_wire()), Ok(hint));
        let (urgent, barrier) = hint.bits();
        assert_eq!(Hint::from_bits(urgent, barrier), hint);
    }
}
