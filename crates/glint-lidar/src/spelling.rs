//! The names of the enumerated settings. Each enum lists its values and their spellings once,
//! beside its definition, through [`spelled!`]; the manifest, the recorder's sidecar, the
//! command line and the server all read and write them through [`Spelled`].

use crate::LidarError;

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
    fn from_name(name: &str) -> Result<Self, LidarError> {
        Self::NAMES.iter().find(|(_, n)| *n == name).map(|(v, _)| *v).ok_or_else(|| LidarError::UnknownName {
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
    fn from_index(index: i64) -> Result<Self, LidarError> {
        usize::try_from(index).ok().and_then(|i| Self::NAMES.get(i)).map(|(v, _)| *v).ok_or_else(|| {
            let valid = Self::NAMES.iter().enumerate().map(|(i, (_, n))| format!("{i} ({n})")).collect::<Vec<_>>();
            LidarError::UnknownIndex { what: Self::WHAT, index, valid: valid.join(", ") }
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
macro_rules! spelled {
    ($ty:ident, $what:literal, [$($variant:ident => $name:literal),+ $(,)?]) => {
        impl $crate::Spelled for $ty {
            const WHAT: &'static str = $what;
            const NAMES: &'static [(Self, &'static str)] = &[$(($ty::$variant, $name)),+];
        }
        $crate::spelling::spelled_text!($ty);
    };
}

/// `Display`, `FromStr`, `Serialize` and `Deserialize` through a type's [`Spelled`] names.
macro_rules! spelled_text {
    ($ty:ident) => {
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str($crate::Spelled::name(*self))
            }
        }

        impl std::str::FromStr for $ty {
            type Err = $crate::LidarError;

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

pub(crate) use {spelled, spelled_text};

#[cfg(test)]
mod tests {
    use crate::{
        ColourBy, Continuation, MaterialPreset, Metal, Ramp, ReturnPreset, ScanPattern, ScanPreset, SecondaryCapture,
        SecondaryScope, SelfIgnore, Spelled,
    };

    /// Every name reads back as its value, by name and by index, and through serde.
    fn round_trips<T: Spelled + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned>() {
        for (i, v) in T::all().enumerate() {
            assert_eq!(T::from_name(v.name()).unwrap(), v);
            assert_eq!(T::from_index(i as i64).unwrap(), v);
            assert_eq!(v.index(), i);
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, format!("\"{}\"", v.name()));
            assert_eq!(serde_json::from_str::<T>(&json).unwrap(), v);
        }
        let err = T::from_name("no-such-name").unwrap_err().to_string();
        assert!(err.contains(T::WHAT) && err.contains(&T::names()), "{err}");
        assert!(T::from_index(T::NAMES.len() as i64).is_err() && T::from_index(-1).is_err());
        assert!(serde_json::from_str::<T>("\"no-such-name\"").unwrap_err().to_string().contains(T::WHAT));
    }

    #[test]
    fn every_spelling_reads_back() {
        round_trips::<SelfIgnore>();
        round_trips::<SecondaryCapture>();
        round_trips::<SecondaryScope>();
        round_trips::<ScanPreset>();
        round_trips::<ReturnPreset>();
        round_trips::<Continuation>();
        round_trips::<MaterialPreset>();
        round_trips::<Metal>();
        round_trips::<ColourBy>();
        round_trips::<Ramp>();
        for p in ScanPattern::all() {
            assert_eq!(ScanPattern::from_name(p.name()).unwrap(), p);
        }
    }

    #[test]
    fn names_are_unique_and_in_the_seeds_order() {
        assert_eq!(SelfIgnore::names(), "none, mount-body, whole-robot");
        assert_eq!(SecondaryCapture::names(), "off, pass-through, reflected, both");
        assert_eq!(ReturnPreset::names(), "generic, unitree-l1, livox-mid360, ouster-os1");
        assert_eq!(ScanPattern::names(), "spinning, livox-mid360, unitree-l1, risley");
        assert_eq!(ColourBy::NAMES.len(), 12);
        for names in [ColourBy::names(), MaterialPreset::names(), Continuation::names()] {
            let list: Vec<&str> = names.split(", ").collect();
            let mut unique = list.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), list.len(), "{names}");
        }
    }
}
