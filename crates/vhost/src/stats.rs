//! Per-queue counters, the service-latency histogram, and the stats
//! document (`--stats-json`, SIGUSR1, the live line).

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use hdrhistogram::Histogram;
use serde_json::{json, Value};

/// Longest service latency the histogram resolves (60 s, in ns); longer
/// ones are recorded as this.
const HIST_MAX_NS: u64 = 60_000_000_000;

/// Counters of one virtqueue.
#[derive(Clone, Debug)]
pub struct QueueStats {
    /// Requests completed (used entries written), rejected ones included.
    pub requests: u64,
    /// Bytes read from the disk into the guest.
    pub read_bytes: u64,
    /// Bytes written from the guest to the disk.
    pub write_bytes: u64,
    /// Times the policy decided to interrupt.
    pub irqs_wanted: u64,
    /// Call eventfd writes made.
    pub irqs_sent: u64,
    /// Wanted, but the driver's `used_event` (EVENT_IDX) or its
    /// `VRING_AVAIL_F_NO_INTERRUPT` flag said not to.
    pub irqs_suppressed: u64,
    /// Interrupts sent because an Urgent request completed.
    pub urgent_irqs: u64,
    /// Estimated ns this queue's worker spent in policy calls (sampled;
    /// see `cpu_share`).
    pub policy_ns: u64,
    /// CPU ns this queue's worker thread used.
    pub worker_cpu_ns: u64,
    /// Arrival (chain popped) to used entry written, in ns.
    pub service_latency: Histogram<u64>,
    /// Gauge, filled in by the worker's snapshot: requests popped from the
    /// ring and not yet given a used entry, when the document was written. With the guest idle it is 0; a
    /// guest that reports a stall with it above 0 waits on the back end's
    /// I/O.
    pub in_flight: u64,
    /// Gauge, filled in by the worker's snapshot: used entries written since
    /// the last interrupt decision, when the document was written (vIC's held completions, or completions
    /// an adaptive policy is coalescing). With the guest idle it is 0; a
    /// guest that reports a stall with it above 0 waits on an interrupt.
    pub unsignalled: u64,
}

impl Default for QueueStats {
    fn default() -> Self {
        QueueStats {
            requests: 0,
            read_bytes: 0,
            write_bytes: 0,
            irqs_wanted: 0,
            irqs_sent: 0,
            irqs_suppressed: 0,
            urgent_irqs: 0,
            policy_ns: 0,
            worker_cpu_ns: 0,
            // 3 significant digits from 1 ns to 60 s: fixed bounds, so
            // `new_with_bounds` cannot fail.
            service_latency: Histogram::new_with_bounds(1, HIST_MAX_NS, 3)
                .unwrap_or_else(|_| unreachable!("constant histogram bounds are valid")),
            in_flight: 0,
            unsignalled: 0,
        }
    }
}

impl QueueStats {
    /// Records one request's service latency.
    pub fn record_latency(&mut self, ns: u64) {
        self.service_latency
            .saturating_record(ns.clamp(1, HIST_MAX_NS));
    }

    /// Adds another queue's counters into these.
    pub fn add(&mut self, other: &QueueStats) {
        self.requests += other.requests;
        self.read_bytes += other.read_bytes;
        self.write_bytes += other.write_bytes;
        self.irqs_wanted += other.irqs_wanted;
        self.irqs_sent += other.irqs_sent;
        self.irqs_suppressed += other.irqs_suppressed;
        self.urgent_irqs += other.urgent_irqs;
        self.policy_ns += other.policy_ns;
        self.worker_cpu_ns += other.worker_cpu_ns;
        self.in_flight += other.in_flight;
        self.unsignalled += other.unsignalled;
        // Same bounds on both sides: adding cannot fail.
        let _ = self.service_latency.add(&other.service_latency);
    }

    /// The policy's time over the worker's CPU time (0 before any CPU
    /// time was measured).
    pub fn policy_cpu_share(&self) -> f64 {
        if self.worker_cpu_ns == 0 {
            0.0
        } else {
            self.policy_ns as f64 / self.worker_cpu_ns as f64
        }
    }

