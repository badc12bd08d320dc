//! Reading manifest tables with serde, and saying where a value of the wrong type is: the
//! table, the key, the value as written, its type, the type expected and the line. toml's own
//! message shows the line but names neither the key nor, in words, the types.
//!
//! The reader finds the key by the span toml gives the error: the key, or the innermost value
//! of the document, whose span holds it. A table read with `#[serde(flatten)]` loses that span
//! (serde buffers the table first), so no manifest table is read that way.
//!
//! An unknown key is refused by the tables' serde structs (`deny_unknown_fields`, or a reader's
//! own `unknown_field`); their error lists the keys the table takes, and the reader turns it
//! into [`ManifestError::UnknownKey`] with the nearest of them. No key list is kept by hand.

use std::ops::Range;
use std::path::Path;

use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::{DeString, DeTable, DeValue};

use crate::{ManifestError, TypeMismatch, hint};

/// One step of the way from the document's root to a value.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    /// A key of a table.
    Key(String),
    /// An element of an array.
    Index(usize),
}

/// The value an error is about, found in the document.
struct Found {
    /// The way to it from the root.
    steps: Vec<Step>,
    /// Its text, as written.
    text: String,
    /// Its TOML type, as [`DeValue::type_str`] names it, or "key" when the span is a key's.
    kind: &'static str,
    /// Its element count, when it is an array.
    len: Option<usize>,
    /// Its first line (1-based).
    line: usize,
}

/// `text` read as `T`; an error names the manifest `path`, the table, the key, the value, the
/// types and the line.
pub(crate) fn from_text<T: DeserializeOwned>(text: &str, path: &Path) -> Result<T, ManifestError> {
    toml::from_str(text).map_err(|e| locate(&e, text, path, None))
}

/// `table` (given by a program, not read from a file) read as `T`; `at` says where it
/// stands in a manifest: `("lidar", Some(0))` for the first `[[lidar]]` table, `("variants",
/// None)` for `[variants]`. An error names `source`, the table, the key, the value and the
/// types (there is no line to give).
pub(crate) fn from_table<T: DeserializeOwned>(
    table: &toml::Table,
    at: (&str, Option<usize>),
    source: &Path,
) -> Result<T, ManifestError> {
    let err = match toml::Value::Table(table.clone()).try_into() {
        Ok(value) => return Ok(value),
        Err(e) => e,
    };
    let mut prefix = vec![Step::Key(at.0.to_string())];
    prefix.extend(at.1.map(Step::Index));
    // The table as TOML text, read again: the second read's error has a span to locate.
    let located = toml::to_string(table)
        .ok()
        .and_then(|text| toml::from_str::<T>(&text).err().map(|e| locate(&e, &text, source, Some(&prefix))));
    Err(located.unwrap_or_else(|| ManifestError::Parse {
        path: source.to_path_buf(),
        message: format!("{}: {}", table_name(&prefix), err.message()),
    }))
}

