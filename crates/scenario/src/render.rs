//! The resolved scenario written back as scenario TOML (`cint check`):
//! every default filled in, every profile field spelled out. Loading the
//! text again gives the same scenario.

use cint_policy::config::{BarrierMode, VicParams};
use cint_policy::{Hint, PolicyConfig};
use toml_edit::{value, Array, ArrayOfTables, DocumentMut, Item, Table};

use crate::model::{CompletionMode, Engine, ExitScope, HybridSleep, IoShape, Rw, Scenario, Work};
use crate::units::{format_duration, format_size};

/// `s` as a TOML string value, quoted and escaped as TOML wants it, for
/// front ends that write scenario text of their own.
///
/// ```
/// assert_eq!(cint_scenario::toml_string("a\"b"), "'a\"b'");
/// ```
pub fn toml_string(s: &str) -> String {
    toml_edit::Value::from(s).to_string()
}

/// The scenario as TOML text, with resolved profiles and defaults.
pub fn to_toml(s: &Scenario) -> String {
    let mut doc = DocumentMut::new();
    doc["name"] = value(s.name.as_str());
    // TOML integers stop at 2^63-1; a larger seed is written as a string,
    // which the loader takes back.
    doc["seed"] = match i64::try_from(s.seed) {
        Ok(seed) => value(seed),
        Err(_) => value(s.seed.to_string()),
    };
    doc["duration"] = value(format_duration(s.duration));
    doc["warmup"] = value(format_duration(s.warmup));
    if s.run_to_end {
        doc["run_to_end"] = value(true);
    }
    doc["device"] = struct_table(&s.device);
    doc["host"] = struct_table(&s.host);
    crate::virt::render(&s.virt, &mut doc);

    let mut strategies = ArrayOfTables::new();
    for (i, st) in s.strategies.iter().enumerate() {
        let mut t = Table::new();
        t["name"] = value(st.name.as_str());
        t["kind"] = value(st.kind());
        if s.apps.app_cint.get(i) == Some(&true) {
            t["app_hints"] = value("app-cint");
        }
        match &st.mode {
            CompletionMode::Interrupt(cfg) => policy_keys(&mut t, cfg),
            CompletionMode::Poll | CompletionMode::ModeSelect => {
                t["interrupts"] = value(st.interrupts.kind());
            }
            CompletionMode::HybridPoll(sleep) => {
                t["sleep"] = value(match sleep {
                    HybridSleep::Adaptive => "adaptive".to_string(),
                    HybridSleep::Min => "min".to_string(),
                    HybridSleep::Fixed(ns) => format_duration(*ns),
                });
                t["interrupts"] = value(st.interrupts.kind());
            }
        }
        strategies.push(t);
    }
    doc["strategy"] = Item::ArrayOfTables(strategies);

    let mut jobs = ArrayOfTables::new();
    for job in &s.jobs {
        let mut t = Table::new();
        t["name"] = value(job.name.as_str());
        if let Some(g) = job.guest.and_then(|g| s.virt.guests.get(g as usize)) {
            t["guest"] = value(g.name.as_str());
        }
        match &job.work {
            Work::Cpu => t["kind"] = value("cpu"),
            Work::Io(io) => {
                t["kind"] = value("io");
                t["engine"] = value(match io.engine {
                    Engine::Psync => "psync",
                    Engine::Pvsync2 => "pvsync2",
                    Engine::Libaio => "libaio",
                    Engine::IoUring => "io_uring",
                });
                t["rw"] = value(match io.rw {
                    Rw::Read => "read",
                    Rw::Write => "write",
                    Rw::RandRead => "randread",
                    Rw::RandWrite => "randwrite",
                    Rw::RandRw => "randrw",
                    Rw::ReadWrite => "readwrite",
                });
                t["bs"] = value(format_size(io.bs));
                t["iodepth"] = value(i64::from(io.iodepth));
                t["batch"] = value(i64::from(io.batch));
                t["batch_complete_min"] = value(i64::from(io.batch_complete_min));
                t["batch_complete_max"] = value(i64::from(io.batch_complete_max));
                if io.iodepth_low < io.iodepth {
                    t["iodepth_low"] = value(i64::from(io.iodepth_low));
                }
                if let Some(h) = io.hint {
                    t["hint"] = value(match h {
                        Hint::Urgent => "urgent",
                        Hint::Barrier => "barrier",
                        Hint::Unmarked => "none",
                    });
                }
                if io.engine == Engine::Pvsync2 {
                    t["nowait"] = value(io.nowait);
                }
                if io.hipri {
                    t["hipri"] = value(true);
                }
                t["direct"] = value(io.direct);
                if !io.fadvise_hint {
                    t["fadvise_hint"] = value(false);
                }
                if io.offload {
                    t["submit_mode"] = value("offload");
                }
                if let Some(sq) = io.sqpoll {
                    t["sqpoll"] = value(true);
                    if let Some(c) = sq.cpu {
                        t["sqpoll_cpu"] = value(i64::from(c));
                    }
                }
                if io.gtod_reduce {
                    t["gtod_reduce"] = value(true);
                }
                if let Some(r) = io.rate_iops {
                    t["rate_iops"] = value(i64::try_from(r).unwrap_or(i64::MAX));
                }
                t["think"] = value(format_duration(io.think));
                t["size"] = value(format_size(io.size));
                if io.rw.is_mixed() {
                    t["rwmixread"] = value(i64::from(io.rwmixread));
                }
                shape_keys(&mut t, &io.shape);
            }
        }
        if job.cpus.is_empty() {
            t["cpu"] = value(i64::from(job.cpu));
        } else {
            t["cpus"] = value(Array::from_iter(job.cpus.iter().map(|&c| i64::from(c))));
        }
        t["numjobs"] = value(i64::from(job.numjobs));
        if let Some(r) = job.runtime {
            t["runtime"] = value(format_duration(r));
        }
        if job.schedule.group > 0 {
            t["group"] = value(i64::from(job.schedule.group));
        }
        if job.schedule.startdelay > 0 {
            t["startdelay"] = value(format_duration(job.schedule.startdelay));
        }
        if let Work::Io(io) = &job.work {
            if let Some(trace) = &io.shape.trace {
                crate::trace::render_keys(&mut t, trace);
            }
        }
        jobs.push(t);
    }
    if !s.jobs.is_empty() {
        doc["job"] = Item::ArrayOfTables(jobs);
    }
    crate::app::render(&mut doc, &s.apps);
    crate::sched_group::render(&mut doc, &s.sched_groups);

    let emu = struct_table(&s.emu);
    if emu.as_table().is_some_and(|t| !t.is_empty()) {
        doc["emu"] = emu;
    }
    doc.to_string()
}

