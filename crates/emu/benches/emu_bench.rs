//! The emulator's own costs, as ratios measured in one run:
//!
//! 1. added latency at QD1 with `none` over the raw cross-core wake-up
//!    (a thread on the application CPU publishes a request and blocks; a
//!    thread spinning on the device CPU sees it and wakes it) — target at
//!    most 1.10;
//! 2. device-core capacity with a zero-latency synthetic device, polled —
//!    target at least 2 M completions/s;
//! 3. the shipped sync-qd1 and async-batch scenarios under none, adaptive
//!    and cinterrupts, emulated and simulated side by side (same file,
//!    same seed, same duration).
//!
//! `cargo bench -p cint-emu --bench emu_bench` (about 10 s). Set
//! `CINT_EMU_BENCH_SECONDS` to change the length of each measurement.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use cint_emu::sys;
use cint_emu::{
    BackendConfig, Completion, DeviceConfig, Emulator, IdleDelivery, Op, QueueConfig, QueueMode,
    Request, WaitMode,
};
use cint_policy::{Hint, Nanos, PolicyConfig, MS, SEC, US};
use cint_report::{LatencyHistogram, RunResult};
use cint_scenario::profiles::{JitterKind, OpTiming};
use cint_scenario::units::Duration;
use cint_scenario::{DeviceProfile, Scenario};

/// Turns taken by the QD1 mechanisms (see `main`).
const QD1_BLOCKS: u64 = 10;

/// Round trips each QD1 measurement makes before it records: the first
/// tens of milliseconds after the CPU was busy (the previous mechanism, or
/// thread start-up) see wake-ups up to twice as fast as later ones on the
/// reference VM, and a block must not be measured in that state.
const WARMUP_ROUNDS: u64 = 500;

fn seconds() -> f64 {
    std::env::var("CINT_EMU_BENCH_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0)
}

fn zero_latency_device(units: u32) -> DeviceProfile {
    let mut p = DeviceProfile::builtin("optane-p4800x").expect("built-in");
    p.parallel_units = units;
    p.jitter = JitterKind::None;
    p.read = OpTiming {
        base: Duration(0),
        bandwidth: 0,
    };
    p.write = p.read.clone();
    p
}

fn p(hist: &LatencyHistogram, q: f64) -> f64 {
    hist.histogram().value_at_quantile(q) as f64 / 1_000.0
}

/// Raw cost of the wake-up the emulator's interrupt path is built on: a
/// thread on the application CPU publishes a request and blocks on a futex;
/// a thread spinning on the device CPU sees it, holds it for `service` (so
/// the requester is surely asleep, as it is behind a real device), then
/// wakes it. Returns submission-to-running round trips.
fn raw_wakeup(app: u32, dev: u32, rounds: u64, service: Nanos) -> LatencyHistogram {
    let request = Arc::new(AtomicU64::new(0));
    let word = Arc::new(AtomicU32::new(0));
    let sleeping = Arc::new(AtomicU32::new(0));
    let stop = Arc::new(AtomicU32::new(0));
    let spinner = {
        let (request, word, sleeping, stop) = (
            Arc::clone(&request),
            Arc::clone(&word),
            Arc::clone(&sleeping),
            Arc::clone(&stop),
        );
        std::thread::spawn(move || {
            sys::pin_to(dev).expect("pin device cpu");
            let mut seen = 0;
            while stop.load(Ordering::Relaxed) == 0 {
                let r = request.load(Ordering::Acquire);
                if r != seen {
                    seen = r;
                    sys::spin_until(sys::now() + service);
                    word.fetch_add(1, Ordering::SeqCst);
                    std::sync::atomic::fence(Ordering::SeqCst);
                    if sleeping.load(Ordering::SeqCst) != 0 {
                        sys::futex_wake(&word);
                    }
                }
                std::hint::spin_loop();
            }
        })
    };
    let requester = std::thread::spawn(move || {
        sys::pin_to(app).expect("pin app cpu");
        let mut hist = LatencyHistogram::new();
        for i in 1..=WARMUP_ROUNDS + rounds {
            let before = word.load(Ordering::SeqCst);
            let t0 = sys::now();
            request.store(i, Ordering::Release);
            sleeping.store(1, Ordering::SeqCst);
            std::sync::atomic::fence(Ordering::SeqCst);
            while word.load(Ordering::SeqCst) == before {
                sys::futex_wait(&word, before);
            }
            sleeping.store(0, Ordering::SeqCst);
            if i > WARMUP_ROUNDS {
                hist.record(sys::now() - t0);
            }
        }
        hist
    });
    let hist = requester.join().expect("requester");
    stop.store(1, Ordering::Relaxed);
    spinner.join().expect("spinner");
    hist
}

static SIGNALLED: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_sigusr1(_: libc::c_int) {
    // Async-signal-safe: one atomic store.
    SIGNALLED.store(1, Ordering::SeqCst);
}

/// The alternative interrupt mechanism: the device thread sends a signal
/// (`tgkill`) to the blocked requester, whose handler runs in its context.
fn raw_signal(app: u32, dev: u32, rounds: u64, service: Nanos) -> LatencyHistogram {
    // SAFETY: sigaction is plain data; the handler only stores an atomic.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigusr1 as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut());
    }
    let request = Arc::new(AtomicU64::new(0));
    let target = Arc::new(std::sync::atomic::AtomicI32::new(0));
    let stop = Arc::new(AtomicU32::new(0));
    let spinner = {
        let (request, target, stop) =
            (Arc::clone(&request), Arc::clone(&target), Arc::clone(&stop));
        std::thread::spawn(move || {
            sys::pin_to(dev).expect("pin device cpu");
            let mut seen = 0;
            while stop.load(Ordering::Relaxed) == 0 {
                let r = request.load(Ordering::Acquire);
                if r != seen {
                    seen = r;
                    sys::spin_until(sys::now() + service);
                    // SAFETY: tgkill to a live thread of this process with a
                    // signal whose handler is installed above.
                    unsafe {
                        libc::syscall(
                            libc::SYS_tgkill,
                            libc::getpid(),
                            target.load(Ordering::Acquire),
                            libc::SIGUSR1,
                        )
                    };
                }
                std::hint::spin_loop();
            }
        })
    };
    let requester = std::thread::spawn(move || {
        sys::pin_to(app).expect("pin app cpu");
        target.store(sys::gettid(), Ordering::Release);
        let idle = AtomicU32::new(0);
        let mut hist = LatencyHistogram::new();
        for i in 1..=WARMUP_ROUNDS + rounds {
            SIGNALLED.store(0, Ordering::SeqCst);
            let t0 = sys::now();
            request.store(i, Ordering::Release);
            while SIGNALLED.load(Ordering::SeqCst) == 0 {
                // Blocks until the signal interrupts the wait (EINTR).
                sys::futex_wait(&idle, 0);
            }
            if i > WARMUP_ROUNDS {
                hist.record(sys::now() - t0);
            }
        }
        hist
    });
    let hist = requester.join().expect("requester");
    stop.store(1, Ordering::Relaxed);
    spinner.join().expect("spinner");
    hist
}

