//! The guest program's console lines (`CINT key=value ...`, see
//! `guest/cint-guest.c`), gathered per disk.

use crate::error::{Error, Result};
use std::collections::BTreeMap;

/// The `key=value` pairs of one `CINT` line (values may be quoted).
pub fn fields(line: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = line.trim_start();
    while let Some(eq) = rest.find('=') {
        let key = rest[..eq].trim();
        let after = &rest[eq + 1..];
        let (value, tail) = match after.strip_prefix('"') {
            Some(quoted) => {
                let end = quoted.find('"').unwrap_or(quoted.len());
                (&quoted[..end], quoted.get(end + 1..).unwrap_or(""))
            }
            None => {
                let end = after.find(' ').unwrap_or(after.len());
                (&after[..end], &after[end..])
            }
        };
        out.insert(key.to_string(), value.to_string());
        rest = tail.trim_start();
    }
    out
}

/// What the integrity phase reported for one disk.
#[derive(Debug, Clone, Default)]
pub struct Integrity {
    /// The guest found no error and no mismatch.
    pub ok: bool,
    /// Bytes written and read back.
    pub bytes: u64,
    /// Bytes that differed from the pattern in the guest.
    pub mismatches: u64,
    /// FNV-1a of the O_DIRECT-written half as read back.
    pub direct_sum: u64,
    /// FNV-1a of the buffered-written half as read back.
    pub buffered_sum: u64,
    /// Interrupts during the phase.
    pub irqs: u64,
    /// Requests completed during the phase.
    pub requests: u64,
}

/// What the mixed (RT reader beside batch) phase reported for one disk.
#[derive(Debug, Clone, Default)]
pub struct Mixed {
    /// The guest found no error.
    pub ok: bool,
    /// RT-tagged reads completed.
    pub reader_ops: u64,
    /// Batch reads completed.
    pub batch_ops: u64,
    /// Interrupts during the phase.
    pub irqs: u64,
    /// Requests completed during the phase.
    pub requests: u64,
    /// The RT reads' median latency in the guest, microseconds.
    pub reader_p50_us: u64,
    /// Their 90th percentile.
    pub reader_p90_us: u64,
    /// Their mean.
    pub reader_mean_us: u64,
    /// RT reads that took less than `within_us`.
    pub reader_within: u64,
    /// The bound of `reader_within`, microseconds.
    pub within_us: u64,
}

/// What the queues phase reported for one hardware queue of a disk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueReport {
    /// The queue's index (its vector is `virtioN-req.<queue>`).
    pub queue: u64,
    /// The CPU its threads were pinned to.
    pub cpu: u64,
    /// Requests those threads issued (each goes to this queue alone).
    pub requests: u64,
    /// Bytes they wrote.
    pub bytes: u64,
    /// Interrupts on this queue's vector during the phase.
    pub irqs: u64,
}

/// What the queues phase (all hardware queues of a disk at once)
/// reported.
#[derive(Debug, Clone, Default)]
pub struct Queues {
    /// The guest found no error and no mismatch.
    pub ok: bool,
    /// First byte of the phase's region.
    pub start: u64,
    /// Bytes written and read back, from `start` on.
    pub bytes: u64,
    /// Bytes read back that differed from the pattern.
    pub mismatches: u64,
    /// Per queue, in queue order.
    pub per_queue: Vec<QueueReport>,
}

/// Everything the guest reported about one disk.
#[derive(Debug, Clone, Default)]
pub struct GuestDisk {
    /// PCI address, e.g. `0000:00:10.0`.
    pub pci: String,
    /// Its seed.
    pub seed: u64,
    /// Integrity phase.
    pub integrity: Option<Integrity>,
    /// Mixed phase.
    pub mixed: Option<Mixed>,
    /// Hardware queues the guest's blk-mq uses for the disk.
    pub queues: Option<u64>,
    /// Queues phase (disks with more than one queue only).
    pub queue_phase: Option<Queues>,
    /// Interrupts on each queue's vector since boot, read at the end.
    pub queue_irqs: Vec<u64>,
    /// The CPU each queue's vector interrupts (its effective affinity),
    /// `None` where the guest could not read it.
    pub queue_irq_cpus: Vec<Option<u64>>,
    /// Interrupts on the disk's queue vectors since boot, read at the end.
    pub total_irqs: Option<u64>,
    /// Requests completed since boot.
    pub total_requests: Option<u64>,
    /// Errors the guest printed for this disk.
    pub errors: Vec<String>,
}

