//! Where each key of a loaded scenario was written: a line of the file or
//! a `--set` argument.
//!
//! The loader refuses what it can judge alone; an engine refuses what only
//! it can judge (a strategy its model cannot run, a core its host lacks).
//! [`KeyOrigins`] lets such a refusal name the line, like the loader's own:
//! the engine names the dotted key, and [`Scenario::refusal`] finds where
//! that key was written.
//!
//! [`Scenario::refusal`]: crate::Scenario::refusal

use std::collections::BTreeMap;

use crate::error::{Origin, ScenarioError};
use crate::tree::{Node, Table, Value};

/// The origin of every key and table of a scenario, by dotted key
/// (`strategy.vs.kind`, `job.reader.cpus`, `host`): entries of an array
/// of tables are named by their `name`, as `--set` names them.
///
/// Not part of what a scenario means, so any two compare equal: a
/// scenario rendered by `cint check` and loaded again, or imported from
/// fio, is the same scenario with other lines. Empty for scenarios built
/// in code.
#[derive(Clone, Debug, Default)]
pub struct KeyOrigins {
    by_key: BTreeMap<String, Origin>,
}

impl PartialEq for KeyOrigins {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for KeyOrigins {}

impl KeyOrigins {
    /// The origins of the keys of the parsed document `root`.
    pub(crate) fn of_document(root: &Table) -> Self {
        let mut origins = KeyOrigins::default();
        origins.add_table("", root);
        origins
    }

    fn add_table(&mut self, prefix: &str, table: &Table) {
        for (key, node) in table {
            let path = if prefix.is_empty() {
                key.clone()
            } else {
                format!("{prefix}.{key}")
            };
            self.add_node(path, node);
        }
    }

    fn add_node(&mut self, path: String, node: &Node) {
        match &node.value {
            Value::Table(table) => self.add_table(&path, table),
            Value::Array(items) if items.iter().all(|n| matches!(n.value, Value::Table(_))) => {
                for (index, item) in items.iter().enumerate() {
                    let Value::Table(table) = &item.value else {
                        continue;
                    };
                    let entry = match crate::tree::get(table, "name").map(|n| &n.value) {
                        Some(Value::Str(name)) => format!("{path}.{name}"),
                        _ => format!("{path}.{index}"),
                    };
                    self.by_key.insert(entry.clone(), item.origin.clone());
                    self.add_table(&entry, table);
                }
            }
            _ => {}
        }
        self.by_key
            .entry(path)
            .or_insert_with(|| node.origin.clone());
    }

    /// Where `key` was written; for a key left to its default, where the
    /// nearest enclosing table was (a `[[strategy]]` header for
    /// `strategy.vs.interrupts`). `None` when nothing of it was written.
    pub fn get(&self, key: &str) -> Option<&Origin> {
        let mut key = key;
        loop {
            if let Some(origin) = self.by_key.get(key) {
                return Some(origin);
            }
            key = &key[..key.rfind('.')?];
        }
    }

    /// Forgets the lines, keeping the `--set` arguments: for a scenario
    /// rendered from another format (a fio job file) and loaded again,
    /// whose lines are the rendering's, not the user's file's.
    pub fn keep_sets_only(&mut self) {
        self.by_key.retain(|_, o| matches!(o, Origin::Set(_)));
    }

    /// Records that `key` (and what is under it, unless recorded itself)
    /// was written at `origin`, unless a `--set` argument set it.
    pub fn set_if_absent(&mut self, key: &str, origin: Origin) {
        self.by_key.entry(key.to_string()).or_insert(origin);
    }

    /// A refusal of `key` by a later judge than the loader (an engine), in
    /// the loader's own words: `file:line: key: message`, or `file: key:
    /// message` when nothing of the key was written (a profile's value).
    pub fn refusal(&self, source: &str, key: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            source: source.to_string(),
            origin: self.get(key).cloned().unwrap_or(Origin::File),
            key: key.to_string(),
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origins(text: &str, sets: &[&str]) -> KeyOrigins {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        crate::load_str(text, "x.toml", &sets)
            .expect("loads")
            .origins
    }

    const TEXT: &str = "name = \"x\"\n\
        \n\
        [[strategy]]\n\
        name = \"a\"\n\
        kind = \"none\"\n\
        \n\
        [[strategy]]\n\
        name = \"b\"\n\
        kind = \"adaptive\"\n\
        \n\
        [[job]]\n\
        name = \"r\"\n\
        cpu = 0\n";

    #[test]
    fn keys_of_named_entries_have_their_lines() {
        let o = origins(TEXT, &[]);
        assert_eq!(o.get("strategy.b.kind"), Some(&Origin::Line(9)));
        assert_eq!(o.get("strategy.a.kind"), Some(&Origin::Line(5)));
        assert_eq!(o.get("job.r.cpu"), Some(&Origin::Line(13)));
        assert_eq!(o.get("name"), Some(&Origin::Line(1)));
    }

    #[test]
    fn an_unwritten_key_falls_back_to_its_table_and_then_to_nothing() {
        let o = origins(TEXT, &[]);
        assert_eq!(o.get("strategy.b.interrupts"), Some(&Origin::Line(7)));
        assert_eq!(o.get("host.cores"), None);
        let e = o.refusal("x.toml", "host.cores", "too few");
        assert_eq!(e.to_string(), "x.toml: host.cores: too few");
    }

    #[test]
    fn origins_do_not_make_two_scenarios_differ() {
        assert_eq!(origins(TEXT, &[]), KeyOrigins::default());
        let moved = format!("\n\n{TEXT}");
        let a = crate::load_str(TEXT, "x.toml", &[]).expect("loads");
        let b = crate::load_str(&moved, "x.toml", &[]).expect("loads");
        assert_ne!(
            a.origins.get("strategy.b.kind"),
            b.origins.get("strategy.b.kind")
        );
        assert_eq!(a, b);
    }

    #[test]
    fn a_set_value_is_named_by_its_argument() {
        let o = origins(TEXT, &["strategy.b.kind=none"]);
        let e = o.refusal("x.toml", "strategy.b.kind", "refused");
        assert_eq!(
            e.to_string(),
            "x.toml: --set strategy.b.kind=none: strategy.b.kind: refused"
        );
        let e = origins(TEXT, &[]).refusal("x.toml", "strategy.b.kind", "refused");
        assert_eq!(e.to_string(), "x.toml:9: strategy.b.kind: refused");
    }
}
