//! Reading the TOML settings files (the tools file, the workers file) by hand over toml's
//! parse, with the byte span of every problem.
//!
//! Why not serde: serde compiles a deserializer's code once per type it reads, and one copy per
//! settings type made the two files' code 188 KiB of the model Worker (87 KiB without serde,
//! checks included: 801 → 765 KiB gzip; BENCHMARKS.md, "The model Worker's size and
//! start-up"). Here toml only parses (`DeTable::parse`), numbers are read once into a small
//! tree ([`Item`]), and each settings table is read by a plain function over it:
//! [`Item::fields`] walks a table's keys (an unknown one refused where it is written), and
//! [`Item::string`], [`Item::u64`] and the others read a value or refuse it where it is
//! written. The messages are serde's, word for word, as the files were read before (users and
//! tests know them): "unknown field `x`, expected one of …", "missing field `x`" (at the
//! table), "invalid type: integer `1`, expected a string" (at the value).
//!
//! One difference from serde on purpose: serde read a table given as an array by position
//! (`limits = [10, 0, 2.0, 3.0]`), which no reader of the file could check by eye; that is
//! refused, where the array is written.
//!
//! A date or time is refused where it is written: no setting takes one.

use std::fmt::Write as _;
use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// Why a settings file cannot be read, and where (byte offsets into it).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub(crate) struct Error {
    message: String,
    span: Option<Range<usize>>,
}

impl Error {
    /// What is wrong.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// Where, if known.
    pub(crate) fn span(&self) -> Option<Range<usize>> {
        self.span.clone()
    }

    /// `message`, placed at `span`.
    pub(crate) fn at(span: &Range<usize>, message: String) -> Self {
        Self {
            message,
            span: Some(span.clone()),
        }
    }
}

/// A parsed TOML value with its span: what the settings readers read.
#[derive(Debug)]
pub(crate) struct Item {
    span: Range<usize>,
    node: Node,
}

#[derive(Debug)]
enum Node {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Array(Vec<Item>),
    Table(Vec<(Key, Item)>),
}

/// A table's key, with its span.
#[derive(Debug)]
struct Key {
    name: String,
    span: Range<usize>,
}

/// Parses a TOML document.
///
/// # Errors
/// A syntax error (toml's message and span), an integer outside `i64`, a float that
/// overflows, or a date or time.
pub(crate) fn parse(source: &str) -> Result<Item, Error> {
    let doc = DeTable::parse(source).map_err(|e| Error {
        message: e.message().trim().to_owned(),
        span: e.span(),
    })?;
    let span = doc.span();
    Ok(Item {
        node: table(doc.into_inner())?,
        span,
    })
}

fn table(t: DeTable<'_>) -> Result<Node, Error> {
    let mut entries = Vec::with_capacity(t.len());
    for (k, v) in t {
        let key = Key {
            span: k.span(),
            name: k.into_inner().into_owned(),
        };
        entries.push((key, item(v)?));
    }
    Ok(Node::Table(entries))
}

fn item(v: Spanned<DeValue<'_>>) -> Result<Item, Error> {
    let span = v.span();
    let refuse = |message: &str| Error::at(&span, message.to_owned());
    let node = match v.into_inner() {
        DeValue::String(s) => Node::Str(s.into_owned()),
        DeValue::Integer(i) => Node::Int(
            i64::from_str_radix(i.as_str(), i.radix())
                .map_err(|_| refuse("integer number overflowed"))?,
        ),
        DeValue::Float(f) => {
            let text = f.as_str();
            match text.parse::<f64>() {
                // An infinity only where one is written (`inf`), not from an overflow; `nan`
                // is read as written (a setting refuses it where it must).
                Ok(x) if !x.is_infinite() || text.contains("inf") => Node::Float(x),
                _ => return Err(refuse("floating-point number overflowed")),
            }
        }
        DeValue::Boolean(b) => Node::Bool(b),
        DeValue::Datetime(_) => {
            return Err(refuse(
                "a date or time is not a value any setting here takes: quote it as a string",
            ));
        }
        DeValue::Array(a) => Node::Array(a.into_iter().map(item).collect::<Result<_, _>>()?),
        DeValue::Table(t) => table(t)?,
    };
    Ok(Item { span, node })
}

/// `value`, or serde's "missing field" error at the table (`span`) that lacks it.
pub(crate) fn required<T>(value: Option<T>, name: &str, span: &Range<usize>) -> Result<T, Error> {
    value.ok_or_else(|| Error::at(span, format!("missing field `{name}`")))
}

impl Item {
    /// Where the value is written.
    pub(crate) fn span(&self) -> Range<usize> {
        self.span.clone()
    }

