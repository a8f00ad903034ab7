//! fio's `max_latency`: a thread ends with `ETIMEDOUT` at the first
//! completion, counted after the job's ramp, whose total latency (from the
//! request's preparation to its completion in hand, fio's `lat`) is above
//! its direction's bound (fio 3.33 io_u.c `account_io_completion`, then
//! `lat_fatal`; `do_io` breaks on the error, waits for what is in flight
//! and makes no final fsync). fio measures no `lat` under `gtod_reduce`,
//! so the bound needs its measurement. Both engines end their threads by
//! these rules.

use cint_policy::Nanos;

use crate::error::ScenarioError;
use crate::section::Section;
use crate::units::{format_duration, parse_duration};

/// Each direction's bound on a request's total latency (`None`: none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaxLatency {
    /// The reads' bound.
    pub read: Option<Nanos>,
    /// The writes' bound.
    pub write: Option<Nanos>,
}

impl MaxLatency {
    /// A completion of direction `write` and total latency `lat`, in hand
    /// at `at`, if it goes past its direction's bound.
    ///
    /// ```
    /// use cint_scenario::max_latency::MaxLatency;
    /// let reads_only = MaxLatency { read: Some(100_000), write: None };
    /// let past = reads_only.check(false, 100_001, 7).expect("past the bound");
    /// assert_eq!((past.bound, past.latency, past.at), (100_000, 100_001, 7));
    /// assert_eq!(reads_only.check(false, 100_000, 7), None);
    /// assert_eq!(reads_only.check(true, 5_000_000, 7), None);
    /// assert_eq!(reads_only.to_string(), "100us,");
    /// ```
    pub fn check(&self, write: bool, lat: Nanos, at: Nanos) -> Option<Exceeded> {
        let bound = if write { self.write } else { self.read };
        bound.filter(|&b| lat > b).map(|bound| Exceeded {
            write,
            latency: lat,
            bound,
            at,
        })
    }
}

/// As the key and fio write it: one duration for both directions, else
/// `READS,WRITES` with a side empty for none.
impl core::fmt::Display for MaxLatency {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let side = |b: Option<Nanos>| b.map(format_duration).unwrap_or_default();
        if self.read == self.write {
            f.write_str(&side(self.read))
        } else {
            write!(f, "{},{}", side(self.read), side(self.write))
        }
    }
}

/// A completion that went past its bound, where its thread ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exceeded {
    /// A write (else a read).
    pub write: bool,
    /// Its total latency.
    pub latency: Nanos,
    /// The bound it went past.
    pub bound: Nanos,
    /// When it completed, from the run's start.
    pub at: Nanos,
}

impl Exceeded {
    /// The result's note for it, under `strategy`, for job `job`.
    pub fn note(&self, strategy: &str, job: &str) -> String {
        let dir = if self.write { "write" } else { "read" };
        format!(
            "strategy '{strategy}': job '{job}': a thread's {dir} took {} at {:.3} ms, past \
             max_latency={}: fio ends such a thread with an error (ETIMEDOUT), and the job's \
             figures stop there",
            format_duration(self.latency),
            self.at as f64 / 1e6,
            format_duration(self.bound)
        )
    }
}

/// The job's `max_latency`: a duration for every direction, or
/// `"READS,WRITES"`, either side empty for none, as fio writes it.
pub(crate) fn parse(sec: &mut Section<'_>) -> Result<Option<MaxLatency>, ScenarioError> {
    const KEY: &str = "max_latency";
    let Some(text) = sec.string(KEY)? else {
        return Ok(None);
    };
    let one = |part: &str| -> Result<Option<Nanos>, String> {
        let part = part.trim();
        if part.is_empty() {
            return Ok(None);
        }
        let ns = parse_duration(part).map_err(|e| e.to_string())?;
        if ns == 0 || ns > 3_600_000_000_000 {
            return Err(format!(
                "each bound must be above zero and at most 3600s (got {part})"
            ));
        }
        Ok(Some(ns))
    };
    let bounds = match text.split_once(',') {
        Some((read, write)) => one(read).and_then(|r| Ok((r, one(write)?))),
        None => one(&text).map(|b| (b, b)),
    };
    match bounds {
        Ok((None, None)) => Err(sec.error(KEY, "gives no bound (\"READS,WRITES\", one at least)")),
        Ok((read, write)) => Ok(Some(MaxLatency { read, write })),
        Err(e) => Err(sec.error(KEY, e)),
    }
}
