//! The host's page cache and writeback settings (`[host.page_cache]`):
//! the Linux 5.0 defaults of the dirty-memory sysctls and the CPU costs
//! of the buffered paths. docs/HOST-COSTS.md argues each figure.

use serde::{Deserialize, Serialize};

use crate::error::ScenarioError;
use crate::tree::Node;
use crate::units::{Duration, Size};

/// Page cache, writeback and buffered-I/O costs of a host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PageCacheProfile {
    /// Dirtyable memory (Linux's `global_dirtyable_memory`: free and
    /// file-backed pages); the dirty thresholds are fractions of it.
    pub memory: Size,
    /// `vm.dirty_background_ratio`: percent of `memory` dirty past which
    /// the flusher writes back in the background.
    pub background_ratio: u8,
    /// `vm.dirty_ratio`: percent of `memory` dirty or under writeback
    /// past which writers are throttled.
    pub dirty_ratio: u8,
    /// `vm.dirty_writeback_centisecs`: the flusher's periodic wake-up.
    pub writeback_interval: Duration,
    /// `vm.dirty_expire_centisecs`: a file dirty this long is written
    /// back at the next periodic wake-up.
    pub expire: Duration,
    /// Largest writeback request: contiguous dirty pages merge up to it.
    pub max_writeback_request: Size,
    /// Largest read-ahead window (`read_ahead_kb`).
    pub read_ahead: Size,
    /// A buffered `write()` or `read()`, per call, beyond the system
    /// call: the file system's entry, inode lock and time update.
    pub buffered_call: Duration,
    /// Per page a buffered call touches: the page cache lookup or
    /// allocation (and, writing, marking it dirty).
    pub page_lookup: Duration,
    /// Per 4 KiB a buffered call copies between user space and the
    /// cache, prorated by the bytes it copies.
    pub page_copy: Duration,
    /// The flusher, per page it writes back: finding it in the dirty
    /// tree, clearing its dirty bit, adding it to the bio.
    pub writeback_page: Duration,
    /// The core the flusher kworker runs on.
    pub flusher_cpu: u32,
}

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

impl Default for PageCacheProfile {
    /// Linux 5.0's defaults (mm/page-writeback.c, mm/backing-dev.c) and
    /// the reference host's cost estimates (docs/HOST-COSTS.md).
    fn default() -> Self {
        PageCacheProfile {
            memory: Size(64 << 30),
            background_ratio: 10,
            dirty_ratio: 20,
            writeback_interval: Duration(5_000 * MS),
            expire: Duration(30_000 * MS),
            max_writeback_request: Size(128 << 10),
            read_ahead: Size(128 << 10),
            buffered_call: Duration(US),
            page_lookup: Duration(300),
            page_copy: Duration(400),
            writeback_page: Duration(250),
            flusher_cpu: 0,
        }
    }
}

impl PageCacheProfile {
    /// The defaults with the costs scaled by `factor` (a faster clock).
    pub fn scaled_costs(factor: f64) -> Self {
        let d = PageCacheProfile::default();
        let s = |x: Duration| Duration((x.0 as f64 * factor).round() as u64);
        PageCacheProfile {
            buffered_call: s(d.buffered_call),
            page_lookup: s(d.page_lookup),
            page_copy: s(d.page_copy),
            writeback_page: s(d.writeback_page),
            ..d
        }
    }
}

/// Refuses settings the writeback model cannot run, naming the key.
pub(crate) fn check(
    source: &str,
    node: Option<&Node>,
    p: &PageCacheProfile,
    cores: u32,
) -> Result<(), ScenarioError> {
    let bad = |key: &str, message: String| {
        Err(ScenarioError {
            source: source.to_string(),
            origin: crate::load::nested_origin(node, &["page_cache", key]),
            key: format!("host.page_cache.{key}"),
            message,
        })
    };
    if p.memory.0 < 4096 * 100 {
        return bad(
            "memory",
            format!(
                "must be at least 400 KiB (100 pages; got {} bytes)",
                p.memory.0
            ),
        );
    }
    if p.dirty_ratio == 0 || p.dirty_ratio > 100 {
        return bad(
            "dirty_ratio",
            format!("must be from 1 to 100 percent (got {})", p.dirty_ratio),
        );
    }
    if p.background_ratio >= p.dirty_ratio {
        return bad(
            "background_ratio",
            format!(
                "must be below dirty_ratio {} (got {})",
                p.dirty_ratio, p.background_ratio
            ),
        );
    }
    for (key, d) in [
        ("writeback_interval", p.writeback_interval),
        ("expire", p.expire),
    ] {
        if d.0 == 0 {
            return bad(key, "must be longer than zero".into());
        }
    }
    for (key, d) in [
        ("writeback_interval", p.writeback_interval),
        ("expire", p.expire),
        ("buffered_call", p.buffered_call),
        ("page_lookup", p.page_lookup),
        ("page_copy", p.page_copy),
        ("writeback_page", p.writeback_page),
    ] {
        if let Some(why) = crate::past_an_hour(d.0) {
            return bad(key, why);
        }
    }
    for (key, s) in [
        ("max_writeback_request", p.max_writeback_request),
        ("read_ahead", p.read_ahead),
    ] {
        if s.0 < 4096 || s.0 % 4096 != 0 {
            return bad(
                key,
                format!("must be a positive multiple of 4 KiB (got {} bytes)", s.0),
            );
        }
    }
    if p.flusher_cpu >= cores {
        return bad(
            "flusher_cpu",
            format!("core {} is beyond the host's {cores} cores", p.flusher_cpu),
        );
    }
    Ok(())
}
