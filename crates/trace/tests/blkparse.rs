//! The blktrace reader against blkparse, the ecosystem's own reader, on
//! the same generated files (version 7 in both byte orders, with payloads
//! to skip): every Q event blkparse prints is a request here, with the
//! same time, sector, size, process, CPU and direction, and every latency
//! read here ends at a C event blkparse prints. blkparse 1.2 knows
//! version 7 only, so version 8 is checked by the other tests.

use std::io::Write as _;
use std::process::{Command, Stdio};

use cint_trace::encode::{self, Io};
use cint_trace::{parse, Format};

/// Deterministic requests from a small linear congruential generator:
/// three processes on four CPUs, reads and writes, some without a C.
fn generated() -> Vec<Io> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        x >> 33
    };
    let mut t = 5_000_000_000u64;
    (0..300)
        .map(|i| {
            t += 1 + next() % 40_000;
            let done = (i % 7 != 3).then(|| t + 3_000 + next() % 90_000);
            Io {
                time: t,
                offset: (next() % (1 << 24)) * 512,
                bytes: (1 + (next() % 64) as u32) * 512,
                write: next() % 3 == 0,
                stream: 100 + (next() % 3) as u32,
                cpu: (next() % 4) as u32,
                done,
            }
        })
        .collect()
}

/// One event line of blkparse: (action, ns since the first event,
/// sector, blocks, pid, cpu, rwbs).
type Row = (String, u64, u64, u64, u32, u32, String);

/// blkparse's event lines for `bytes` read from standard input.
fn blkparse(bytes: &[u8]) -> Option<Vec<Row>> {
    let mut child = match Command::new("blkparse")
        .args(["-i", "-", "-f", "%a %T %t %S %n %p %c %d\n"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(_) => {
            cint_test_support::skip::missing("blkparse is not installed (.ci/deps/blktrace.sh)");
            return None;
        }
    };
    // Fed from a thread: blkparse prints while it reads, and a trace of a
    // few hundred KB fills both pipes if this thread feeds and then reads.
    let mut stdin = child.stdin.take()?;
    let input = bytes.to_vec();
    let feeder = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("blkparse runs");
    feeder.join().expect("the feeder").expect("feed blkparse");
    assert!(
        out.status.success(),
        "blkparse failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("blkparse prints text");
    let mut rows = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // The summary after the events has other shapes.
        if f.len() != 8 || !matches!(f[0], "Q" | "D" | "C") {
            continue;
        }
        let n = |s: &str| s.parse::<u64>().expect("a number");
        rows.push((
            f[0].to_string(),
            n(f[1]) * 1_000_000_000 + n(f[2]),
            n(f[3]),
            n(f[4]),
            n(f[5]) as u32,
            n(f[6]) as u32,
            f[7].to_string(),
        ));
    }
    Some(rows)
}

#[test]
fn q_events_and_latencies_match_blkparse() {
    let ios = generated();
    for big in [false, true] {
        let bytes = encode::blktrace(&ios, 7, big, 16);
        let Some(rows) = blkparse(&bytes) else {
            return;
        };
        let trace = parse(&bytes, None).expect("our reader takes it");
        assert_eq!(trace.format, Format::Blktrace);
        let genesis = ios.iter().map(|io| io.time).min().unwrap();
        let queued: Vec<_> = rows.iter().filter(|r| r.0 == "Q").collect();
        assert_eq!(queued.len(), trace.requests.len(), "big-endian: {big}");
        assert_eq!(queued.len(), ios.len());
        for (q, r) in queued.iter().zip(&trace.requests) {
            let stream = &trace.streams[r.stream as usize];
            let ours = (
                r.time - genesis,
                r.offset / 512,
                r.bytes / 512,
                stream.label.clone(),
                if r.write { "W" } else { "R" },
            );
            let theirs = (q.1, q.2, q.3, format!("pid {}", q.4), q.6.as_str());
            assert_eq!(ours, theirs, "request at {}", r.place);
        }
        // Each stream's CPU is the CPU of its first Q in blkparse too.
        for s in &trace.streams {
            let first = queued
                .iter()
                .find(|q| format!("pid {}", q.4) == s.label)
                .expect("the stream's pid");
            assert_eq!(s.cpu, Some(first.5));
        }
        assert_latencies_end_on_c_events(&trace, &rows, genesis);
    }
}

/// As many requests with a latency as blkparse prints C events, each
/// latency ending (from `genesis`, blkparse's time zero) on one of them,
/// of the same sector and size. Returns how many requests had a latency.
fn assert_latencies_end_on_c_events(
    trace: &cint_trace::Trace,
    rows: &[Row],
    genesis: u64,
) -> usize {
    let completions: Vec<_> = rows.iter().filter(|r| r.0 == "C").collect();
    let with_latency: Vec<_> = trace
        .requests
        .iter()
        .filter(|r| r.latency.is_some())
        .collect();
    assert_eq!(with_latency.len(), completions.len());
    for r in &with_latency {
        let at = r.time + r.latency.unwrap() - genesis;
        assert!(
            completions
                .iter()
                .any(|c| c.1 == at && c.2 == r.offset / 512 && c.3 == r.bytes / 512),
            "no C event of blkparse at {at} ns for the request at {}",
            r.place
        );
    }
    with_latency.len()
}

/// The shipped blktrace, captured by blktrace 2.0.0 in a QEMU guest
/// (scenarios/traces/README.md), read here and by blkparse: the same
/// requests, and a latency for exactly the requests blkparse completes.
#[test]
fn the_shipped_guest_capture_matches_blkparse() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/traces/fio-guest.blktrace.0");
    let bytes = std::fs::read(&path).expect("the shipped trace");
    let trace = parse(&bytes, None).expect("our reader takes it");
    assert_eq!(trace.format, Format::Blktrace);
    // Linux 6.1 with blktrace 2.0.0 writes version 7 (48-byte) records.
    assert_eq!((trace.version, trace.big_endian), (7, false));
    // The fio job: 1,000 4 KiB reads and 300 16 KiB writes.
    let reads = trace.requests.iter().filter(|r| !r.write).count();
    let writes = trace.requests.iter().filter(|r| r.write).count();
    assert_eq!((reads, writes), (1000, 300));
    let Some(rows) = blkparse(&bytes) else {
        return;
    };
    let queued: Vec<_> = rows.iter().filter(|r| r.0 == "Q").collect();
    assert_eq!(queued.len(), trace.requests.len());
    let genesis = trace.requests.iter().map(|r| r.time).min().unwrap();
    // blkparse counts time from the first event, a Q here.
    for (q, r) in queued.iter().zip(&trace.requests) {
        assert_eq!(
            (q.1, q.2, q.3),
            (r.time - genesis, r.offset / 512, r.bytes / 512),
            "request at {}",
            r.place
        );
    }
    assert_eq!(
        assert_latencies_end_on_c_events(&trace, &rows, genesis),
        trace.requests.len(),
        "every request completed"
    );
}