/// A rate key per direction and its `"READS,WRITES"` text: `iops_key`
/// or `bytes_key` by what the caps count.
fn direction_caps(
    caps: &crate::model::DirectionRates,
    iops_key: &'static str,
    bytes_key: &'static str,
) -> (&'static str, String) {
    let (key, side): (&str, fn(u64) -> String) = match caps.unit {
        crate::model::RateUnit::Iops => (iops_key, |c| c.to_string()),
        crate::model::RateUnit::Bytes => (bytes_key, format_size),
    };
    let side = |c: Option<u64>| c.map(side).unwrap_or_default();
    (key, format!("{},{}", side(caps.read), side(caps.write)))
}

/// The request-shaping keys that differ from their defaults.
fn shape_keys(t: &mut Table, shape: &IoShape) {
    if !shape.bssplit.is_empty() {
        let mut text = crate::shape::format_bssplit(&shape.bssplit);
        if !shape.bssplit_write.is_empty() {
            text = format!(
                "{text},{}",
                crate::shape::format_bssplit(&shape.bssplit_write)
            );
        }
        t["bssplit"] = value(text);
    }
    if let Some((lo, hi)) = shape.bsrange {
        let range = |(lo, hi): (u64, u64)| format!("{}-{}", format_size(lo), format_size(hi));
        t["bsrange"] = value(match shape.bsrange_write {
            Some(w) => format!("{},{}", range((lo, hi)), range(w)),
            None => range((lo, hi)),
        });
    }
    if let Some(r) = shape.rate {
        t["rate"] = value(format_size(r));
    }
    if let Some(caps) = shape.rate_per_direction {
        let (key, text) = direction_caps(&caps, "rate_iops", "rate");
        t[key] = value(text);
    }
    if let Some(min) = shape.rate_min {
        let (key, text) = direction_caps(&min.floor, "rate_iops_min", "ratemin");
        // One floor for both directions is written as one value, which a
        // job of one direction takes too.
        match (min.floor.read, min.floor.read == min.floor.write) {
            (Some(c), true) if key == "rate_iops_min" => {
                t[key] = value(i64::try_from(c).unwrap_or(i64::MAX))
            }
            (Some(c), true) => t[key] = value(format_size(c)),
            _ => t[key] = value(text),
        }
        t["ratecycle"] = value(format_duration(min.cycle));
    }
    if let Some((key, v)) = crate::shape::random_map_keys(shape.random_map) {
        t[key] = value(v);
    }
    if shape.random_distribution != crate::model::Distribution::Uniform {
        t["random_distribution"] = value(crate::distribution::format_distribution(
            &shape.random_distribution,
        ));
    }
    if shape.rate_poisson {
        t["rate_process"] = value("poisson");
    }
    if shape.barrier_last {
        t["barrier_last"] = value(true);
    }
    if shape.thinktime > 0 {
        t["thinktime"] = value(format_duration(shape.thinktime));
        t["thinktime_spin"] = value(format_duration(shape.thinktime_spin));
        t["thinktime_blocks"] = value(i64::from(shape.thinktime_blocks));
        if shape.thinktime_issue {
            t["thinktime_blocks_type"] = value("issue");
        }
        if shape.thinktime_iotime > 0 {
            t["thinktime_iotime"] = value(format_duration(shape.thinktime_iotime));
        }
        if shape.rate_ign_think {
            t["rate_ign_think"] = value(true);
        }
    }
    if let Some(n) = shape.number_ios {
        t["number_ios"] = value(i64::try_from(n).unwrap_or(i64::MAX));
    }
    if let Some(b) = shape.io_size {
        t["io_size"] = value(format_size(b));
    }
    if let Some(b) = shape.pass_size {
        t["pass_size"] = value(format_size(b));
    }
    if let Some(b) = shape.byte_limit {
        t["byte_limit"] = value(format_size(b));
    }
    if shape.fsync > 0 {
        t["fsync"] = value(i64::from(shape.fsync));
    }
    if shape.fdatasync > 0 {
        t["fdatasync"] = value(i64::from(shape.fdatasync));
    }
    match shape.sync_writes {
        crate::SyncWrites::None => {}
        crate::SyncWrites::Sync => t["sync"] = value("sync"),
        crate::SyncWrites::Dsync => t["sync"] = value("dsync"),
    }
    if shape.end_fsync {
        t["end_fsync"] = value(true);
    }
    if shape.flow > 0 {
        t["flow"] = value(i64::from(shape.flow));
        t["flow_id"] = value(i64::from(shape.flow_id));
        t["flow_sleep"] = value(format_duration(shape.flow_sleep));
    }
    if let Some(scope) = shape.exitall {
        t["exitall"] = value(match scope {
            ExitScope::Group => "group",
            ExitScope::All => "all",
        });
    }
    if let Some(ss) = &shape.steady {
        t["ss"] = value(crate::shape::format_steady(ss));
        t["ss_dur"] = value(format_duration(ss.dur));
        t["ss_ramp"] = value(format_duration(ss.ramp));
    }
    if let Some(lt) = &shape.latency_target {
        t["latency_target"] = value(format_duration(lt.target));
        t["latency_window"] = value(format_duration(lt.window));
        t["latency_percentile"] = value(lt.percentile);
    }
    if let Some(m) = &shape.max_latency {
        t["max_latency"] = value(m.to_string());
    }
    if !shape.percentile_list.is_empty() {
        t["percentile_list"] = value(crate::shape::format_percentile_list(&shape.percentile_list));
    }
}

