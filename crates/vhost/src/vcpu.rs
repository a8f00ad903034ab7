//! The guest's vCPU run state, read from the host for scheduler-aware
//! vIC (`--qmp`).
//!
//! A vCPU is a host thread of the hypervisor. QEMU's QMP command
//! `query-cpus-fast` gives the thread ids. For each queue, one sampler
//! thread reads `/proc/TID/stat` (run state) and `/proc/TID/schedstat`
//! (CPU time, times scheduled) of the vCPU that the queue's interrupt
//! targets, and feeds `Policy::on_schedule`.
//!
//! Which vCPU the interrupt targets is the guest's choice (its MSI-X
//! affinity). Linux spreads virtio-blk queue vectors over the CPUs with
//! managed affinity, so queue `q` is taken to target vCPU `q mod vCPUs`.
//!
//! CFS and EEVDF have no fixed slice. The slice end is estimated as the
//! moment the thread was seen to start a new turn on a CPU (the
//! schedstat turn count changed, or it went from not running to running)
//! plus [`SLICE_ESTIMATE`]. That is EEVDF's default base slice, and also
//! CFS's slice with a few runnable threads (`sched_latency` over their
//! number, floored at `min_granularity`).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cint_policy::{GuestSchedule, Nanos};
use serde_json::Value;

use crate::backend::BlkBackend;
use crate::sys::now;

/// Estimated length of a vCPU thread's turn on a CPU (3 ms).
pub const SLICE_ESTIMATE: Nanos = 3_000_000;
/// How often the run state is sampled.
pub const SAMPLE_PERIOD: Duration = Duration::from_millis(1);
/// How often the QMP socket is retried until QEMU has created it.
const QMP_RETRY: Duration = Duration::from_millis(200);

/// The cost of sampling, for the stats.
#[derive(Debug, Default)]
pub struct SamplingCost {
    /// vCPU samples taken (two procfs reads each).
    pub samples: AtomicU64,
    /// Nanoseconds spent taking them.
    pub total_ns: AtomicU64,
    /// The longest single sample.
    pub max_ns: AtomicU64,
}

/// One vCPU's state as last seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VcpuSample {
    /// State `R` in `/proc/TID/stat`: running or runnable.
    pub runnable: bool,
    /// Nanoseconds on a CPU so far (schedstat field 1).
    pub cpu_ns: u64,
    /// Turns on a CPU so far (schedstat field 3).
    pub turns: u64,
}

/// Parses `/proc/TID/stat` and `/proc/TID/schedstat` text.
pub fn parse_sample(stat: &str, schedstat: &str) -> Option<VcpuSample> {
    // The command name is in parentheses and may contain anything,
    // spaces and ')' included: the state follows the last ')'.
    let state = stat.rsplit_once(')')?.1.split_whitespace().next()?;
    let mut f = schedstat.split_whitespace().map(str::parse::<u64>);
    let cpu_ns = f.next()?.ok()?;
    let _wait_ns = f.next()?.ok()?;
    let turns = f.next()?.ok()?;
    Some(VcpuSample {
        runnable: state == "R",
        cpu_ns,
        turns,
    })
}

/// Turns successive samples into the schedule vic-sched wants.
#[derive(Debug, Default)]
pub struct SliceTracker {
    last: Option<VcpuSample>,
    slice_start: Option<Nanos>,
}

impl SliceTracker {
    /// The schedule after a sample taken at `now`.
    pub fn update(&mut self, now: Nanos, s: VcpuSample) -> GuestSchedule {
        // Running (not just runnable): state R and it got CPU time since
        // the previous sample.
        let running = s.runnable && self.last.is_none_or(|l| s.cpu_ns > l.cpu_ns);
        let new_turn = match self.last {
            None => running,
            Some(l) => running && (s.turns != l.turns || self.slice_start.is_none()),
        };
        if !running {
            self.slice_start = None;
        } else if new_turn {
            self.slice_start = Some(now);
        }
        self.last = Some(s);
        GuestSchedule {
            running,
            slice_end: self.slice_start.map(|t| t + SLICE_ESTIMATE),
        }
    }
}

