//! Values as every front end reads and shows them: an array of exactly `N` values, as every
//! file glint reads (manifests, light rigs) takes a fixed-length array (serde's own `[T; N]`
//! takes the first `N` values of a longer TOML array and drops the rest without a word), and
//! a number as an error message shows it ([`readable`]).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};

/// An array of exactly `N` values (numbers by default); a longer or shorter one is an error
/// that gives its length.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Exact<const N: usize, T = f64>(pub [T; N]);

impl<'de, const N: usize, T: Deserialize<'de>> Deserialize<'de> for Exact<N, T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(ExactVisitor::<N, T>(std::marker::PhantomData))
    }
}

struct ExactVisitor<const N: usize, T>(std::marker::PhantomData<T>);

impl<'de, const N: usize, T: Deserialize<'de>> Visitor<'de> for ExactVisitor<N, T> {
    type Value = Exact<N, T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match N {
            2 => f.write_str("an array of exactly 2 values, [x, y] or [lo, hi]"),
            3 => f.write_str("an array of exactly 3 values, [x, y, z]"),
            n => write!(f, "an array of exactly {n} values"),
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Exact<N, T>, A::Error> {
        let mut items = Vec::with_capacity(N);
        while let Some(v) = seq.next_element::<T>()? {
            items.push(v);
        }
        let count = items.len();
        items.try_into().map(Exact).map_err(|_| de::Error::invalid_length(count, &self))
    }
}

/// `v` as a person reads it in a message: as written when it is of everyday size or a whole
/// number a person types (4294967295), in scientific notation when it is huge or tiny (1e300,
/// not its 301 digits).
pub fn readable(v: f64) -> String {
    let a = v.abs();
    let everyday = (1e-4..1e7).contains(&a) || (v.fract() == 0.0 && a < 1e16);
    if a != 0.0 && a.is_finite() && !everyday { format!("{v:e}") } else { format!("{v}") }
}

/// The field names of the struct `T` derives `Deserialize` for, in declaration order, as
/// serde itself knows them (its `rename`s applied): a list of keys written once, by the
/// struct. A type that is not a struct has none.
pub fn struct_fields<T: de::DeserializeOwned>() -> &'static [&'static str] {
    /// Answers the one question a derived `Deserialize` asks first: it stops at
    /// `deserialize_struct`, keeping the names it is given.
    struct Names<'a>(&'a mut &'static [&'static str]);

    impl<'de> Deserializer<'de> for Names<'_> {
        type Error = de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("names taken"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }

    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Names(&mut fields));
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_and_tiny_values_are_shown_in_scientific_notation() {
        assert_eq!(readable(1e300), "1e300");
        assert_eq!(readable(-2.5e-9), "-2.5e-9");
        assert_eq!(readable(4_294_967_295.0), "4294967295");
        assert_eq!(readable(123_456_789.5), "1.234567895e8");
        assert_eq!(readable(40.0), "40");
        assert_eq!(readable(0.0), "0");
        assert_eq!(readable(f64::NAN), "NaN");
    }

    #[test]
    fn struct_fields_are_the_names_serde_reads() {
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct Table {
            first: f64,
            #[serde(rename = "second_key")]
            second: Option<String>,
        }
        assert_eq!(struct_fields::<Table>(), ["first", "second_key"]);
        assert!(struct_fields::<f64>().is_empty());
    }
}