fn emu_qd1(
    app: u32,
    dev: u32,
    mode: QueueMode,
    idle_delivery: IdleDelivery,
    rounds: u64,
    service: Nanos,
) -> LatencyHistogram {
    let mut profile = zero_latency_device(1);
    profile.read.base = Duration(service);
    let emulator = Emulator::start(DeviceConfig {
        device_cpu: dev,
        queues: vec![QueueConfig { app_cpu: app, mode }],
        backend: BackendConfig::Synthetic { profile, seed: 1 },
        realtime: cint_emu::Realtime::Require,
        idle_delivery,
    })
    .expect("emulator");
    let mut client = emulator.client(0, 1).expect("client");
    let wait = if mode == QueueMode::Poll {
        WaitMode::Spin
    } else {
        WaitMode::Block
    };
    let hist = std::thread::spawn(move || {
        sys::pin_to(app).expect("pin app cpu");
        let mut hist = LatencyHistogram::new();
        for i in 0..WARMUP_ROUNDS + rounds {
            let request = Request {
                op: Op::Read,
                offset: 0,
                len: 4096,
                hint: Hint::Urgent,
                buf: None,
                user_data: i,
            };
            let c = client.submit_and_wait(request, wait).expect("request");
            if i >= WARMUP_ROUNDS {
                hist.record(c.latency());
            }
        }
        hist
    })
    .join()
    .expect("client thread");
    emulator.shutdown().expect("shutdown");
    hist
}