/// The whole console, parsed.
#[derive(Debug, Clone, Default)]
pub struct GuestReport {
    /// Per disk, keyed by PCI address.
    pub disks: BTreeMap<String, GuestDisk>,
    /// The guest program ran to its end.
    pub done: bool,
    /// Errors not tied to a disk.
    pub errors: Vec<String>,
}

fn num(f: &BTreeMap<String, String>, key: &str, line: &str) -> Result<u64> {
    f.get(key)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| Error::Failed(format!("guest line lacks a number {key}: {line}")))
}

fn hex(f: &BTreeMap<String, String>, key: &str, line: &str) -> Result<u64> {
    f.get(key)
        .and_then(|v| u64::from_str_radix(v, 16).ok())
        .ok_or_else(|| Error::Failed(format!("guest line lacks a hex {key}: {line}")))
}

/// Parses the console text.
pub fn parse(console: &str) -> Result<GuestReport> {
    let mut report = GuestReport::default();
    for raw in console.lines() {
        let Some(at) = raw.find("CINT ") else {
            continue;
        };
        let line = raw[at + 5..].trim_end_matches('\r');
        if line.trim() == "done" {
            report.done = true;
            continue;
        }
        let f = fields(line);
        let Some(pci) = f.get("disk").cloned() else {
            if let Some(e) = f.get("error") {
                report.errors.push(e.clone());
            }
            continue;
        };
        let disk = report
            .disks
            .entry(pci.clone())
            .or_insert_with(|| GuestDisk {
                pci,
                ..GuestDisk::default()
            });
        if let Some(e) = f.get("error") {
            disk.errors.push(e.clone());
            continue;
        }
        if let Some(seed) = f.get("seed").and_then(|s| s.parse().ok()) {
            disk.seed = seed;
            disk.queues = Some(num(&f, "queues", line)?);
        }
        match f.get("phase").map(String::as_str) {
            Some("integrity") => {
                disk.integrity = Some(Integrity {
                    ok: f.get("ok").map(String::as_str) == Some("1"),
                    bytes: num(&f, "bytes", line)?,
                    mismatches: num(&f, "mismatches", line)?,
                    direct_sum: hex(&f, "direct_sum", line)?,
                    buffered_sum: hex(&f, "buffered_sum", line)?,
                    irqs: num(&f, "irqs", line)?,
                    requests: num(&f, "requests", line)?,
                })
            }
            Some("mixed") => {
                disk.mixed = Some(Mixed {
                    ok: f.get("ok").map(String::as_str) == Some("1"),
                    reader_ops: num(&f, "reader_ops", line)?,
                    batch_ops: num(&f, "batch_ops", line)?,
                    irqs: num(&f, "irqs", line)?,
                    requests: num(&f, "requests", line)?,
                    reader_p50_us: num(&f, "reader_p50_us", line)?,
                    reader_p90_us: num(&f, "reader_p90_us", line)?,
                    reader_mean_us: num(&f, "reader_mean_us", line)?,
                    reader_within: num(&f, "reader_within", line)?,
                    within_us: num(&f, "within_us", line)?,
                })
            }
            Some("queue") => {
                let report = QueueReport {
                    queue: num(&f, "queue", line)?,
                    cpu: num(&f, "cpu", line)?,
                    requests: num(&f, "requests", line)?,
                    bytes: num(&f, "bytes", line)?,
                    irqs: num(&f, "irqs", line)?,
                };
                // The per-queue lines come first; the summary line fills
                // in the rest.
                disk.queue_phase
                    .get_or_insert_with(Queues::default)
                    .per_queue
                    .push(report);
            }
            Some("queues") => {
                let phase = disk.queue_phase.get_or_insert_with(Queues::default);
                phase.ok = f.get("ok").map(String::as_str) == Some("1");
                phase.start = num(&f, "start", line)?;
                phase.bytes = num(&f, "bytes", line)?;
                phase.mismatches = num(&f, "mismatches", line)?;
                if phase.per_queue.len() as u64 != num(&f, "queues", line)? {
                    return Err(Error::Failed(format!(
                        "guest reported {} queue lines before: {line}",
                        phase.per_queue.len()
                    )));
                }
            }
            Some("end") => {
                disk.total_irqs = Some(num(&f, "irqs", line)?);
                disk.total_requests = Some(num(&f, "requests", line)?);
                let list = f.get("queue_irqs").map(String::as_str).unwrap_or("");
                disk.queue_irqs = list
                    .split(',')
                    .filter(|v| !v.is_empty())
                    .map(|v| {
                        v.parse().map_err(|_| {
                            Error::Failed(format!("guest line has a bad queue_irqs: {line}"))
                        })
                    })
                    .collect::<Result<_>>()?;
                let cpus = f.get("queue_irq_cpus").map(String::as_str).unwrap_or("");
                disk.queue_irq_cpus = cpus
                    .split(',')
                    .filter(|v| !v.is_empty())
                    .map(|v| match v {
                        "-1" => Ok(None),
                        v => v.parse().map(Some).map_err(|_| {
                            Error::Failed(format!("guest line has a bad queue_irq_cpus: {line}"))
                        }),
                    })
                    .collect::<Result<_>>()?;
            }
            _ => {}
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_lines_are_gathered_per_disk() {
        let console = "[    1.0] random kernel line\r\n\
            CINT booted kernel=6.1\n\
            CINT disk=0000:00:10.0 name=vda virtio=virtio1 seed=17 queues=2\n\
            CINT disk=0000:00:10.0 phase=integrity ok=1 bytes=8 mismatches=0 direct_sum=00ff \
            buffered_sum=0a irqs=5 requests=9 ms=3\n\
            CINT disk=0000:00:10.0 phase=mixed ok=1 reader_ops=200 batch_ops=900 irqs=210 \
            requests=1100 reader_p50_us=80 reader_p90_us=120 reader_mean_us=90 reader_within=190 \
            within_us=2000\n\
            CINT disk=0000:00:11.0 error=\"RT pread: Input/output error\"\n\
            CINT disk=0000:00:10.0 phase=queue queue=0 cpu=0 requests=256 bytes=524288 irqs=40\n\
            CINT disk=0000:00:10.0 phase=queue queue=1 cpu=1 requests=256 bytes=524288 irqs=42\n\
            CINT disk=0000:00:10.0 phase=queues ok=1 queues=2 start=8388608 bytes=1048576 \
            mismatches=0\n\
            CINT disk=0000:00:10.0 phase=end irqs=300 config_irqs=0 requests=1200 \
            queue_irqs=170,130 queue_irq_cpus=0,-1\n\
            CINT done\r\n";
        let r = parse(console).unwrap();
        assert!(r.done);
        let d = &r.disks["0000:00:10.0"];
        assert_eq!(d.seed, 17);
        let i = d.integrity.as_ref().unwrap();
        assert!(i.ok);
        assert_eq!((i.direct_sum, i.buffered_sum, i.irqs), (0xff, 0x0a, 5));
        let m = d.mixed.as_ref().unwrap();
        assert_eq!((m.reader_ops, m.batch_ops, m.reader_p50_us), (200, 900, 80));
        assert_eq!((m.reader_within, m.within_us), (190, 2000));
        assert_eq!((d.total_irqs, d.total_requests), (Some(300), Some(1200)));
        assert_eq!(d.queues, Some(2));
        assert_eq!(d.queue_irqs, vec![170, 130]);
        assert_eq!(d.queue_irq_cpus, vec![Some(0), None]);
        let q = d.queue_phase.as_ref().unwrap();
        assert!(q.ok);
        assert_eq!((q.start, q.bytes, q.mismatches), (8 << 20, 1 << 20, 0));
        assert_eq!(q.per_queue.len(), 2);
        assert_eq!(
            q.per_queue[1],
            QueueReport {
                queue: 1,
                cpu: 1,
                requests: 256,
                bytes: 524288,
                irqs: 42
            }
        );
        assert_eq!(
            r.disks["0000:00:11.0"].errors,
            vec!["RT pread: Input/output error"]
        );
    }

    #[test]
    fn a_truncated_line_is_an_error_not_a_zero() {
        assert!(parse("CINT disk=a phase=mixed ok=1 reader_ops=3\n").is_err());
        assert!(parse("CINT disk=a phase=end irqs=3 requests=4 queue_irqs=1,x\n").is_err());
        // A summary that does not match the per-queue lines before it.
        assert!(parse(
            "CINT disk=a phase=queue queue=0 cpu=0 requests=1 bytes=1 irqs=1\n\
             CINT disk=a phase=queues ok=1 queues=2 start=0 bytes=2 mismatches=0\n"
        )
        .is_err());
    }
}