    fn counters_json(&self) -> serde_json::Map<String, Value> {
        let h = &self.service_latency;
        let latency = if h.is_empty() {
            json!({"min": 0, "mean": 0, "p50": 0, "p99": 0, "max": 0, "count": 0})
        } else {
            json!({
                "min": h.min(),
                "mean": h.mean().round() as u64,
                "p50": h.value_at_quantile(0.5),
                "p99": h.value_at_quantile(0.99),
                "max": h.max(),
                "count": h.len(),
            })
        };
        let mut m = serde_json::Map::new();
        m.insert("requests".into(), self.requests.into());
        m.insert("read_bytes".into(), self.read_bytes.into());
        m.insert("write_bytes".into(), self.write_bytes.into());
        m.insert("irqs_wanted".into(), self.irqs_wanted.into());
        m.insert("irqs_sent".into(), self.irqs_sent.into());
        m.insert("irqs_suppressed".into(), self.irqs_suppressed.into());
        m.insert("urgent_irqs".into(), self.urgent_irqs.into());
        m.insert("service_latency_ns".into(), latency);
        m.insert("policy_ns".into(), self.policy_ns.into());
        m.insert("worker_cpu_ns".into(), self.worker_cpu_ns.into());
        m.insert("policy_cpu_share".into(), self.policy_cpu_share().into());
        m.insert("in_flight".into(), self.in_flight.into());
        m.insert("unsignalled".into(), self.unsignalled.into());
        m
    }
}

/// The stats document of the contract.
pub fn document(strategy: &str, queues: &[QueueStats]) -> Value {
    let mut totals = QueueStats::default();
    let per_queue: Vec<Value> = queues
        .iter()
        .enumerate()
        .map(|(i, q)| {
            totals.add(q);
            let mut m = serde_json::Map::new();
            m.insert("queue".into(), i.into());
            m.extend(q.counters_json());
            Value::Object(m)
        })
        .collect();
    json!({
        "strategy": strategy,
        "queues": per_queue,
        "totals": Value::Object(totals.counters_json()),
    })
}

