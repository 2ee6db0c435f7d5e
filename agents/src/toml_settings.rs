//! Reading the TOML settings files (the tools file, the workers file) into their serde-derived
//! structs, with the byte span of every problem.
//!
//! Why not `toml::from_str`: serde compiles a deserializer's code once per type it reads, and
//! toml's `ValueDeserializer` is large (integers in four widths and radixes, dates, its table
//! and array deserializers with their checks): one copy per settings type made toml the
//! largest dependency of the Worker (about 190 KiB of code, 63 KiB gzip; BENCHMARKS.md, "The
//! model Worker's size and start-up"). Here toml only parses (`DeTable::parse`, compiled once),
//! numbers are read once into a small tree, and the deserializer over that tree is a few
//! lines per type. What a derive sees is what toml gave it: strings, `i64`, `f64`, booleans,
//! arrays, tables (in toml's key order), and [`Spanned`] values with their spans. Errors carry
//! the span of the innermost value (or key, for an unknown one) they are about, as toml's do,
//! when they are made inside the deserializer's call: a type's own check belongs in its
//! visitor (as `workers_file`'s `Usd`), not after `f64::deserialize` returned, where no value
//! would be placed (unlike toml, no per-value span is added on the way out: that was 2 KiB
//! gzip of the Worker).
//! A date or time is refused where it is written: no setting takes one.

use std::ops::Range;

use serde::de::value::StringDeserializer;
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// Why a settings file cannot be read, and where (byte offsets into it).
#[derive(Debug)]
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

    /// This error, placed at `span` unless a more precise place is already known (kept
    /// non-generic: called from every instantiation of the deserializer).
    fn at(mut self, span: &Range<usize>) -> Self {
        if self.span.is_none() {
            self.span = Some(span.clone());
        }
        self
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Self {
            message: msg.to_string(),
            span: None,
        }
    }
}

/// A parsed TOML value with its span: what the derives read.
#[derive(Clone, Debug)]
pub(crate) struct Item {
    span: Range<usize>,
    node: Node,
}

#[derive(Clone, Debug)]
enum Node {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Array(Vec<Item>),
    Table(Vec<(Key, Item)>),
}

#[derive(Clone, Debug)]
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

/// Reads `T` from a parsed document.
///
/// # Errors
/// What `T`'s derive refuses, with the span of the value (or key) it is about.
pub(crate) fn read<T: de::DeserializeOwned>(doc: Item) -> Result<T, Error> {
    T::deserialize(doc)
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
    let refuse = |message: &str| Error {
        message: message.to_owned(),
        span: Some(span.clone()),
    };
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

impl<'de> de::Deserializer<'de> for Item {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let span = self.span;
        match self.node {
            Node::Str(s) => visitor.visit_string(s),
            Node::Int(i) => visitor.visit_i64(i),
            Node::Float(f) => visitor.visit_f64(f),
            Node::Bool(b) => visitor.visit_bool(b),
            Node::Array(a) => visitor.visit_seq(Seq(a.into_iter())),
            Node::Table(t) => visitor.visit_map(Table {
                entries: t.into_iter(),
                value: None,
            }),
        }
        .map_err(|e| e.at(&span))
    }

    // `None` is a missing key: a present one is `Some`.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let span = self.span.clone();
        visitor.visit_some(self).map_err(|e| e.at(&span))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        let span = self.span.clone();
        visitor.visit_newtype_struct(self).map_err(|e| e.at(&span))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        if serde_spanned::de::is_spanned(name) {
            let span = self.span.clone();
            return visitor.visit_map(serde_spanned::de::SpannedDeserializer::new(self, span));
        }
        let _ = fields;
        self.deserialize_any(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let span = self.span;
        match self.node {
            Node::Str(s) => visitor.visit_enum(StringDeserializer::<Error>::new(s)),
            _ => Err(de::Error::custom("wanted a string")),
        }
        .map_err(|e| e.at(&span))
    }

    serde::forward_to_deserialize_any! {
        bool u8 u16 u32 u64 i8 i16 i32 i64 i128 u128 f32 f64 char str string seq
        bytes byte_buf map unit ignored_any unit_struct tuple_struct tuple identifier
    }
}

impl<'de> IntoDeserializer<'de, Error> for Item {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

/// An array's items.
struct Seq(std::vec::IntoIter<Item>);

impl<'de> SeqAccess<'de> for Seq {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.0.next().map(|i| seed.deserialize(i)).transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

/// A table's keys (each with its span: an unknown key is refused where it is written) and
/// values.
struct Table {
    entries: std::vec::IntoIter<(Key, Item)>,
    value: Option<Item>,
}

impl<'de> MapAccess<'de> for Table {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        seed.deserialize(StringDeserializer::<Error>::new(key.name))
            .map(Some)
            .map_err(|e| e.at(&key.span))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match self.value.take() {
            Some(value) => seed.deserialize(value),
            None => Err(de::Error::custom("a value asked for before its key")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Settings {
        name: Spanned<String>,
        count: Option<u64>,
        ratio: Option<f64>,
        on: Option<bool>,
        list: Option<Vec<String>>,
        #[serde(default)]
        tables: BTreeMap<String, Spanned<Inner>>,
    }

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        x: i64,
    }

    fn read_str<T: de::DeserializeOwned>(s: &str) -> Result<T, Error> {
        read(parse(s)?)
    }

    #[test]
    fn values_and_spans_are_read_as_written() {
        let src = "name = \"a\"\ncount = 0x10\nratio = 2\non = true\nlist = [\"p\", 'q']\n\
                   [tables.t]\nx = -3\n";
        let s: Settings = read_str(src).unwrap();
        assert_eq!(s.name.get_ref(), "a");
        assert_eq!(&src[s.name.span()], "\"a\"");
        assert_eq!(s.count, Some(16));
        assert_eq!(s.ratio, Some(2.0));
        assert_eq!(s.on, Some(true));
        assert_eq!(s.list, Some(vec!["p".to_owned(), "q".to_owned()]));
        assert_eq!(s.tables["t"].get_ref().x, -3);
    }

    #[test]
    fn errors_point_at_the_key_or_value_they_are_about() {
        let src = "name = \"a\"\n[tables.t]\nx = 1\ny = 2\n";
        let e = read_str::<Settings>(src).unwrap_err();
        assert!(e.message().contains("unknown field `y`"), "{e}");
        assert_eq!(e.span().map(|s| &src[s]), Some("y"));

        let src = "name = \"a\"\ncount = -1\n";
        let e = read_str::<Settings>(src).unwrap_err();
        assert!(e.message().contains("-1"), "{e}");
        assert_eq!(e.span().map(|s| &src[s]), Some("-1"));

        let src = "name = 1\n";
        let e = read_str::<Settings>(src).unwrap_err();
        assert!(e.message().contains("invalid type: integer"), "{e}");
        assert_eq!(e.span().map(|s| &src[s]), Some("1"));

        let e = read_str::<Settings>("count = 1\n").unwrap_err();
        assert!(e.message().contains("missing field `name`"), "{e}");

        let src = "name = \"a\"\nwhen = 1979-05-27\n";
        let e = read_str::<Settings>(src).unwrap_err();
        assert!(e.message().contains("date or time"), "{e}");
        assert_eq!(e.span().map(|s| &src[s]), Some("1979-05-27"));

        let src = "name = \"a\"\ncount = 99999999999999999999\n";
        let e = read_str::<Settings>(src).unwrap_err();
        assert!(e.message().contains("overflowed"), "{e}");

        let e = read_str::<Settings>("name = \"a\nx").unwrap_err();
        assert!(e.span().is_some(), "{e}");
    }
}