    /// The value if it is a string.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match &self.node {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value if it is `true` or `false`.
    pub(crate) fn as_bool(&self) -> Option<bool> {
        match self.node {
            Node::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The value if it is a number (an integer read as a float).
    pub(crate) fn as_f64(&self) -> Option<f64> {
        match self.node {
            Node::Int(i) => Some(i as f64),
            Node::Float(f) => Some(f),
            _ => None,
        }
    }

    /// serde's "invalid type" error for this value where `expected` was wanted, at the value.
    pub(crate) fn invalid_type(&self, expected: &str) -> Error {
        let mut message = String::from("invalid type: ");
        // serde's `Unexpected` as it displays each kind of value.
        let _ = match &self.node {
            Node::Str(s) => write!(message, "string {s:?}"),
            Node::Int(i) => write!(message, "integer `{i}`"),
            Node::Float(f) if f.is_finite() && !f.to_string().contains('.') => {
                write!(message, "floating point `{f}.0`")
            }
            Node::Float(f) => write!(message, "floating point `{f}`"),
            Node::Bool(b) => write!(message, "boolean `{b}`"),
            Node::Array(_) => write!(message, "sequence"),
            Node::Table(_) => write!(message, "map"),
        };
        let _ = write!(message, ", expected {expected}");
        Error::at(&self.span, message)
    }

    /// A string.
    ///
    /// # Errors
    /// Any other value.
    pub(crate) fn string(self) -> Result<String, Error> {
        match self.node {
            Node::Str(s) => Ok(s),
            _ => Err(self.invalid_type("a string")),
        }
    }

    /// A string, with its span.
    ///
    /// # Errors
    /// Any other value.
    pub(crate) fn spanned_string(self) -> Result<Spanned<String>, Error> {
        let span = self.span();
        self.string().map(|s| Spanned::new(span, s))
    }

    /// `true` or `false`.
    ///
    /// # Errors
    /// Any other value.
    pub(crate) fn bool(self) -> Result<bool, Error> {
        match self.node {
            Node::Bool(b) => Ok(b),
            _ => Err(self.invalid_type("a boolean")),
        }
    }

    /// An integer of 0 or more.
    ///
    /// # Errors
    /// A negative integer, or any other value.
    pub(crate) fn u64(self) -> Result<u64, Error> {
        match self.node {
            Node::Int(i) => u64::try_from(i).map_err(|_| {
                Error::at(
                    &self.span,
                    format!("invalid value: integer `{i}`, expected u64"),
                )
            }),
            _ => Err(self.invalid_type("u64")),
        }
    }

    /// A number (an integer read as a float), or an "invalid type" error naming `expected`.
    ///
    /// # Errors
    /// Any other value.
    pub(crate) fn number(self, expected: &str) -> Result<f64, Error> {
        self.as_f64().ok_or_else(|| self.invalid_type(expected))
    }

    /// An array's items.
    ///
    /// # Errors
    /// Any other value.
    pub(crate) fn array(self) -> Result<Vec<Item>, Error> {
        match self.node {
            Node::Array(items) => Ok(items),
            _ => Err(self.invalid_type("a sequence")),
        }
    }

    /// An array of strings.
    ///
    /// # Errors
    /// Any other value, or an item that is not a string (at the item).
    pub(crate) fn strings(self) -> Result<Vec<String>, Error> {
        self.array()?.into_iter().map(Item::string).collect()
    }

    /// A table whose keys are names (workers, prices…), in the parser's order.
    ///
    /// # Errors
    /// Any other value.
    pub(crate) fn map(self) -> Result<Vec<(String, Item)>, Error> {
        match self.node {
            Node::Table(entries) => Ok(entries.into_iter().map(|(k, v)| (k.name, v)).collect()),
            _ => Err(self.invalid_type("a map")),
        }
    }

    /// A table of settings named `fields`: each entry's value goes to `read` with its field's
    /// name (one of `fields`), in the parser's order; returns the table's span (where a missing field is
    /// refused: [`required`]). `what` names the settings in errors as serde named the struct.
    ///
    /// # Errors
    /// An unknown key (at the key), what `read` refuses, a value that is not a table; an
    /// array is refused with a hint, as serde would have read it by position.
    pub(crate) fn fields(
        self,
        what: &str,
        fields: &[&str],
        read: &mut dyn FnMut(&str, Item) -> Result<(), Error>,
    ) -> Result<Range<usize>, Error> {
        let entries = match self.node {
            Node::Table(entries) => entries,
            Node::Array(_) => {
                return Err(Error::at(
                    &self.span,
                    format!(
                        "invalid type: sequence, expected struct {what}: a table is written \
                         with its keys (`{{ key = value, … }}`), not as an array of its values"
                    ),
                ));
            }
            _ => return Err(self.invalid_type(&format!("struct {what}"))),
        };
        for (key, value) in entries {
            if !fields.contains(&key.name.as_str()) {
                return Err(Error::at(&key.span, unknown_field(&key.name, fields)));
            }
            read(&key.name, value)?;
        }
        Ok(self.span)
    }

    /// The value as JSON: integers and floats as numbers (`nan` and infinities as `null`, as
    /// serde_json reads them), tables as objects.
    pub(crate) fn json(self) -> serde_json::Value {
        use serde_json::Value;
        match self.node {
            Node::Str(s) => Value::String(s),
            Node::Int(i) => Value::from(i),
            Node::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
            Node::Bool(b) => Value::Bool(b),
            Node::Array(items) => Value::Array(items.into_iter().map(Item::json).collect()),
            Node::Table(entries) => Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.name, v.json()))
                    .collect(),
            ),
        }
    }
}