/// Completions per second the device core sustains with a zero-latency
/// device, polled by one client with many requests in flight.
fn capacity(app: u32, dev: u32, secs: f64) -> f64 {
    let emulator = Emulator::start(DeviceConfig {
        device_cpu: dev,
        queues: vec![QueueConfig {
            app_cpu: app,
            mode: QueueMode::Poll,
        }],
        backend: BackendConfig::Synthetic {
            profile: zero_latency_device(1024),
            seed: 1,
        },
        realtime: cint_emu::Realtime::Prefer,
        idle_delivery: Default::default(),
    })
    .expect("emulator");
    let mut client = emulator.client(0, 512).expect("client");
    let best = std::thread::spawn(move || {
        sys::pin_to(app).expect("pin app cpu");
        let mut done: Vec<Completion> = Vec::with_capacity(512);
        // Best of ten windows: the application CPU is shared with whatever
        // else runs on the machine, and a preempted submitter starves the
        // device core; the best window is the device's own limit.
        let window = (secs * SEC as f64 / 10.0) as Nanos;
        let mut best = 0.0f64;
        let mut n = 0u64;
        for _ in 0..10 {
            let start = sys::now();
            let end = start + window;
            let mut completed = 0u64;
            while sys::now() < end {
                while client.in_flight() < client.depth() {
                    let request = Request {
                        op: Op::Read,
                        offset: 0,
                        len: 4096,
                        hint: Hint::Unmarked,
                        buf: None,
                        user_data: n,
                    };
                    n += 1;
                    if client.submit(request).is_err() {
                        break;
                    }
                }
                completed += client.reap(&mut done) as u64;
                done.clear();
            }
            best = best.max(completed as f64 / ((sys::now() - start) as f64 / 1e9));
        }
        best
    })
    .join()
    .expect("client thread");
    emulator.shutdown().expect("shutdown");
    best
}

/// The strategies compared side by side.
const COMPARED: [&str; 3] = ["none", "adaptive", "cinterrupts"];

/// A shipped scenario (`scenarios/NAME.toml`), run for `secs`, with only
/// the compared strategies: the very file `cint sim` and `cint emu` take.
fn shipped_scenario(name: &str, secs: f64) -> Result<Scenario, String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(format!("{name}.toml"));
    let duration = format!("duration={}ms", (secs * 1e3).round().max(1.0));
    let mut s = cint_scenario::load_file(&path, &[duration]).map_err(|e| e.to_string())?;
    s.strategies
        .retain(|st| COMPARED.contains(&st.name.as_str()));
    if s.strategies.len() != COMPARED.len() {
        return Err(format!(
            "{}: expected strategies {COMPARED:?}",
            path.display()
        ));
    }
    Ok(s)
}

/// Per-I/O figures of one strategy's first job.
struct Row {
    iops: f64,
    p50_us: f64,
    p99_us: f64,
    irq_per_io: f64,
    csw_per_io: f64,
    cpu: f64,
}

impl Row {
    fn of(r: &cint_report::StrategyResult) -> Row {
        let j = &r.jobs[0];
        let ios = j.ios.max(1) as f64;
        Row {
            iops: j.iops,
            p50_us: j.lat_ns.at(50.0).unwrap_or(0) as f64 / 1e3,
            p99_us: j.lat_ns.at(99.0).unwrap_or(0) as f64 / 1e3,
            irq_per_io: r.interrupts as f64 / ios,
            csw_per_io: r.context_switches as f64 / ios,
            cpu: r.cpu_util,
        }
    }
}

impl Row {
    const HEADER: &'static str = "     IOPS  p50 us  p99 us IRQ/IO csw/IO   CPU x none";

    /// The row's columns under [`Row::HEADER`], IOPS also relative to `none`.
    fn columns(&self, none_iops: f64) -> String {
        format!(
            "{:>9.0} {:>7.1} {:>7.1} {:>6.3} {:>6.2} {:>5.2} {:>6.2}",
            self.iops,
            self.p50_us,
            self.p99_us,
            self.irq_per_io,
            self.csw_per_io,
            self.cpu,
            self.iops / none_iops.max(1.0)
        )
    }
}

fn print_comparison(emu: &RunResult, sim: Option<&RunResult>) {
    println!("  {:<12} |{} |{}", "emu | sim", Row::HEADER, Row::HEADER);
    let emu_none = emu.results[0].jobs[0].iops;
    for (k, r) in emu.results.iter().enumerate() {
        let sim_cols = match sim.map(|s| (&s.results[0], s.results.get(k))) {
            Some((none, Some(s))) => Row::of(s).columns(none.jobs[0].iops),
            _ => "(no simulator result)".into(),
        };
        println!(
            "  {:<12} | {} | {sim_cols}",
            r.strategy,
            Row::of(r).columns(emu_none)
        );
    }
}

