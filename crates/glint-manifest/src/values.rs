//! Value shapes the manifest reads that serde's own impls read too loosely: an array of
//! exactly `N` values ([`glint_core::Exact`], shared with the light rigs: serde's `[f64; N]`
//! takes the first `N` of a longer TOML array and drops the rest without a word), and a
//! number kept as written (an integer stays exact, so an error echoes `4294967295`, not its
//! nearest `f64`).

pub(crate) use glint_core::Exact;

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, Visitor};

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