/// Asks QEMU's QMP for the vCPU thread ids, in cpu-index order.
pub fn vcpu_threads(qmp: &Path) -> std::io::Result<Vec<u32>> {
    let stream = UnixStream::connect(qmp)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    let read_reply = |reader: &mut BufReader<UnixStream>| -> std::io::Result<Value> {
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 {
                return Err(std::io::Error::other("QMP closed the connection"));
            }
            let v: Value = serde_json::from_str(&line)
                .map_err(|e| std::io::Error::other(format!("QMP sent bad JSON: {e}")))?;
            // Asynchronous events may come in between.
            if v.get("return").is_some() || v.get("error").is_some() || v.get("QMP").is_some() {
                return Ok(v);
            }
        }
    };
    read_reply(&mut reader)?; // greeting
    writer.write_all(b"{\"execute\":\"qmp_capabilities\"}\n")?;
    read_reply(&mut reader)?;
    writer.write_all(b"{\"execute\":\"query-cpus-fast\"}\n")?;
    let reply = read_reply(&mut reader)?;
    let cpus = reply
        .get("return")
        .and_then(Value::as_array)
        .ok_or_else(|| std::io::Error::other(format!("query-cpus-fast: {reply}")))?;
    let mut out: Vec<(u64, u32)> = cpus
        .iter()
        .filter_map(|c| {
            Some((
                c.get("cpu-index")?.as_u64()?,
                u32::try_from(c.get("thread-id")?.as_u64()?).ok()?,
            ))
        })
        .collect();
    out.sort_unstable();
    Ok(out.into_iter().map(|(_, tid)| tid).collect())
}

/// The two procfs files of one vCPU thread, kept open: procfs
/// regenerates them on every read from offset 0, and not reopening them
/// halves the cost of a sample.
struct VcpuFiles {
    stat: std::fs::File,
    schedstat: std::fs::File,
    buf: Vec<u8>,
}

impl VcpuFiles {
    fn open(tid: u32) -> Option<VcpuFiles> {
        Some(VcpuFiles {
            stat: std::fs::File::open(format!("/proc/{tid}/stat")).ok()?,
            schedstat: std::fs::File::open(format!("/proc/{tid}/schedstat")).ok()?,
            buf: vec![0; 1024],
        })
    }

    /// `None` once the thread has exited.
    fn sample(&mut self) -> Option<VcpuSample> {
        use std::os::unix::fs::FileExt;
        let n = self
            .stat
            .read_at(&mut self.buf, 0)
            .ok()
            .filter(|&n| n > 0)?;
        let stat = String::from_utf8_lossy(&self.buf[..n]).into_owned();
        let n = self
            .schedstat
            .read_at(&mut self.buf, 0)
            .ok()
            .filter(|&n| n > 0)?;
        let schedstat = std::str::from_utf8(&self.buf[..n]).ok()?;
        parse_sample(&stat, schedstat)
    }
}

/// Starts the sampler thread: it waits for QEMU's QMP socket, learns the
/// vCPU threads, then samples them every [`SAMPLE_PERIOD`] and feeds each
/// queue's policy. It re-learns the threads when they disappear (a new
/// QEMU after `--reconnect`).
pub fn spawn_sampler(
    qmp: PathBuf,
    irq_vcpus: Option<Vec<usize>>,
    backend: Arc<BlkBackend>,
    cost: Arc<SamplingCost>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("cint-vhost-vcpu".into())
        .spawn(move || {
            let queues = backend.queue_count();
            loop {
                let tids = match vcpu_threads(&qmp) {
                    Ok(t) if !t.is_empty() => t,
                    _ => {
                        std::thread::sleep(QMP_RETRY);
                        continue;
                    }
                };
                let targets = queue_targets(queues, tids.len(), irq_vcpus.as_deref());
                eprintln!(
                    "cint vhost: --qmp {}: vCPU threads {tids:?}; {}",
                    qmp.display(),
                    describe_targets(&targets, irq_vcpus.is_some(), tids.len())
                );
                let mut trackers: Vec<SliceTracker> =
                    (0..queues).map(|_| SliceTracker::default()).collect();
                // A queue whose vCPU does not exist is left unsampled: its
                // policy hears of no schedule and behaves as vIC, which is
                // said above, rather than follow the wrong vCPU.
                let Some(mut files) = targets
                    .iter()
                    .map(|target| match *target {
                        Some(v) => VcpuFiles::open(tids[v]).map(Some),
                        None => Some(None),
                    })
                    .collect::<Option<Vec<Option<VcpuFiles>>>>()
                else {
                    std::thread::sleep(QMP_RETRY);
                    continue;
                };
                'sampling: loop {
                    for (q, (tracker, file)) in trackers.iter_mut().zip(&mut files).enumerate() {
                        let Some(file) = file else {
                            continue;
                        };
                        let t0 = Instant::now();
                        let sample = file.sample();
                        let took = t0.elapsed().as_nanos() as u64;
                        cost.samples.fetch_add(1, Ordering::Relaxed);
                        cost.total_ns.fetch_add(took, Ordering::Relaxed);
                        cost.max_ns.fetch_max(took, Ordering::Relaxed);
                        let Some(sample) = sample else {
                            // The thread is gone: QEMU went away.
                            break 'sampling;
                        };
                        let now = now();
                        backend.on_schedule(q, tracker.update(now, sample));
                    }
                    std::thread::sleep(SAMPLE_PERIOD);
                }
            }
        })
        .map(|_| ())
}