/// Writes `doc` to `path` atomically: a temporary file in the same
/// directory, then a rename, so a reader never sees half a document.
/// Each call has its own temporary file, so writers on different threads
/// (exit on disconnect, SIGTERM, SIGUSR1) never remove or rename each
/// other's; the last rename wins.
pub fn write_atomically(path: &Path, doc: &Value) -> std::io::Result<()> {
    let tmp = temp_path(path);
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        serde_json::to_writer_pretty(&mut f, doc)?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A counter's name, help text and value.
type Counter = (&'static str, &'static str, fn(&QueueStats) -> u64);

/// The counters in the Prometheus text exposition format, one series per
/// queue (label `queue`), for `--metrics-socket`.
pub fn prometheus(strategy: &str, queues: &[QueueStats]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let counters: [Counter; 7] = [
        (
            "requests",
            "Requests completed (used entries written).",
            |q| q.requests,
        ),
        (
            "read_bytes",
            "Bytes read from the disk into the guest.",
            |q| q.read_bytes,
        ),
        (
            "write_bytes",
            "Bytes written from the guest to the disk.",
            |q| q.write_bytes,
        ),
        ("irqs_wanted", "Interrupts the policy decided.", |q| {
            q.irqs_wanted
        }),
        ("irqs_sent", "Call eventfd writes.", |q| q.irqs_sent),
        (
            "irqs_suppressed",
            "Interrupts the driver suppressed (EVENT_IDX or NO_INTERRUPT).",
            |q| q.irqs_suppressed,
        ),
        (
            "urgent_irqs",
            "Interrupts sent because an Urgent request completed.",
            |q| q.urgent_irqs,
        ),
    ];
    let strategy = strategy.replace('\\', "\\\\").replace('"', "\\\"");
    for (name, help, get) in counters {
        let _ = writeln!(out, "# HELP cint_vhost_{name}_total {help}");
        let _ = writeln!(out, "# TYPE cint_vhost_{name}_total counter");
        for (i, q) in queues.iter().enumerate() {
            let _ = writeln!(
                out,
                "cint_vhost_{name}_total{{queue=\"{i}\",strategy=\"{strategy}\"}} {}",
                get(q)
            );
        }
    }
    let _ = writeln!(
        out,
        "# HELP cint_vhost_service_latency_ns Chain popped to used entry written."
    );
    let _ = writeln!(out, "# TYPE cint_vhost_service_latency_ns summary");
    for (i, q) in queues.iter().enumerate() {
        let h = &q.service_latency;
        for quantile in [0.5, 0.99] {
            let v = if h.is_empty() {
                0
            } else {
                h.value_at_quantile(quantile)
            };
            let _ = writeln!(
                out,
                "cint_vhost_service_latency_ns{{queue=\"{i}\",quantile=\"{quantile}\"}} {v}"
            );
        }
        let _ = writeln!(
            out,
            "cint_vhost_service_latency_ns_count{{queue=\"{i}\"}} {}",
            h.len()
        );
    }
    out
}

/// Checks before anything runs that `path` can be written the way
/// [`write_atomically`] will write it (a temporary file beside it).
pub fn check_writable(path: &Path) -> std::io::Result<()> {
    let tmp = temp_path(path);
    std::fs::File::create(&tmp)?;
    std::fs::remove_file(&tmp)
}

/// A temporary name beside `path` that no other write of this process
/// (nor of another process: the pid is in it) uses at the same time.
fn temp_path(path: &Path) -> std::path::PathBuf {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let n = WRITES.fetch_add(1, Ordering::Relaxed);
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(format!(".tmp.{}.{n}", std::process::id()));
    path.with_file_name(tmp_name)
}

/// One line of `--stats-interval`: totals and rates since the previous
/// line.
pub fn live_line(now: &QueueStats, before: &QueueStats, secs: f64) -> String {
    let reqs = now.requests - before.requests;
    let sent = now.irqs_sent - before.irqs_sent;
    let per_req = if reqs == 0 {
        0.0
    } else {
        sent as f64 / reqs as f64
    };
    format!(
        "cint vhost: {:.0} req/s, {:.1} MB/s read, {:.1} MB/s written, {:.0} irq/s ({:.3} per request), \
         wanted {} sent {} suppressed {} urgent {} (totals)",
        reqs as f64 / secs,
        (now.read_bytes - before.read_bytes) as f64 / secs / 1e6,
        (now.write_bytes - before.write_bytes) as f64 / secs / 1e6,
        sent as f64 / secs,
        per_req,
        now.irqs_wanted,
        now.irqs_sent,
        now.irqs_suppressed,
        now.urgent_irqs,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_sums_queues_into_totals() {
        let mut a = QueueStats {
            requests: 3,
            irqs_sent: 2,
            ..QueueStats::default()
        };
        a.record_latency(1000);
        let mut b = QueueStats {
            requests: 4,
            irqs_suppressed: 1,
            ..QueueStats::default()
        };
        b.record_latency(3000);
        let doc = document("none", &[a, b]);
        assert_eq!(doc["strategy"], "none");
        assert_eq!(doc["queues"][1]["queue"], 1);
        assert_eq!(doc["totals"]["requests"], 7);
        assert_eq!(doc["totals"]["irqs_sent"], 2);
        assert_eq!(doc["totals"]["irqs_suppressed"], 1);
        assert_eq!(doc["totals"]["service_latency_ns"]["count"], 2);
        assert_eq!(doc["totals"]["policy_cpu_share"], 0.0);
        assert_eq!(
            doc["queues"][0]["service_latency_ns"]["max"]
                .as_u64()
                .map(|v| v >= 999),
            Some(true)
        );
    }

    #[test]
    fn policy_share_is_summed_time_over_summed_cpu() {
        let a = QueueStats {
            policy_ns: 10,
            worker_cpu_ns: 1_000,
            ..QueueStats::default()
        };
        let b = QueueStats {
            policy_ns: 30,
            worker_cpu_ns: 3_000,
            ..QueueStats::default()
        };
        let doc = document("cinterrupts", &[a, b]);
        assert_eq!(doc["queues"][1]["policy_ns"], 30);
        assert_eq!(doc["totals"]["worker_cpu_ns"], 4_000);
        assert_eq!(doc["totals"]["policy_cpu_share"], 0.01);
    }

    #[test]
    fn prometheus_text_has_one_series_per_queue() {
        let q = QueueStats {
            irqs_sent: 5,
            ..QueueStats::default()
        };
        let text = prometheus("cinterrupts,delta=6us", &[QueueStats::default(), q]);
        assert!(text.contains(
            "cint_vhost_irqs_sent_total{queue=\"1\",strategy=\"cinterrupts,delta=6us\"} 5\n"
        ));
        assert!(text.contains("# TYPE cint_vhost_requests_total counter\n"));
        assert!(text.contains("cint_vhost_service_latency_ns_count{queue=\"0\"} 0\n"));
    }

    #[test]
    fn written_atomically_and_readable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        write_atomically(&path, &document("vic", &[QueueStats::default()])).unwrap();
        let back: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(back["strategy"], "vic");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp file left"
        );
    }

    /// The exit-on-disconnect writer and the SIGTERM/SIGUSR1 writer run on
    /// different threads; with one shared temporary name, one removed or
    /// renamed the other's file ("No such file").
    #[test]
    fn concurrent_writers_all_succeed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let doc = document("none", &[QueueStats::default()]);
        std::thread::scope(|s| {
            let writers: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        (0..50)
                            .map(|_| write_atomically(&path, &doc))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            for w in writers {
                for r in w.join().unwrap() {
                    assert!(r.is_ok(), "a concurrent write failed: {r:?}");
                }
            }
        });
        let back: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(back["strategy"], "none");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
