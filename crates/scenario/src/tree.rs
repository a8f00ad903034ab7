//! The scenario document as a small owned tree in which every value
//! remembers where it came from: a line of the file or a `--set` argument.
//! `--set` edits this tree, so values from either place are validated by
//! the same code and reported with their own origin.

use toml_edit::{ImDocument, Item};

use crate::error::{Origin, ScenarioError};

/// A value with its origin.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Node {
    pub value: Value,
    pub origin: Origin,
}

/// A TOML value; tables keep their keys in document order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Datetime(String),
    Array(Vec<Node>),
    Table(Table),
}

/// Keys in document order.
pub(crate) type Table = Vec<(String, Node)>;

impl Value {
    /// How messages name the value's type.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "a string",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Bool(_) => "a boolean",
            Value::Datetime(_) => "a date-time",
            Value::Array(_) => "an array",
            Value::Table(_) => "a table",
        }
    }

    /// The value as `toml` sees it, for serde deserialization of
    /// profiles and the `[emu]` section.
    pub fn to_toml(&self) -> toml::Value {
        match self {
            Value::Str(s) | Value::Datetime(s) => toml::Value::String(s.clone()),
            Value::Int(i) => toml::Value::Integer(*i),
            Value::Float(x) => toml::Value::Float(*x),
            Value::Bool(b) => toml::Value::Boolean(*b),
            Value::Array(items) => {
                toml::Value::Array(items.iter().map(|n| n.value.to_toml()).collect())
            }
            Value::Table(t) => toml::Value::Table(
                t.iter()
                    .map(|(k, n)| (k.clone(), n.value.to_toml()))
                    .collect(),
            ),
        }
    }
}

/// Looks a key up in a table.
pub(crate) fn get<'a>(table: &'a Table, key: &str) -> Option<&'a Node> {
    table.iter().find(|(k, _)| k == key).map(|(_, n)| n)
}

/// Maps byte offsets to 1-based line numbers.
struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    fn new(text: &str) -> Self {
        let mut starts = vec![0];
        // A final newline starts no line: an error at the very end (an
        // unterminated string) belongs to the last line of the text.
        let body = text.strip_suffix('\n').unwrap_or(text);
        starts.extend(body.match_indices('\n').map(|(i, _)| i + 1));
        Lines { starts }
    }

    fn line_of(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset).max(1)
    }
}

/// Parses TOML text into a tree; a syntax error names its line and, as
/// far as the line shows it, the key being written.
pub(crate) fn parse(text: &str, source: &str) -> Result<Table, ScenarioError> {
    let lines = Lines::new(text);
    let doc = ImDocument::parse(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        let line = lines.line_of(offset);
        ScenarioError {
            source: source.to_string(),
            origin: Origin::Line(line),
            key: key_near_line(text, line),
            message: toml_message(e.message()),
        }
    })?;
    let root = doc.as_table();
    Ok(convert_table(root, &lines, 1))
}

/// The parser's message, with a hint where TOML's own limits bite.
fn toml_message(message: &str) -> String {
    let message = message.trim();
    if message.contains("too large") {
        // TOML integers are 64-bit signed; `seed` takes larger values
        // as strings.
        format!(
            "invalid TOML: {message} (TOML integers stop at {}; write a larger seed as a \
             string, e.g. seed = \"{}\")",
            i64::MAX,
            u64::MAX
        )
    } else {
        format!("invalid TOML: {message}")
    }
}

/// A best guess at the dotted key a broken line was writing: the last
/// `[section]` header above it plus the text before `=`.
pub(crate) fn key_near_line(text: &str, line: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    let upto = line.min(all.len());
    let this = all
        .get(upto.saturating_sub(1))
        .copied()
        .unwrap_or("")
        .trim();
    let header = |l: &str| {
        let l = l.trim();
        l.starts_with('[').then(|| {
            l.trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .trim()
                .to_string()
        })
    };
    if let Some(h) = header(this) {
        return h;
    }
    let section = all[..upto.saturating_sub(1)]
        .iter()
        .rev()
        .find_map(|l| header(l));
    let key = this
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"').to_string())
        .unwrap_or_default();
    match (section, key.is_empty()) {
        (Some(s), false) => format!("{s}.{key}"),
        (Some(s), true) => s,
        (None, _) => key,
    }
}

fn line_of_span(lines: &Lines, span: Option<std::ops::Range<usize>>, fallback: usize) -> usize {
    span.map_or(fallback, |s| lines.line_of(s.start))
}

fn convert_table(table: &toml_edit::Table, lines: &Lines, fallback: usize) -> Table {
    let own = line_of_span(lines, table.span(), fallback);
    table
        .iter()
        .map(|(k, item)| {
            let key_line = table
                .key(k)
                .and_then(|key| key.span())
                .map_or(own, |s| lines.line_of(s.start));
            (k.to_string(), convert_item(item, lines, key_line))
        })
        .collect()
}