/// The vCPU whose thread each queue's policy watches: the operator's
/// `--irq-vcpus` when given (`None` for an index QEMU does not have),
/// else vCPU `q mod vCPUs`.
fn queue_targets(queues: usize, vcpus: usize, pinned: Option<&[usize]>) -> Vec<Option<usize>> {
    (0..queues)
        .map(|q| match pinned {
            Some(list) => list.get(q).copied().filter(|&v| v < vcpus),
            None => Some(q % vcpus),
        })
        .collect()
}

/// One line for the log: which vCPU each queue follows, and which queues
/// follow none because `--irq-vcpus` named a vCPU the guest lacks.
fn describe_targets(targets: &[Option<usize>], pinned: bool, vcpus: usize) -> String {
    if !pinned {
        return format!("queue q follows vCPU q mod {vcpus}");
    }
    let each: Vec<String> = targets
        .iter()
        .enumerate()
        .map(|(q, t)| match t {
            Some(v) => format!("queue {q} follows vCPU {v}"),
            None => format!(
                "queue {q}: --irq-vcpus names a vCPU the guest does not have ({vcpus} vCPUs), \
                 so it sees no schedule and behaves as vIC"
            ),
        })
        .collect();
    each.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_state_follows_the_last_parenthesis() {
        let s = parse_sample("42 (CPU 0/KVM) R 1 2 3", "1000 50 7\n").unwrap();
        assert_eq!(
            s,
            VcpuSample {
                runnable: true,
                cpu_ns: 1000,
                turns: 7
            }
        );
        let s = parse_sample("42 (odd) name)) S 1", "5 0 1").unwrap();
        assert!(!s.runnable);
        assert!(parse_sample("garbage", "1 2 3").is_none());
        assert!(parse_sample("1 (x) R", "1 2").is_none());
    }

    #[test]
    fn a_new_turn_starts_a_slice_and_sleeping_ends_it() {
        let mut t = SliceTracker::default();
        let run = |cpu_ns, turns| VcpuSample {
            runnable: true,
            cpu_ns,
            turns,
        };
        let g = t.update(1_000, run(10, 1));
        assert!(g.running);
        assert_eq!(g.slice_end, Some(1_000 + SLICE_ESTIMATE));
        // Same turn, more CPU time: the slice end stays.
        let g = t.update(2_000, run(20, 1));
        assert_eq!(g.slice_end, Some(1_000 + SLICE_ESTIMATE));
        // A new turn.
        let g = t.update(3_000, run(30, 2));
        assert_eq!(g.slice_end, Some(3_000 + SLICE_ESTIMATE));
        // Runnable but no CPU time since: waiting, not running.
        let g = t.update(4_000, run(30, 2));
        assert!(!g.running);
        assert_eq!(g.slice_end, None);
        let g = t.update(
            5_000,
            VcpuSample {
                runnable: false,
                cpu_ns: 30,
                turns: 2,
            },
        );
        assert!(!g.running);
    }

    #[test]
    fn queues_follow_the_pinned_vcpus_or_q_mod_vcpus() {
        assert_eq!(queue_targets(3, 2, None), [Some(0), Some(1), Some(0)]);
        assert_eq!(queue_targets(2, 2, Some(&[1, 1])), [Some(1), Some(1)]);
        // A vCPU the guest does not have: that queue follows none.
        assert_eq!(queue_targets(2, 2, Some(&[0, 2])), [Some(0), None]);
        let line = describe_targets(&[Some(0), None], true, 2);
        assert!(line.contains("queue 0 follows vCPU 0"), "{line}");
        assert!(line.contains("queue 1: --irq-vcpus names a vCPU"), "{line}");
        assert_eq!(
            describe_targets(&[Some(0)], false, 4),
            "queue q follows vCPU q mod 4"
        );
    }
}