/// The manifest error for `e`, raised reading `text`: located where the span allows. With
/// `prefix`, `text` is a program's table found there, and has no lines of its own.
fn locate(e: &toml::de::Error, text: &str, path: &Path, prefix: Option<&[Step]>) -> ManifestError {
    let parse = |message: String| ManifestError::Parse { path: path.to_path_buf(), message };
    let root = DeTable::parse(text).ok();
    let found = e.span().and_then(|span| root.as_ref().and_then(|root| find(root, &span, text)));
    let unknown = unknown_field(e.message()).filter(|_| {
        let first = found.as_ref().and_then(|f| f.steps.first()).or(prefix.and_then(|p| p.first()));
        !matches!(first, Some(Step::Key(k)) if RIG_TABLES.contains(&k.as_str()))
    });
    if let Some((key, valid)) = unknown {
        let table = match (&found, &root) {
            (Some(found), Some(root)) => {
                let steps = match found.kind {
                    "key" => &found.steps[..found.steps.len() - 1],
                    _ => &found.steps[..],
                };
                unknown_key_table(root.get_ref(), steps, text, prefix.unwrap_or_default())
            }
            _ => table_name(prefix.unwrap_or_default()),
        };
        return ManifestError::UnknownKey { path: path.to_path_buf(), table, hint: hint(&key, &valid), key };
    }
    let Some(mut found) = found else {
        return parse(match prefix {
            Some(prefix) => format!("{}: {}", table_name(prefix), e.message()),
            None => e.to_string(),
        });
    };
    if let Some(prefix) = prefix {
        found.steps.splice(0..0, prefix.iter().cloned());
    }
    // A table's own error (a missing key) names the table alone, as does an error about a key
    // itself.
    let (table, key) = match found.kind {
        "table" => (table_name(&found.steps), None),
        "key" => (table_name(&found.steps[..found.steps.len() - 1]), None),
        _ => split(&found.steps),
    };
    let line = prefix.is_none().then_some(found.line);
    let at = line.map_or(String::new(), |l| format!("line {l}, "));
    let Some(key) = key else {
        return parse(format!("{at}{table}: {}", e.message()));
    };
    match types(e.message(), &found) {
        Some((found_words, expected)) => ManifestError::Type {
            path: path.to_path_buf(),
            mismatch: Box::new(TypeMismatch { line, table, key, value: found.text, found: found_words, expected }),
        },
        None => parse(format!("{at}{table} has `{key}` = {}: {}", found.text, e.message())),
    }
}

/// Tables read by another crate's reader, whose errors stay that reader's: a `[[lights]]`
/// table says what the same light in a `lights_file` says.
const RIG_TABLES: [&str; 1] = ["lights"];

/// The key and the keys its table takes, from serde's "unknown field `x`, expected one of `a`,
/// `b`" (what `deny_unknown_fields` and a reader's `unknown_field` say); `None` for any other
/// message.
fn unknown_field(message: &str) -> Option<(String, Vec<&str>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (key, expected) = rest.split_once('`')?;
    // Every other piece between backquotes is a valid key.
    let valid = expected.split('`').skip(1).step_by(2).collect();
    Some((key.to_string(), valid))
}

/// The table at `steps` (after `prefix`, where a program's table stands) as an unknown key's
/// error names it: "[reset.bodies.box]" for a table with a header, and the header's table
/// then the keys for one written inline ("[controller] actuators", "[[variants.variant]] 1
/// edits[0]").
fn unknown_key_table(root: &DeTable<'_>, steps: &[Step], text: &str, prefix: &[Step]) -> String {
    let mut table = Some(root);
    let mut value: Option<&DeValue<'_>> = None;
    let mut inline = steps.len();
    for (i, step) in steps.iter().enumerate() {
        let next = match (step, table, value) {
            (Step::Key(k), Some(t), _) => t.iter().find(|(key, _)| key.get_ref() == k).map(|(key, v)| {
                let after = text.get(key.span().end..).unwrap_or_default().trim_start();
                if after.starts_with('=') && inline == steps.len() {
                    inline = i;
                }
                v
            }),
            (Step::Index(n), _, Some(DeValue::Array(items))) => items.get(*n),
            _ => None,
        };
        let Some(next) = next else { break };
        value = Some(next.get_ref());
        table = next.get_ref().as_table();
    }
    let head: Vec<Step> = prefix.iter().chain(&steps[..inline]).cloned().collect();
    match key_path(&steps[inline..]) {
        Some(keys) => format!("{} {keys}", table_name(&head)),
        None => table_name(&head),
    }
}