/// A serde struct as a `[table]` (nested structs become sub-tables).
pub(crate) fn struct_table<T: serde::Serialize>(v: &T) -> Item {
    match toml_edit::ser::to_document(v) {
        Ok(d) => Item::Table(d.as_table().clone()),
        Err(_) => Item::Table(Table::new()),
    }
}

fn policy_keys(t: &mut Table, cfg: &PolicyConfig) {
    match cfg {
        PolicyConfig::None => {}
        PolicyConfig::Nvme(p) => {
            t["thr"] = value(i64::from(p.thr));
            t["time"] = value(format_duration(p.time));
            t["coalescing_disabled"] = value(p.coalescing_disabled);
        }
        PolicyConfig::Adaptive(p) => {
            t["delta"] = value(format_duration(p.delta));
            t["thr"] = value(i64::from(p.thr));
        }
        PolicyConfig::Cinterrupts(p) => {
            t["delta"] = value(format_duration(p.adaptive.delta));
            t["thr"] = value(i64::from(p.adaptive.thr));
            t["ooo"] = value(p.ooo);
            t["barrier"] = value(match p.barrier {
                BarrierMode::Relaxed => "relaxed",
                BarrierMode::Strict => "strict",
            });
            if let Some(r) = p.max_irq_rate {
                t["max_irq_rate"] = value(i64::try_from(r).unwrap_or(i64::MAX));
                t["guard"] = value(p.guard.name());
            }
        }
        PolicyConfig::Vic(p) => vic_keys(t, p),
        PolicyConfig::VicSched(p) => {
            vic_keys(t, &p.vic);
            t["clock_margin"] = value(format_duration(p.clock_margin));
        }
    }
}

fn vic_keys(t: &mut Table, p: &VicParams) {
    t["cif_threshold"] = value(i64::from(p.cif_threshold));
    t["iops_threshold"] = value(i64::try_from(p.iops_threshold).unwrap_or(i64::MAX));
    t["epoch"] = value(format_duration(p.epoch));
    t["ipi_threshold"] = value(format_duration(p.ipi_threshold));
    t["quirk_reset_on_skip"] = value(p.quirk_reset_on_skip);
    if let Some(n) = p.quirk_failsafe {
        t["quirk_failsafe"] = value(i64::from(n));
    }
}