fn sim_run(s: &Scenario) -> Option<RunResult> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let out = catch_unwind(AssertUnwindSafe(|| cint_sim::run(s)));
    std::panic::set_hook(previous);
    match out {
        Ok(Ok(r)) => Some(r),
        Ok(Err(e)) => {
            println!("  (simulator refused the scenario: {e})");
            None
        }
        Err(_) => {
            println!("  (simulator not available in this build)");
            None
        }
    }
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not and
    // must not spend 15 s spinning both CPUs.
    if !std::env::args().any(|a| a == "--bench") {
        println!("emu_bench: run with `cargo bench -p cint-emu --bench emu_bench`");
        return;
    }
    let cpus = sys::allowed_cpus().expect("affinity");
    if cpus.len() < 2 {
        println!("emu_bench: needs 2 CPUs, this process has {}", cpus.len());
        return;
    }
    let (app, dev) = (cpus[0], *cpus.last().expect("a cpu"));
    let secs = seconds();
    let clock_reads = 1_000_000u64;
    let t0 = sys::now();
    let mut sink = 0;
    for _ in 0..clock_reads {
        sink ^= sys::now();
    }
    std::hint::black_box(sink);
    println!(
        "clock: CLOCK_MONOTONIC read costs {:.1} ns",
        (sys::now() - t0) as f64 / clock_reads as f64
    );

    let rounds = (10_000.0 * secs) as u64;
    let service = 50 * US;
    // The five mechanisms take turns in short blocks: the cost of a
    // cross-core wake-up on a shared VM drifts by tens of percent within
    // seconds (other guests, the host's frequency), and a ratio of two
    // measurements taken at different moments would mostly measure that
    // drift.
    let (mut raw, mut signal, mut none, mut by_handler, mut polled) = (
        LatencyHistogram::new(),
        LatencyHistogram::new(),
        LatencyHistogram::new(),
        LatencyHistogram::new(),
        LatencyHistogram::new(),
    );
    let added = |h: &LatencyHistogram, q: f64| p(h, q) - service as f64 / 1e3;
    let block = (rounds / QD1_BLOCKS).max(1);
    let mut paired = Vec::with_capacity(QD1_BLOCKS as usize);
    for _ in 0..QD1_BLOCKS {
        let raw_block = raw_wakeup(app, dev, block, service);
        signal.merge(&raw_signal(app, dev, block, service));
        let irq = QueueMode::Interrupt(PolicyConfig::None);
        let none_block = emu_qd1(app, dev, irq, IdleDelivery::Waiter, block, service);
        by_handler.merge(&emu_qd1(
            app,
            dev,
            irq,
            IdleDelivery::Handler,
            block,
            service,
        ));
        polled.merge(&emu_qd1(
            app,
            dev,
            QueueMode::Poll,
            IdleDelivery::Waiter,
            block,
            service,
        ));
        paired.push(added(&none_block, 0.5) / added(&raw_block, 0.5));
        raw.merge(&raw_block);
        none.merge(&none_block);
    }
    paired.sort_by(f64::total_cmp);
    println!(
        "QD1, 50 us synthetic device, {rounds} requests: latency beyond the 50 us service (us)"
    );
    for (name, h) in [
        ("raw cross-core wake-up", &raw),
        ("raw cross-core signal", &signal),
        ("emulator, none (IRQ)", &none),
        ("  same, handler thread", &by_handler),
        ("emulator, poll", &polled),
    ] {
        println!(
            "  {name:<24} p50 {:7.2}  p90 {:7.2}  p99 {:7.2}",
            added(h, 0.5),
            added(h, 0.9),
            added(h, 0.99)
        );
    }
    println!(
        "  ratio emulator(none) / raw wake-up, added latency: p50 {:.3}, p90 {:.3}   (target <= 1.10)",
        added(&none, 0.5) / added(&raw, 0.5),
        added(&none, 0.9) / added(&raw, 0.9)
    );
    println!(
        "  the same with every interrupt through the handler thread ([emu] idle_delivery = \"handler\"): p50 {:.3}, p90 {:.3}",
        added(&by_handler, 0.5) / added(&raw, 0.5),
        added(&by_handler, 0.9) / added(&raw, 0.9)
    );
    println!(
        "  same ratio per block of {block} (p50 each, blocks back to back): median {:.3}, min {:.3}, max {:.3}",
        paired[paired.len() / 2],
        paired[0],
        paired[paired.len() - 1]
    );

    let rate = capacity(app, dev, secs);
    println!(
        "device core capacity, zero-latency device, polled, best 1/10 s window: {:.2} M completions/s   (target >= 2)",
        rate / 1e6
    );

    for name in ["sync-qd1", "async-batch"] {
        let s = match shipped_scenario(name, secs) {
            Ok(s) => s,
            Err(e) => {
                println!("{name}: {e}");
                continue;
            }
        };
        println!(
            "scenarios/{name}.toml, {} ms, on {} (emu on this machine | sim of the profiled host):",
            s.duration / MS,
            s.device.model
        );
        match cint_emu::run(&s) {
            Ok(emu) => print_comparison(&emu, sim_run(&s).as_ref()),
            Err(e) => println!("  emulator failed: {e}"),
        }
    }
}