/// "actuators", "edits[0]", "bodies.box" for the steps from a table to a value inside it, or
/// `None` when there are none.
fn key_path(steps: &[Step]) -> Option<String> {
    let mut out = String::new();
    for step in steps {
        match step {
            Step::Key(k) if out.is_empty() => out.push_str(k),
            Step::Key(k) => out.push_str(&format!(".{k}")),
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The key or the innermost value under `root` whose span holds `span`.
fn find(root: &Spanned<DeTable<'_>>, span: &Range<usize>, text: &str) -> Option<Found> {
    let mut steps = Vec::new();
    let (range, kind, len) = match in_table(root.get_ref(), span, &mut steps)? {
        Hit::Key(key) => (key.span(), "key", None),
        Hit::Value(value) => (value.span(), value.get_ref().type_str(), value.get_ref().as_array().map(|a| a.len())),
    };
    let written = text.get(range.clone()).unwrap_or_default();
    Some(Found {
        steps,
        text: shorten(written),
        kind,
        len,
        line: 1 + text.get(..range.start).unwrap_or_default().matches('\n').count(),
    })
}

/// What a span was found on: a key, or a value.
enum Hit<'a, 'i> {
    Key(&'a Spanned<DeString<'i>>),
    Value(&'a Spanned<DeValue<'i>>),
}

/// The key or the innermost value of `table`'s entries that holds `span`, with the steps to it.
fn in_table<'a, 'i>(table: &'a DeTable<'i>, span: &Range<usize>, steps: &mut Vec<Step>) -> Option<Hit<'a, 'i>> {
    table.iter().find_map(|(key, value)| {
        steps.push(Step::Key(key.get_ref().to_string()));
        let own = key.span();
        if own.start <= span.start && span.end <= own.end {
            return Some(Hit::Key(key));
        }
        let inner = in_value(value, span, steps);
        if inner.is_none() {
            steps.pop();
        }
        inner
    })
}

/// `value` or the key or innermost value inside it that holds `span`. A table's own span (its
/// header) need not hold its entries', so every entry is searched.
fn in_value<'a, 'i>(
    value: &'a Spanned<DeValue<'i>>,
    span: &Range<usize>,
    steps: &mut Vec<Step>,
) -> Option<Hit<'a, 'i>> {
    let inner = match value.get_ref() {
        DeValue::Table(t) => in_table(t, span, steps),
        DeValue::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
            steps.push(Step::Index(i));
            let inner = in_value(item, span, steps);
            if inner.is_none() {
                steps.pop();
            }
            inner
        }),
        _ => None,
    };
    let own = value.span();
    inner.or_else(|| (own.start <= span.start && span.end <= own.end).then_some(Hit::Value(value)))
}

/// The table (as the manifest's errors name tables: "[recorder]", "[[lidar]] 0",
/// "[reset.bodies.crate_1]", "the top level") and the key with any element indices
/// ("points[2]"), or no key when the value is a table of its own.
fn split(steps: &[Step]) -> (String, Option<String>) {
    let last_key = steps.iter().rposition(|s| matches!(s, Step::Key(_)));
    let (head, key) = match last_key {
        Some(k) => (&steps[..k], Some(&steps[k..])),
        None => (steps, None),
    };
    let key = key.map(|steps| {
        steps
            .iter()
            .map(|s| match s {
                Step::Key(k) => k.clone(),
                Step::Index(i) => format!("[{i}]"),
            })
            .collect::<String>()
    });
    // A key whose value is itself a table (or an array of tables) is part of the table's name.
    (table_name(head), key)
}

/// "[a.b]", "[[a]] 0", "[[a.b]] 1 c[2]" for the steps to a table.
fn table_name(steps: &[Step]) -> String {
    if steps.is_empty() {
        return "the top level".into();
    }
    let (mut out, mut keys) = (String::new(), Vec::<&str>::new());
    for step in steps {
        match step {
            Step::Key(k) => keys.push(k),
            Step::Index(i) if out.is_empty() => {
                out = format!("[[{}]] {i}", keys.join("."));
                keys.clear();
            }
            Step::Index(i) => {
                out.push_str(&format!(" {}[{i}]", keys.join(".")));
                keys.clear();
            }
        }
    }
    match (out.is_empty(), keys.is_empty()) {
        (true, _) => format!("[{}]", keys.join(".")),
        (false, true) => out,
        (false, false) => format!("{out} {}", keys.join(".")),
    }
}

/// The value's text on one line, at most 60 characters.
fn shorten(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

/// What was found and what was expected, in words, for serde's "invalid type", "invalid
/// length" and "invalid value" messages; `None` for any other message.
fn types(message: &str, found: &Found) -> Option<(String, String)> {
    let (head, expected) = message.split_once(", expected ")?;
    let found_words = if head.starts_with("invalid type: ") {
        match (found.kind, found.len) {
            ("array", Some(n)) => elements(n),
            (kind, _) => a_type(kind).into(),
        }
    } else if let Some(n) = head.strip_prefix("invalid length ") {
        found.len.map_or_else(|| format!("of length {n}"), elements)
    } else if head.starts_with("invalid value: ") {
        "out of range".into()
    } else {
        return None;
    };
    let in_range = head.starts_with("invalid value: ");
    Some((found_words, expected_words(expected, in_range)))
}

/// "an array of 3 elements".
fn elements(n: usize) -> String {
    match n {
        1 => "an array of 1 element".into(),
        n => format!("an array of {n} elements"),
    }
}

/// A TOML type with its article.
fn a_type(kind: &str) -> &'static str {
    match kind {
        "string" => "a string",
        "integer" => "an integer",
        "float" => "a float",
        "boolean" => "a boolean",
        "datetime" => "a date-time",
        "array" => "an array",
        _ => "a table",
    }
}

/// serde's name of an expected type in the manifest's words; with `in_range`, an integer
/// type's range.
fn expected_words(expected: &str, in_range: bool) -> String {
    let range = |lo: i128, hi: i128| format!("an integer from {lo} to {hi}");
    match expected {
        "u8" if in_range => range(0, u8::MAX.into()),
        "u16" if in_range => range(0, u16::MAX.into()),
        "u32" if in_range => range(0, u32::MAX.into()),
        "u64" | "usize" if in_range => range(0, u64::MAX.into()),
        "i32" if in_range => range(i32::MIN.into(), i32::MAX.into()),
        "i64" | "isize" if in_range => range(i64::MIN.into(), i64::MAX.into()),
        "u8" | "u16" | "u32" | "u64" | "usize" => "an integer, 0 or more".into(),
        "i8" | "i16" | "i32" | "i64" | "isize" | "i128" | "u128" => "an integer".into(),
        "f32" | "f64" => "a number".into(),
        "a sequence" => "an array".into(),
        "a map" => "a table".into(),
        other if other.starts_with("struct ") => "a table".into(),
        other if other.starts_with("an array of length ") => {
            format!("an array of {} values", other.trim_start_matches("an array of length "))
        }
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(spec: &[&str]) -> Vec<Step> {
        spec.iter().map(|s| s.parse().map_or_else(|_| Step::Key(s.to_string()), Step::Index)).collect()
    }

    #[test]
    fn tables_and_keys_are_named_as_the_manifest_writes_them() {
        assert_eq!(split(&steps(&["lidar", "0", "channels"])), ("[[lidar]] 0".into(), Some("channels".into())));
        assert_eq!(split(&steps(&["controller", "points", "0"])), ("[controller]".into(), Some("points[0]".into())));
        assert_eq!(split(&steps(&["reset", "bodies", "b", "x"])), ("[reset.bodies.b]".into(), Some("x".into())));
        assert_eq!(split(&steps(&["scene"])), ("the top level".into(), Some("scene".into())));
        assert_eq!(
            split(&steps(&["variants", "variant", "1", "edits", "0", "geom"])),
            ("[[variants.variant]] 1 edits[0]".into(), Some("geom".into()))
        );
        assert_eq!(table_name(&steps(&["task"])), "[task]");
        assert_eq!(table_name(&steps(&["camera", "1"])), "[[camera]] 1");
    }

    #[test]
    fn serde_types_are_put_in_words() {
        assert_eq!(expected_words("i64", false), "an integer");
        assert_eq!(expected_words("u32", true), "an integer from 0 to 4294967295");
        assert_eq!(expected_words("f64", false), "a number");
        assert_eq!(expected_words("an array of length 3", false), "an array of 3 values");
        assert_eq!(shorten(&"x".repeat(70)).chars().count(), 61);
    }
}
