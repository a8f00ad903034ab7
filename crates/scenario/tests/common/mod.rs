//! The scenario of docs/SCENARIO.md, extended to every strategy family, as the
//! valid base that the tests modify.

#![allow(dead_code)]

pub const BASE: &str = r#"name     = "mixed"
seed     = 1
duration = "200ms"
warmup   = "20ms"

[device]
model = "optane-p4800x"

[host]
model = "xeon-e5-2660v4"
cores = 2

[[strategy]]
name = "default"
kind = "none"

[[strategy]]
name  = "adaptive"
kind  = "adaptive"
delta = "6us"
thr   = 32

[[strategy]]
name    = "cint"
kind    = "cinterrupts"
delta   = "6us"
thr     = 32
ooo     = true
barrier = "relaxed"

[[strategy]]
name = "vic"
kind = "vic"
cif_threshold = 4

[[job]]
name    = "async"
engine  = "libaio"
rw      = "randread"
bs      = "4k"
iodepth = 16
batch   = 1
batch_complete_min = 1
cpu     = 0
numjobs = 1

[[job]]
name   = "sync"
engine = "psync"
rw     = "randread"
bs     = "4k"
cpu    = 1
"#;

/// 1-based line of the first line containing `needle`.
pub fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .map(|i| i + 1)
        .unwrap_or_else(|| panic!("{needle:?} not in the text"))
}

/// `BASE` with one exact, unique replacement.
pub fn with(from: &str, to: &str) -> String {
    assert_eq!(
        BASE.matches(from).count(),
        1,
        "{from:?} must occur exactly once"
    );
    BASE.replacen(from, to, 1)
}
