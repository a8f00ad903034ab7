//! Typed reading of one table of the scenario: every getter reports a bad
//! value with the key's own origin, and [`Section::finish`] refuses keys
//! nobody read.

use cint_policy::Nanos;

use crate::error::{Origin, ScenarioError};
use crate::tree::{Node, Table, Value};
use crate::units::{bare_duration, parse_duration, parse_size};

/// One table being read, with its dotted path for messages.
pub(crate) struct Section<'a> {
    source: &'a str,
    path: String,
    table: &'a Table,
    origin: Origin,
    used: Vec<&'a str>,
}

impl<'a> Section<'a> {
    /// Reads `table`, found at `origin`, named `path` in messages (empty
    /// for the top level).
    pub fn new(source: &'a str, path: impl Into<String>, table: &'a Table, origin: Origin) -> Self {
        Section {
            source,
            path: path.into(),
            table,
            origin,
            used: Vec::new(),
        }
    }

    /// The scenario's file name (or `<string>`).
    pub fn source(&self) -> &'a str {
        self.source
    }

    /// Renames the section (once the `name` of a `[[job]]` is known).
    pub fn set_path(&mut self, path: impl Into<String>) {
        self.path = path.into();
    }

    /// The dotted path of a key of this section.
    pub fn key_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else if key.is_empty() {
            self.path.clone()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// Where the key was written, or the table itself when it was not.
    pub fn origin_of(&self, key: &str) -> Origin {
        self.table
            .iter()
            .find(|(k, _)| k == key)
            .map_or_else(|| self.origin.clone(), |(_, n)| n.origin.clone())
    }

    /// True if the key is present.
    pub fn has(&self, key: &str) -> bool {
        self.table.iter().any(|(k, _)| k == key)
    }

    /// An error about `key`, located where it was written.
    pub fn error(&self, key: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            source: self.source.to_string(),
            origin: self.origin_of(key),
            key: self.key_path(key),
            message: message.into(),
        }
    }

    /// Marks a key read and returns its node.
    pub fn node(&mut self, key: &'a str) -> Option<&'a Node> {
        let found = self.table.iter().find(|(k, _)| k == key).map(|(_, n)| n);
        if found.is_some() && !self.used.contains(&key) {
            self.used.push(key);
        }
        found
    }

    /// A string value.
    pub fn string(&mut self, key: &'a str) -> Result<Option<String>, ScenarioError> {
        match self.node(key).map(|n| &n.value) {
            None => Ok(None),
            Some(Value::Str(s)) => Ok(Some(s.clone())),
            Some(v) => Err(self.error(key, format!("must be a string (got {})", v.type_name()))),
        }
    }

    /// A string that must be there.
    pub fn required_string(&mut self, key: &'a str) -> Result<String, ScenarioError> {
        self.string(key)?
            .ok_or_else(|| self.error(key, "missing required key"))
    }

    /// One of a fixed set of words.
    pub fn choice(
        &mut self,
        key: &'a str,
        allowed: &[&str],
    ) -> Result<Option<String>, ScenarioError> {
        match self.string(key)? {
            None => Ok(None),
            Some(s) if allowed.contains(&s.as_str()) => Ok(Some(s)),
            Some(s) => Err(self.error(
                key,
                format!("must be one of {} (got \"{s}\")", quoted_list(allowed)),
            )),
        }
    }

    /// An integer in `min..=max`.
    pub fn int(&mut self, key: &'a str, min: u64, max: u64) -> Result<Option<u64>, ScenarioError> {
        match self.node(key).map(|n| &n.value) {
            None => Ok(None),
            Some(Value::Int(i)) => {
                let i = *i;
                if i < 0 || (i as u64) < min {
                    Err(self.error(key, format!("must be at least {min} (got {i})")))
                } else if i as u64 > max {
                    Err(self.error(key, format!("must be at most {max} (got {i})")))
                } else {
                    Ok(Some(i as u64))
                }
            }
            // `--set` keeps a number too large for TOML's integers as a
            // string: it is out of range, not of the wrong type.
            Some(Value::Str(s)) if is_big_whole_number(s) => {
                Err(self.error(key, format!("must be at most {max} (got {s})")))
            }
            Some(v) => Err(self.error(
                key,
                format!(
                    "must be a whole number from {min} to {max} (got {})",
                    v.type_name()
                ),
            )),
        }
    }

    /// A number from `min` to `max` (a float or an integer).
    pub fn number(
        &mut self,
        key: &'a str,
        min: f64,
        max: f64,
    ) -> Result<Option<f64>, ScenarioError> {
        let x = match self.node(key).map(|n| &n.value) {
            None => return Ok(None),
            Some(Value::Float(f)) => *f,
            Some(Value::Int(i)) => *i as f64,
            Some(v) => {
                return Err(self.error(
                    key,
                    format!(
                        "must be a number from {min} to {max} (got {})",
                        v.type_name()
                    ),
                ))
            }
        };
        if x.is_nan() || x < min || x > max {
            return Err(self.error(key, format!("must be from {min} to {max} (got {x})")));
        }
        Ok(Some(x))
    }

    /// A boolean.
    pub fn bool(&mut self, key: &'a str) -> Result<Option<bool>, ScenarioError> {
        match self.node(key).map(|n| &n.value) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.error(
                key,
                format!("must be true or false (got {})", v.type_name()),
            )),
        }
    }

    /// A duration: `"6us"`, `"200ms"`, at most an hour
    /// ([`crate::past_an_hour`]); a bare integer other than 0 is refused
    /// with the units it could have meant.
    pub fn duration(&mut self, key: &'a str) -> Result<Option<Nanos>, ScenarioError> {
        match self.any_duration(key)? {
            Some(ns) => match crate::past_an_hour(ns) {
                Some(why) => Err(self.error(key, why)),
                None => Ok(Some(ns)),
            },
            None => Ok(None),
        }
    }

    /// A duration of any length ([`Section::duration`] without its bound),
    /// for a key that words its own refusals.
    pub fn any_duration(&mut self, key: &'a str) -> Result<Option<Nanos>, ScenarioError> {
        match self.node(key).map(|n| &n.value) {
            None => Ok(None),
            Some(Value::Str(s)) => parse_duration(s)
                .map(Some)
                .map_err(|e| self.error(key, format!("bad duration: {e}"))),
            Some(Value::Int(0)) => Ok(Some(0)),
            Some(Value::Int(i)) if *i > 0 => Err(self.error(
                key,
                format!("bad duration: {}", bare_duration(&i.to_string())),
            )),
            Some(Value::Int(i)) => Err(self.error(key, format!("must not be negative (got {i})"))),
            Some(v) => Err(self.error(
                key,
                format!("must be a duration such as \"6us\" (got {})", v.type_name()),
            )),
        }
    }

    /// A size: `"4k"`, `"1MiB"`, or an integer of bytes.
    pub fn size(&mut self, key: &'a str) -> Result<Option<u64>, ScenarioError> {
        match self.node(key).map(|n| &n.value) {
            None => Ok(None),
            Some(Value::Str(s)) => parse_size(s)
                .map(Some)
                .map_err(|e| self.error(key, format!("bad size: {e}"))),
            Some(Value::Int(i)) if *i >= 0 => Ok(Some(*i as u64)),
            Some(Value::Int(i)) => Err(self.error(key, format!("must not be negative (got {i})"))),
            Some(v) => Err(self.error(
                key,
                format!("must be a size such as \"4k\" (got {})", v.type_name()),
            )),
        }
    }

    /// The first key nobody read, if any.
    pub fn first_unread(&self) -> Option<&'a str> {
        self.table
            .iter()
            .map(|(k, _)| k.as_str())
            .find(|k| !self.used.contains(k))
    }

    /// The first key in neither list (read or not): a key this table's
    /// kind does not take.
    pub fn first_unread_except(&self, common: &[&str], own: &[&str]) -> Option<&'a str> {
        self.table
            .iter()
            .map(|(k, _)| k.as_str())
            .find(|k| !common.contains(k) && !own.contains(k))
    }

    /// Refuses any key nobody read, listing the keys this section takes.
    pub fn finish(&self, what: &str, valid: &[&str]) -> Result<(), ScenarioError> {
        match self.first_unread() {
            None => Ok(()),
            Some(k) => Err(self.error(
                k,
                format!("unknown key in {what} (valid keys: {})", valid.join(", ")),
            )),
        }
    }
}

/// `"a", "b" or "c"`.
pub(crate) fn quoted_list(words: &[&str]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| format!("\"{w}\"")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// True for a string of decimal digits beyond TOML's integer range (what
/// `--set` keeps as a string).
pub(crate) fn is_big_whole_number(s: &str) -> bool {
    // A quoted number TOML could hold ("16") is a string, of the wrong type.
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && s.parse::<i64>().is_err()
}
