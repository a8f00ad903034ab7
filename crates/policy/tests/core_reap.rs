//! Model check of driver-side reaping: random interleavings of posts,
//! full and urgent-only interrupts on a small queue (so it wraps and fills
//! often), compared with a plain list of entries.

use cint_policy::reap::{CompletionQueue, QueueFull};
use cint_policy::{Hint, Irq};
use proptest::prelude::*;

const SLOTS: usize = 8;

#[derive(Clone, Copy, Debug)]
enum Step {
    Post(Hint),
    Interrupt(Irq),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        5 => (any::<bool>(), any::<bool>())
            .prop_map(|(u, b)| Step::Post(Hint::from_bits(u, b))),
        1 => Just(Step::Interrupt(Irq::Full)),
        2 => Just(Step::Interrupt(Irq::UrgentOnly)),
    ]
}

/// The reference: every posted entry as (tag, hint, delivered), in order;
/// `head` is the index of the first one the device may not overwrite.
struct Model {
    entries: Vec<(u64, Hint, bool)>,
    head: usize,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn reaping_matches_the_model(steps in proptest::collection::vec(step(), 0..400)) {
        let mut cq = CompletionQueue::<SLOTS>::new();
        let mut model = Model { entries: Vec::new(), head: 0 };
        let mut next_tag = 0u64;
        for step in steps {
            match step {
                Step::Post(hint) => {
                    let owned = model.entries.len() - model.head;
                    let result = cq.post(next_tag, hint);
                    if owned == SLOTS {
                        prop_assert_eq!(result, Err(QueueFull { tag: next_tag }));
                    } else {
                        prop_assert_eq!(result, Ok(()));
                        model.entries.push((next_tag, hint, false));
                    }
                    next_tag += 1;
                }
                Step::Interrupt(irq) => {
                    let mut expected = Vec::new();
                    for e in &mut model.entries[model.head..] {
                        if !e.2 && (irq == Irq::Full || e.1 == Hint::Urgent) {
                            e.2 = true;
                            expected.push((e.0, e.1));
                        }
                    }
                    while model.head < model.entries.len() && model.entries[model.head].2 {
                        model.head += 1;
                    }
                    let mut got = Vec::new();
                    let n = cq.reap(irq, |tag, hint| got.push((tag, hint)));
                    prop_assert_eq!(n, got.len());
                    prop_assert_eq!(got, expected);
                }
            }
            let pending = model.entries.iter().filter(|e| !e.2).count();
            let urgent = model.entries.iter().filter(|e| !e.2 && e.1 == Hint::Urgent).count();
            prop_assert_eq!(cq.pending(), pending);
            prop_assert_eq!(cq.pending_urgent(), urgent);
            prop_assert_eq!(cq.occupied(), model.entries.len() - model.head);
            prop_assert_eq!(cq.head(), model.head % SLOTS);
            prop_assert_eq!(cq.tail(), model.entries.len() % SLOTS);
        }
        // A final full interrupt leaves nothing behind: no entry is lost.
        let _ = cq.reap(Irq::Full, |_, _| {});
        prop_assert_eq!((cq.pending(), cq.occupied()), (0, 0));
    }
}