fn convert_item(item: &Item, lines: &Lines, line: usize) -> Node {
    match item {
        Item::None => Node {
            value: Value::Table(Vec::new()),
            origin: Origin::Line(line),
        },
        Item::Value(v) => convert_value(v, lines, line),
        Item::Table(t) => {
            // A `[header]` table is located by its header; a table made
            // implicitly by dotted keys by its first key.
            let own = line_of_span(lines, t.span(), line);
            Node {
                value: Value::Table(convert_table(t, lines, own)),
                origin: Origin::Line(own),
            }
        }
        Item::ArrayOfTables(a) => Node {
            value: Value::Array(
                a.iter()
                    .map(|t| {
                        let own = line_of_span(lines, t.span(), line);
                        Node {
                            value: Value::Table(convert_table(t, lines, own)),
                            origin: Origin::Line(own),
                        }
                    })
                    .collect(),
            ),
            origin: Origin::Line(line),
        },
    }
}

fn convert_value(v: &toml_edit::Value, lines: &Lines, line: usize) -> Node {
    let value = match v {
        toml_edit::Value::String(s) => Value::Str(s.value().clone()),
        toml_edit::Value::Integer(i) => Value::Int(*i.value()),
        toml_edit::Value::Float(x) => Value::Float(*x.value()),
        toml_edit::Value::Boolean(b) => Value::Bool(*b.value()),
        toml_edit::Value::Datetime(d) => Value::Datetime(d.value().to_string()),
        toml_edit::Value::Array(a) => Value::Array(
            a.iter()
                .map(|item| convert_value(item, lines, line_of_span(lines, item.span(), line)))
                .collect(),
        ),
        toml_edit::Value::InlineTable(t) => Value::Table(
            t.iter()
                .map(|(k, item)| {
                    let key_line = t
                        .key(k)
                        .and_then(|key| key.span())
                        .map_or(line, |s| lines.line_of(s.start));
                    (k.to_string(), convert_value(item, lines, key_line))
                })
                .collect(),
        ),
    };
    Node {
        value,
        origin: Origin::Line(line),
    }
}

/// Parses a `--set` value: as a TOML value when it is one (`64`, `true`,
/// `"strict"`), else as a bare string (`4us`, `strict`).
pub(crate) fn parse_set_value(text: &str, origin: Origin) -> Node {
    let lines = Lines::new(text);
    match text.trim().parse::<toml_edit::Value>() {
        Ok(v) => {
            let mut node = convert_value(&v, &lines, 1);
            set_origin(&mut node, &origin);
            node
        }
        Err(_) => Node {
            value: Value::Str(text.to_string()),
            origin,
        },
    }
}

/// Marks a node and everything inside it as coming from `origin`.
pub(crate) fn set_origin(node: &mut Node, origin: &Origin) {
    node.origin = origin.clone();
    match &mut node.value {
        Value::Array(items) => items.iter_mut().for_each(|n| set_origin(n, origin)),
        Value::Table(t) => t.iter_mut().for_each(|(_, n)| set_origin(n, origin)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: &Node) -> usize {
        match n.origin {
            Origin::Line(l) => l,
            _ => 0,
        }
    }

    #[test]
    fn values_remember_their_lines() {
        let text = "name = \"x\"\n\n[device]\nmodel = \"p3700\"\nread.base = \"5us\"\n\n[[job]]\nname = \"a\"\n\n[[job]]\nname = \"b\"\nbs = \"4k\"\n";
        let t = parse(text, "f.toml").unwrap();
        assert_eq!(line(get(&t, "name").unwrap()), 1);
        let dev = get(&t, "device").unwrap();
        assert_eq!(line(dev), 3);
        let Value::Table(d) = &dev.value else {
            panic!()
        };
        assert_eq!(line(get(d, "model").unwrap()), 4);
        let read = get(d, "read").unwrap();
        let Value::Table(r) = &read.value else {
            panic!()
        };
        assert_eq!(line(get(r, "base").unwrap()), 5);
        let Value::Array(jobs) = &get(&t, "job").unwrap().value else {
            panic!()
        };
        assert_eq!(jobs.iter().map(line).collect::<Vec<_>>(), vec![7, 10]);
        let Value::Table(b) = &jobs[1].value else {
            panic!()
        };
        assert_eq!(line(get(b, "bs").unwrap()), 12);
    }

    #[test]
    fn syntax_errors_name_line_and_key() {
        let e = parse("name = \"x\"\n[job]\niodepth = = 3\n", "f.toml").unwrap_err();
        assert_eq!(e.origin, Origin::Line(3));
        assert_eq!(e.key, "job.iodepth");
    }

    #[test]
    fn set_values_are_typed_with_string_fallback() {
        let o = Origin::Set("k=v".into());
        assert_eq!(parse_set_value("64", o.clone()).value, Value::Int(64));
        assert_eq!(parse_set_value("true", o.clone()).value, Value::Bool(true));
        assert_eq!(
            parse_set_value("4us", o.clone()).value,
            Value::Str("4us".into())
        );
        assert_eq!(
            parse_set_value("\"a b\"", o.clone()).value,
            Value::Str("a b".into())
        );
        assert_eq!(parse_set_value("1.5", o).value, Value::Float(1.5));
    }
}
