//! CFS task groups (`[[sched_group]]`, and `sched_group` on `[[app]]` and
//! `[[job]]`): Linux's `CONFIG_FAIR_GROUP_SCHED`, where each cgroup of the
//! cpu controller, or each session's autogroup (`CONFIG_SCHED_AUTOGROUP`),
//! is scheduled as one entity per CPU beside the threads outside it
//! (docs/HOST-COSTS.md, "Task groups"). Threads of no group stay in the
//! root group, as every scenario without these keys has them.

use crate::error::Origin;
use crate::section::Section;
use crate::tree::{Node, Value};
use crate::ScenarioError;

/// Linux's `cpu.shares` default (`tg->shares`, `NICE_0_LOAD` unscaled).
pub const DEFAULT_SHARES: u64 = 1024;
/// The smallest `cpu.shares` Linux accepts (`MIN_SHARES`).
pub const MIN_SHARES: u64 = 2;
/// The largest (`MAX_SHARES`, `1 << 18`).
pub const MAX_SHARES: u64 = 1 << 18;

/// Keys of a `[[sched_group]]` table.
pub const SCHED_GROUP_KEYS: &[&str] = &["name", "shares"];

/// One task group directly under the root group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedGroup {
    /// `name`, unique among groups.
    pub name: String,
    /// `shares` (`cpu.shares`), [`MIN_SHARES`] to [`MAX_SHARES`].
    pub shares: u64,
}

/// The scenario's task groups and which programs run in them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SchedGroups {
    /// Declared by `[[sched_group]]` or first named by an app or a job
    /// (then with [`DEFAULT_SHARES`]), in that order.
    pub groups: Vec<SchedGroup>,
    /// Per `[[app]]`, in order: the index of its group, if any.
    pub app_group: Vec<Option<u32>>,
    /// Per `[[job]]`, in order: the index of its group, if any.
    pub job_group: Vec<Option<u32>>,
}

impl SchedGroups {
    /// No thread of the scenario is in a group.
    pub fn is_empty(&self) -> bool {
        self.app_group
            .iter()
            .chain(&self.job_group)
            .all(Option::is_none)
    }

    /// The group of app `a`'s threads.
    pub fn of_app(&self, a: usize) -> Option<u32> {
        self.app_group.get(a).copied().flatten()
    }

    /// The group of job `j`'s threads.
    pub fn of_job(&self, j: usize) -> Option<u32> {
        self.job_group.get(j).copied().flatten()
    }

    /// The index of group `name`, added with the default shares if new.
    fn index_of(&mut self, name: &str) -> u32 {
        if let Some(i) = self.groups.iter().position(|g| g.name == name) {
            return i as u32;
        }
        self.groups.push(SchedGroup {
            name: name.to_string(),
            shares: DEFAULT_SHARES,
        });
        (self.groups.len() - 1) as u32
    }
}

/// Parses `[[sched_group]]` and the `sched_group` key of each `[[app]]`
/// and `[[job]]` (their own parsers leave the key to this one).
pub(crate) fn parse(
    source: &str,
    groups: Option<&Node>,
    apps: Option<&Node>,
    jobs: Option<&Node>,
) -> Result<SchedGroups, ScenarioError> {
    let mut out = SchedGroups::default();
    if let Some(node) = groups {
        let mut seen: Vec<(String, Origin)> = Vec::new();
        for (index, (table, origin)) in crate::job::elements(source, "sched_group", Some(node))?
            .into_iter()
            .enumerate()
        {
            let mut sec = Section::new(source, format!("sched_group[{index}]"), table, origin);
            let name = crate::job::element_name(&mut sec, &seen, "sched_group")?;
            seen.push((name.clone(), sec.origin_of("name")));
            let shares = sec
                .int("shares", MIN_SHARES, MAX_SHARES)?
                .unwrap_or(DEFAULT_SHARES);
            sec.finish("a [[sched_group]]", SCHED_GROUP_KEYS)?;
            out.groups.push(SchedGroup { name, shares });
        }
    }
    out.app_group = members(source, "app", apps, &mut out)?;
    out.job_group = members(source, "job", jobs, &mut out)?;
    Ok(out)
}

/// The `sched_group` of each element of the `[[what]]` array.
fn members(
    source: &str,
    what: &str,
    node: Option<&Node>,
    out: &mut SchedGroups,
) -> Result<Vec<Option<u32>>, ScenarioError> {
    let Some(Value::Array(items)) = node.map(|n| &n.value) else {
        return Ok(Vec::new());
    };
    let mut groups = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let Value::Table(table) = &item.value else {
            groups.push(None);
            continue;
        };
        let mut sec = Section::new(
            source,
            format!("{what}[{index}]"),
            table,
            item.origin.clone(),
        );
        if let Ok(Some(name)) = sec.string("name") {
            sec.set_path(format!("{what}.{name}"));
        }
        let Some(group) = sec.string("sched_group")? else {
            groups.push(None);
            continue;
        };
        // A group first named here is named as `[[sched_group]]` names
        // it, so that `--set sched_group.NAME...` can reach it.
        if group.trim().is_empty()
            || group.trim() != group
            || group.contains('.')
            || group.contains('=')
        {
            return Err(sec.error(
                "sched_group",
                "must be a group name, not empty, without '.', '=' or surrounding spaces",
            ));
        }
        if what == "job" && sec.has("guest") {
            return Err(sec.error(
                "sched_group",
                "a job inside a guest runs under its guest kernel's scheduler: task groups are \
                 the host's",
            ));
        }
        groups.push(Some(out.index_of(&group)));
    }
    Ok(groups)
}

/// The groups as `[[sched_group]]` tables and the members' keys, for the
/// resolved scenario (`cint check`).
pub(crate) fn render(doc: &mut toml_edit::DocumentMut, groups: &SchedGroups) {
    use toml_edit::{value, ArrayOfTables, Item, Table};
    if groups.is_empty() {
        return;
    }
    for (section, members) in [("app", &groups.app_group), ("job", &groups.job_group)] {
        if let Some(tables) = doc.get_mut(section).and_then(Item::as_array_of_tables_mut) {
            for (t, g) in tables.iter_mut().zip(members.iter()) {
                if let Some(g) = g.and_then(|g| groups.groups.get(g as usize)) {
                    t["sched_group"] = value(g.name.as_str());
                }
            }
        }
    }
    let mut out = ArrayOfTables::new();
    for g in &groups.groups {
        let mut t = Table::new();
        t["name"] = value(g.name.as_str());
        t["shares"] = value(g.shares as i64);
        out.push(t);
    }
    doc["sched_group"] = Item::ArrayOfTables(out);
}
