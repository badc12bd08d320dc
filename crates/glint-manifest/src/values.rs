//! Value shapes the manifest reads that serde's own impls read too loosely: an array of
//! exactly `N` values (serde's `[f64; N]` takes the first `N` of a longer TOML array and
//! drops the rest without a word), and a number kept as written (an integer stays exact, so
//! an error echoes `4294967295`, not its nearest `f64`).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};

/// An array of exactly `N` values (numbers by default); a longer or shorter one is an error
/// that gives its length.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Exact<const N: usize, T = f64>(pub(crate) [T; N]);

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

/// A number as the manifest wrote it: an integer or a float.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Written {
    /// An integer (kept exact).
    Integer(i128),
    /// A float.
    Float(f64),
}

impl Written {
    /// The value as a float (an integer past 2^53 rounds).
    pub(crate) fn to_f64(self) -> f64 {
        match self {
            Written::Integer(i) => i as f64,
            Written::Float(v) => v,
        }
    }
}

impl fmt::Display for Written {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Written::Integer(i) => write!(f, "{i}"),
            Written::Float(v) => write!(f, "{v}"),
        }
    }
}

impl<'de> Deserialize<'de> for Written {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(WrittenVisitor)
    }
}

struct WrittenVisitor;

impl Visitor<'_> for WrittenVisitor {
    type Value = Written;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Written, E> {
        Ok(Written::Integer(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Written, E> {
        Ok(Written::Integer(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Written, E> {
        Ok(Written::Float(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct T {
        a: Exact<2>,
    }

    #[test]
    fn exact_arrays_refuse_extra_elements() {
        assert_eq!(toml::from_str::<T>("a = [1, 2.5]").unwrap().a, Exact([1.0, 2.5]));
        let err = toml::from_str::<T>("a = [1, 2, 3]").err().unwrap();
        assert!(err.message().contains("invalid length 3, expected an array of exactly 2 values"), "{err}");
        assert!(toml::from_str::<T>("a = [1]").is_err());
        assert!(toml::from_str::<T>("a = [1, \"x\"]").is_err());
    }

    #[test]
    fn written_numbers_keep_integers_exact() {
        #[derive(serde::Deserialize)]
        struct N {
            n: Written,
        }
        let n = toml::from_str::<N>("n = 9223372036854775807").unwrap().n;
        assert_eq!(n.to_string(), "9223372036854775807");
        assert_eq!(toml::from_str::<N>("n = 0.5").unwrap().n, Written::Float(0.5));
    }
}
