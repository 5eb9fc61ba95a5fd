//! Text to raw types, in three passes: TOML syntax, the key schema (so an unknown key is reported
//! with the table it is in and the keys that table takes, wherever it appears — standard table,
//! inline table or dotted key), then serde for the value types. Every error points at
//! file:line:col. It must not apply defaults or cross-field rules: that is `resolve`'s job.

use super::error::{ConfigError, KeyPath, Location};
use super::raw::Node;
use serde::de::DeserializeOwned;
use serde_spanned::Spanned;
use std::ops::Range;
use std::path::Path;
use toml::de::{DeTable, DeValue};

/// No value in a board or profile file needs more: a longer one is a mistake (a file pasted into
/// a string), and would be repeated into every error and report that quotes it.
pub const MAX_VALUE_BYTES: usize = 16 * 1024;
/// Longer than any key a board or profile file takes: an unknown key this long is not quoted.
const MAX_KEY_BYTES: usize = 64;

/// The text of one configuration file and the name it is reported under.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    pub file: &'a Path,
    pub text: &'a str,
}

impl Source<'_> {
    pub fn at(&self, offset: usize) -> Location {
        Location::at(self.file, self.text, offset)
    }

    /// The offset of byte `index` of a string value whose literal spans `span`. The literal may
    /// have quotes and escapes; when it is a plain quoted copy of `value` the offset is exact,
    /// otherwise it falls back to the start of the literal.
    pub fn offset_in_string(&self, span: Range<usize>, value: &str, index: usize) -> usize {
        let literal = self.text.get(span.clone()).unwrap_or("");
        for quote in ["\"\"\"", "'''", "\"", "'"] {
            let inner = literal
                .strip_prefix(quote)
                .and_then(|rest| rest.strip_suffix(quote));
            if inner == Some(value) {
                return span.start + quote.len() + index;
            }
        }
        span.start
    }
}

/// Parses TOML syntax only.
pub fn document<'a>(src: &Source<'a>) -> Result<Spanned<DeTable<'a>>, ConfigError> {
    DeTable::parse(src.text).map_err(|e| ConfigError::Syntax {
        at: src.at(e.span().map_or(0, |s| s.start)),
        message: e.message().trim_end().to_string(),
    })
}

/// Parses `src` into the raw type `T`, checking its keys against `schema` first.
pub fn raw<T: DeserializeOwned>(
    src: &Source<'_>,
    schema: &[(&'static str, Node)],
) -> Result<T, ConfigError> {
    let doc = document(src)?;
    check_table(src, doc.get_ref(), schema, &KeyPath::default())?;
    T::deserialize(toml::de::Deserializer::from(doc.clone())).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        let reason = e.message().trim_end().to_string();
        match key_at(doc.get_ref(), offset, &KeyPath::default()) {
            Some(key) => ConfigError::InvalidValue {
                at: src.at(offset),
                key,
                reason,
            },
            None => ConfigError::Invalid {
                at: src.at(offset),
                message: reason,
            },
        }
    })
}

fn check_table(
    src: &Source<'_>,
    table: &DeTable<'_>,
    schema: &[(&'static str, Node)],
    path: &KeyPath,
) -> Result<(), ConfigError> {
    // Report the first offending key in file order, not the map's order.
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by_key(|(key, _)| key.span().start);
    for (key, value) in entries {
        let name: &str = key.get_ref();
        let here = path.child(name);
        let Some((_, node)) = schema.iter().find(|(known, _)| *known == name) else {
            if name.len() > MAX_KEY_BYTES {
                return Err(ConfigError::Invalid {
                    at: src.at(key.span().start),
                    message: format!(
                        "a key {} bytes long {}; no key is longer than {MAX_KEY_BYTES}",
                        name.len(),
                        here.place()
                    ),
                });
            }
            return Err(ConfigError::UnknownKey {
                at: src.at(key.span().start),
                key: here,
                expected: schema.iter().map(|(known, _)| known.to_string()).collect(),
            });
        };
        check_value(src, value, *node, &here)?;
    }
    Ok(())
}

fn check_value(
    src: &Source<'_>,
    value: &Spanned<DeValue<'_>>,
    node: Node,
    path: &KeyPath,
) -> Result<(), ConfigError> {
    let wrong_type = |expected: &str| ConfigError::InvalidValue {
        at: src.at(value.span().start),
        key: path.clone(),
        reason: format!("expected {expected}, found {}", value.get_ref().type_str()),
    };
    match (node, value.get_ref()) {
        (Node::Value, DeValue::Table(_)) => Err(wrong_type("a value")),
        (Node::Value, _) => check_length(src, value, path),
        (Node::Table(schema), DeValue::Table(table)) => check_table(src, table, schema, path),
        (Node::Names(names), DeValue::Table(table)) => {
            let names = names();
            let mut entries: Vec<_> = table.iter().collect();
            entries.sort_by_key(|(key, _)| key.span().start);
            for (key, value) in entries {
                let name: &str = key.get_ref();
                if !names.iter().any(|known| known == name) {
                    return Err(ConfigError::UnknownKey {
                        at: src.at(key.span().start),
                        key: path.child(name),
                        expected: names,
                    });
                }
                check_value(src, value, Node::Value, &path.child(name))?;
            }
            Ok(())
        }
        (Node::Table(_) | Node::Names(_), _) => Err(wrong_type("a table")),
    }
}

/// Refuses a string longer than [`MAX_VALUE_BYTES`], in `value` or anywhere inside it.
fn check_length(
    src: &Source<'_>,
    value: &Spanned<DeValue<'_>>,
    path: &KeyPath,
) -> Result<(), ConfigError> {
    match value.get_ref() {
        DeValue::String(text) if text.len() > MAX_VALUE_BYTES => Err(ConfigError::InvalidValue {
            at: src.at(value.span().start),
            key: path.clone(),
            reason: format!(
                "the value is {} bytes long; a value may be at most {MAX_VALUE_BYTES}",
                text.len()
            ),
        }),
        DeValue::Array(items) => items
            .iter()
            .try_for_each(|item| check_length(src, item, path)),
        DeValue::Table(table) => table
            .iter()
            .try_for_each(|(key, item)| check_length(src, item, &path.child(key.get_ref()))),
        DeValue::String(_)
        | DeValue::Integer(_)
        | DeValue::Float(_)
        | DeValue::Boolean(_)
        | DeValue::Datetime(_) => Ok(()),
    }
}

/// The key whose name or value contains byte `offset`, innermost first.
fn key_at(table: &DeTable<'_>, offset: usize, path: &KeyPath) -> Option<KeyPath> {
    for (key, value) in table.iter() {
        let here = path.child(key.get_ref());
        if key.span().contains(&offset) {
            return Some(here);
        }
        let inner = match value.get_ref() {
            DeValue::Table(inner) => key_at(inner, offset, &here),
            DeValue::Array(items) => items.iter().find_map(|item| match item.get_ref() {
                DeValue::Table(inner) => key_at(inner, offset, &here),
                _ if item.span().contains(&offset) => Some(here.clone()),
                _ => None,
            }),
            _ => None,
        };
        if inner.is_some() {
            return inner;
        }
        if value.span().contains(&offset) {
            return Some(here);
        }
    }
    None
}
