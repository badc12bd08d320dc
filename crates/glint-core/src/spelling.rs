//! The names of the enumerated settings. Each enum lists its values and their spellings once,
//! beside its definition, through [`spelled!`](crate::spelled); the manifest, the recorder's
//! sidecar, the command line and the server all read and write them through [`Spelled`]. It
//! lives here so that every crate's enums (the lidars', the materials') spell the same way.

/// A name or an index that stands for no value of an enumerated setting.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpellingError {
    /// An unknown name for an enumerated setting.
    #[error("unknown {what} '{name}': use one of {valid}")]
    UnknownName {
        /// What kind of name.
        what: &'static str,
        /// The name given.
        name: String,
        /// The valid names.
        valid: String,
    },
    /// An integer that stands for no value of an enumerated setting (the seed's wire values).
    #[error("{what} {index} does not exist: use {valid}")]
    UnknownIndex {
        /// What kind of value.
        what: &'static str,
        /// The integer given.
        index: i64,
        /// The valid integers and what they stand for.
        valid: String,
    },
}

/// An enumerated setting with one spelling per value: the manifest's, the command line's and
/// the sidecar's name. A value's position in [`Spelled::NAMES`] is the seed's integer for it
/// over the wire (where the seed gives one).
pub trait Spelled: Copy + PartialEq + Sized + 'static {
    /// What a value is, in words, for messages: "self-ignore mode".
    const WHAT: &'static str;
    /// Every value with its name, in the seed's order.
    const NAMES: &'static [(Self, &'static str)];

    /// The value's name.
    fn name(self) -> &'static str {
        Self::NAMES.iter().find(|(v, _)| *v == self).map_or("unknown", |(_, n)| n)
    }

    /// The value called `name`; the error lists the valid names.
    fn from_name(name: &str) -> Result<Self, SpellingError> {
        Self::NAMES.iter().find(|(_, n)| *n == name).map(|(v, _)| *v).ok_or_else(|| SpellingError::UnknownName {
            what: Self::WHAT,
            name: name.into(),
            valid: Self::names(),
        })
    }

    /// The value's position in the seed's order (its integer over the wire).
    fn index(self) -> usize {
        Self::NAMES.iter().position(|(v, _)| *v == self).unwrap_or(usize::MAX)
    }

    /// The value at position `index`; the error lists the valid ones.
    fn from_index(index: i64) -> Result<Self, SpellingError> {
        usize::try_from(index).ok().and_then(|i| Self::NAMES.get(i)).map(|(v, _)| *v).ok_or_else(|| {
            let valid = Self::NAMES.iter().enumerate().map(|(i, (_, n))| format!("{i} ({n})")).collect::<Vec<_>>();
            SpellingError::UnknownIndex { what: Self::WHAT, index, valid: valid.join(", ") }
        })
    }

    /// Every value, in the seed's order.
    fn all() -> impl Iterator<Item = Self> {
        Self::NAMES.iter().map(|(v, _)| *v)
    }

    /// The names, comma-separated, for messages and help texts.
    fn names() -> String {
        Self::NAMES.iter().map(|(_, n)| *n).collect::<Vec<_>>().join(", ")
    }
}

/// Implements [`Spelled`] for an enum from its list of `Variant => "name"`, and with it
/// `Display` (the name), `FromStr` and serde (by name).
#[macro_export]
macro_rules! spelled {
    ($ty:ident, $what:literal, [$($variant:ident => $name:literal),+ $(,)?]) => {
        impl $crate::Spelled for $ty {
            const WHAT: &'static str = $what;
            const NAMES: &'static [(Self, &'static str)] = &[$(($ty::$variant, $name)),+];
        }
        $crate::spelled_text!($ty);
    };
}

/// `Display`, `FromStr`, `Serialize` and `Deserialize` through a type's [`Spelled`] names (the
/// crate using it depends on serde).
#[macro_export]
macro_rules! spelled_text {
    ($ty:ident) => {
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str($crate::Spelled::name(*self))
            }
        }

        impl std::str::FromStr for $ty {
            type Err = $crate::SpellingError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                <$ty as $crate::Spelled>::from_name(s)
            }
        }

        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($crate::Spelled::name(*self))
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                <$ty as $crate::Spelled>::from_name(&name).map_err(serde::de::Error::custom)
            }
        }
    };
}
