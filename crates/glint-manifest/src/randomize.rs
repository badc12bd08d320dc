//! `[randomize]`: per-world draws of model fields at each episode reset.
//!
//! ```toml
//! [randomize.geom_rgba]
//! cube = { uniform = [[0.2, 0.0, 0.0, 1.0], [1.0, 0.3, 0.3, 1.0]] }
//! [randomize.light_diffuse]
//! sun = { normal = [[0.9, 0.9, 0.9], [0.05, 0.05, 0.05]] }
//! [randomize.geom_matid]
//! floor = { choice = [1, 4] }
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::ManifestError;
use crate::values::Exact;

/// How a value is drawn; each number stands for one component of the field's value (a
/// scalar field takes plain numbers).
#[derive(Clone, Debug, PartialEq)]
pub enum Distribution {
    /// Uniform between `lo` and `hi`, per component.
    Uniform {
        /// Lower bounds.
        lo: Vec<f64>,
        /// Upper bounds (each at least its lower bound).
        hi: Vec<f64>,
    },
    /// Normal with `mean` and standard deviation `std`, per component (draws are clipped to
    /// the field's range).
    Normal {
        /// Means.
        mean: Vec<f64>,
        /// Standard deviations, 0 or more.
        std: Vec<f64>,
    },
    /// One of these values, each as likely.
    Choice(Vec<Vec<f64>>),
}

impl Distribution {
    /// How many numbers each drawn value has.
    pub fn width(&self) -> usize {
        match self {
            Distribution::Uniform { lo, .. } => lo.len(),
            Distribution::Normal { mean, .. } => mean.len(),
            Distribution::Choice(values) => values.first().map_or(0, Vec::len),
        }
    }
}

/// One randomized field of one named geom, material, light or camera.
#[derive(Clone, Debug, PartialEq)]
pub struct Randomization {
    /// The field (MuJoCo Warp's name, e.g. `geom_rgba`); checked against the scene later.
    pub field: String,
    /// The geom, material, light or camera it applies to, by name.
    pub target: String,
    /// How its value is drawn.
    pub distribution: Distribution,
}

/// A number or a list of numbers, as written.
#[derive(Clone, Debug)]
enum Numbers {
    One(f64),
    Many(Vec<f64>),
}

/// Read by one visitor, not `#[serde(untagged)]`: an untagged enum's error says only that
/// nothing matched, where this one names the element and its type.
impl<'de> Deserialize<'de> for Numbers {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NumbersVisitor)
    }
}

struct NumbersVisitor;

impl<'de> serde::de::Visitor<'de> for NumbersVisitor {
    type Value = Numbers;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a number or an array of numbers")
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Numbers, E> {
        Ok(Numbers::One(v as f64))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Numbers, E> {
        Ok(Numbers::One(v as f64))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Numbers, E> {
        Ok(Numbers::One(v))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Numbers, A::Error> {
        let mut values = Vec::new();
        while let Some(v) = seq.next_element::<f64>()? {
            values.push(v);
        }
        Ok(Numbers::Many(values))
    }
}

impl Numbers {
    fn list(self) -> Vec<f64> {
        match self {
            Numbers::One(x) => vec![x],
            Numbers::Many(v) => v,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDistribution {
    uniform: Option<Exact<2, Numbers>>,
    normal: Option<Exact<2, Numbers>>,
    choice: Option<Vec<Numbers>>,
}

/// `[randomize]` as written: field → target → distribution.
pub(crate) type RawRandomize = BTreeMap<String, BTreeMap<String, RawDistribution>>;

/// The randomizations of `raw`, each distribution checked on its own (bounds ordered, finite
/// numbers, matching lengths, a non-empty choice).
pub(crate) fn randomizations(raw: &RawRandomize, path: &Path) -> Result<Vec<Randomization>, ManifestError> {
    let mut out = Vec::new();
    for (field, targets) in raw {
        for (target, d) in targets {
            let bad = |message: String| ManifestError::Value {
                path: path.to_path_buf(),
                message: format!("[randomize.{field}] {target}: {message}"),
            };
            let given = [d.uniform.is_some(), d.normal.is_some(), d.choice.is_some()].iter().filter(|g| **g).count();
            if given != 1 {
                return Err(bad(
                    "give exactly one of uniform = [lo, hi], normal = [mean, std], choice = [a, b, ...]".into()
                ));
            }
            let distribution = if let Some(Exact([lo, hi])) = d.uniform.clone() {
                let (lo, hi) = (lo.list(), hi.list());
                check_pair(&lo, &hi, "lo", "hi").map_err(bad)?;
                if let Some(k) = (0..lo.len()).find(|&k| lo[k] > hi[k]) {
                    return Err(bad(format!("uniform has lo {} above hi {} (component {k}); swap them", lo[k], hi[k])));
                }
                Distribution::Uniform { lo, hi }
            } else if let Some(Exact([mean, std])) = d.normal.clone() {
                let (mean, std) = (mean.list(), std.list());
                check_pair(&mean, &std, "mean", "std").map_err(bad)?;
                if let Some(s) = std.iter().find(|s| **s < 0.0) {
                    return Err(bad(format!("normal has std {s}; a standard deviation is 0 or more")));
                }
                Distribution::Normal { mean, std }
            } else {
                let values: Vec<Vec<f64>> =
                    d.choice.clone().unwrap_or_default().into_iter().map(Numbers::list).collect();
                if values.is_empty() {
                    return Err(bad("choice is empty; list the values to pick from".into()));
                }
                if values.iter().any(|v| v.len() != values[0].len() || v.is_empty()) {
                    return Err(bad("choice's values have different lengths; give each value whole".into()));
                }
                if let Some(x) = values.iter().flatten().find(|x| !x.is_finite()) {
                    return Err(bad(format!("choice holds {x}; every number must be finite")));
                }
                Distribution::Choice(values)
            };
            out.push(Randomization { field: field.clone(), target: target.clone(), distribution });
        }
    }
    Ok(out)
}

fn check_pair(a: &[f64], b: &[f64], an: &str, bn: &str) -> Result<(), String> {
    if a.is_empty() || a.len() != b.len() {
        return Err(format!("{an} has {} numbers and {bn} {}; give both the field's width", a.len(), b.len()));
    }
    if let Some(x) = a.iter().chain(b).find(|x| !x.is_finite()) {
        return Err(format!("{x} is not a finite number"));
    }
    Ok(())
}