/// serde's message for a key no field has.
fn unknown_field(name: &str, fields: &[&str]) -> String {
    let mut message = format!("unknown field `{name}`, ");
    let _ = match fields {
        [] => write!(message, "there are no fields"),
        [one] => write!(message, "expected `{one}`"),
        [a, b] => write!(message, "expected `{a}` or `{b}`"),
        _ => {
            message.push_str("expected one of ");
            for (i, f) in fields.iter().enumerate() {
                if i > 0 {
                    message.push_str(", ");
                }
                let _ = write!(message, "`{f}`");
            }
            Ok(())
        }
    };
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small settings table read the way the files' tables are.
    #[derive(Debug, Default)]
    struct Settings {
        name: Option<Spanned<String>>,
        count: Option<u64>,
        ratio: Option<f64>,
        on: Option<bool>,
        list: Option<Vec<String>>,
        tables: Vec<(String, i64)>,
    }

    fn read_str(src: &str) -> Result<Settings, Error> {
        let doc = parse(src)?;
        let mut s = Settings::default();
        let span = doc.fields(
            "Settings",
            &["name", "count", "ratio", "on", "list", "tables"],
            &mut |key, v| {
                match key {
                    "name" => s.name = Some(v.spanned_string()?),
                    "count" => s.count = Some(v.u64()?),
                    "ratio" => s.ratio = Some(v.number("f64")?),
                    "on" => s.on = Some(v.bool()?),
                    "list" => s.list = Some(v.strings()?),
                    "tables" => {
                        for (k, t) in v.map()? {
                            let mut x = None;
                            let span = t.fields("Inner", &["x"], &mut |_, v| {
                                x = v.as_f64().map(|f| f as i64);
                                Ok(())
                            })?;
                            s.tables.push((k, required(x, "x", &span)?));
                        }
                    }
                    _ => unreachable!("`{key}` is listed without its reader"),
                }
                Ok(())
            },
        )?;
        required(s.name.as_ref(), "name", &span)?;
        Ok(s)
    }

    #[test]
    fn values_and_spans_are_read_as_written() {
        let src = "name = \"a\"\ncount = 0x10\nratio = 2\non = true\nlist = [\"p\", 'q']\n\
                   [tables.t]\nx = -3\n";
        let s = read_str(src).unwrap();
        let name = s.name.unwrap();
        assert_eq!(name.get_ref(), "a");
        assert_eq!(&src[name.span()], "\"a\"");
        assert_eq!(s.count, Some(16));
        assert_eq!(s.ratio, Some(2.0));
        assert_eq!(s.on, Some(true));
        assert_eq!(s.list, Some(vec!["p".to_owned(), "q".to_owned()]));
        assert_eq!(s.tables, [("t".to_owned(), -3)]);
    }

    #[test]
    fn errors_point_at_the_key_or_value_they_are_about() {
        let src = "name = \"a\"\n[tables.t]\nx = 1\ny = 2\n";
        let e = read_str(src).unwrap_err();
        assert_eq!(e.message(), "unknown field `y`, expected `x`");
        assert_eq!(e.span().map(|s| &src[s]), Some("y"));

        let src = "name = \"a\"\ncount = -1\n";
        let e = read_str(src).unwrap_err();
        assert_eq!(e.message(), "invalid value: integer `-1`, expected u64");
        assert_eq!(e.span().map(|s| &src[s]), Some("-1"));

        let src = "name = 1\n";
        let e = read_str(src).unwrap_err();
        assert_eq!(e.message(), "invalid type: integer `1`, expected a string");
        assert_eq!(e.span().map(|s| &src[s]), Some("1"));

        let src = "name = \"a\"\nlist = [\"p\", 2.0]\n";
        let e = read_str(src).unwrap_err();
        assert_eq!(
            e.message(),
            "invalid type: floating point `2.0`, expected a string"
        );
        assert_eq!(e.span().map(|s| &src[s]), Some("2.0"));

        let e = read_str("count = 1\n").unwrap_err();
        assert_eq!(e.message(), "missing field `name`");

        let src = "name = \"a\"\nwhen = 1979-05-27\n";
        let e = read_str(src).unwrap_err();
        assert!(e.message().contains("date or time"), "{e}");
        assert_eq!(e.span().map(|s| &src[s]), Some("1979-05-27"));

        let src = "name = \"a\"\ncount = 99999999999999999999\n";
        let e = read_str(src).unwrap_err();
        assert!(e.message().contains("overflowed"), "{e}");

        let e = read_str("name = \"a\nx").unwrap_err();
        assert!(e.span().is_some(), "{e}");
    }

    /// serde read a table given as an array by position; this reader refuses it where the
    /// array is written.
    #[test]
    fn a_table_given_as_an_array_is_refused_at_the_array() {
        let src = "name = \"a\"\ntables = { t = [1] }\n";
        let e = read_str(src).unwrap_err();
        assert!(e.message().contains("not as an array"), "{e}");
        assert!(e.message().contains("struct Inner"), "{e}");
        assert_eq!(e.span().map(|s| &src[s]), Some("[1]"));
    }
}
