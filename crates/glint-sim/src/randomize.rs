//! `[randomize]`: each world draws its own values of model fields at each episode reset,
//! from its episode's seed, into its row of the per-world fields.

use std::collections::BTreeMap;

use glint_core::{Scene, nearest_name};
use glint_manifest::{Distribution, Randomization};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::SimError;
use crate::fields::{FIELDS, FieldOf, Fields};

/// Keeps the draws' stream apart from `[reset]`'s, which uses the same episode seed.
const STREAM: u64 = 0x5241_4e44_4f4d_495a;

/// One resolved `[randomize]` entry.
#[derive(Clone, Debug)]
struct Draw {
    /// `field/target`, as `episodes.jsonl` reports it.
    label: String,
    field: usize,
    item: usize,
    distribution: Distribution,
    /// Where normal draws are clipped (the field's range).
    range: (f64, f64),
}

/// Every `[randomize]` entry, resolved against the scene.
#[derive(Clone, Debug, Default)]
pub(crate) struct FieldDraws {
    draws: Vec<Draw>,
}

impl FieldDraws {
    /// The entries of `list`, each field and target checked against `scene` and `fields`.
    pub(crate) fn new(list: &[Randomization], scene: &Scene, fields: &Fields) -> Result<FieldDraws, SimError> {
        let draws = list.iter().map(|r| resolve(r, scene, fields)).collect::<Result<_, _>>()?;
        Ok(FieldDraws { draws })
    }

    /// The fields the draws set.
    pub(crate) fn fields(&self) -> Vec<&'static str> {
        self.draws.iter().map(|d| FIELDS[d.field].name).collect()
    }

    /// Whether there is nothing to draw.
    pub(crate) fn is_empty(&self) -> bool {
        self.draws.is_empty()
    }

    /// Draws world `w`'s values (of `nworld`) from `seed` into `fields`; returns them by
    /// `field/target`.
    pub(crate) fn apply(
        &self,
        fields: &mut Fields,
        (w, nworld): (usize, usize),
        seed: u64,
    ) -> Result<BTreeMap<String, Vec<f64>>, SimError> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ STREAM);
        let mut drawn = BTreeMap::new();
        for d in &self.draws {
            let value: Vec<f64> = match &d.distribution {
                Distribution::Uniform { lo, hi } => {
                    lo.iter().zip(hi).map(|(&l, &h)| if l < h { rng.gen_range(l..=h) } else { l }).collect()
                }
                Distribution::Normal { mean, std } => mean
                    .iter()
                    .zip(std)
                    .map(|(&m, &s)| {
                        let x = m + s * standard_normal(&mut rng);
                        x.clamp(d.range.0, d.range.1)
                    })
                    .collect(),
                Distribution::Choice(values) => values[rng.gen_range(0..values.len())].clone(),
            };
            fields.check_values(FIELDS[d.field].name, &value)?;
            fields.set_item(d.field, (w, nworld), d.item, &value);
            drawn.insert(d.label.clone(), value);
        }
        Ok(drawn)
    }
}

/// `r` against the scene: the field, the target's index, the width, and for whole-number
/// fields (ids, types, flags) a choice.
fn resolve(r: &Randomization, scene: &Scene, fields: &Fields) -> Result<Draw, SimError> {
    let bad = |message: String| SimError::Setting(format!("[randomize.{}] {}: {message}", r.field, r.target));
    let field = Fields::index(&r.field).map_err(|e| SimError::Setting(format!("[randomize.{}]: {e}", r.field)))?;
    let spec = FIELDS[field];
    let (name, of, width) = (spec.name, spec.of, spec.width);
    let (kind, names): (&str, &[String]) = match of {
        FieldOf::Geom => ("geom", &scene.geom_name),
        FieldOf::Material => ("material", &scene.mat_name),
        FieldOf::Light => ("light", &scene.light_name),
        FieldOf::Camera => ("camera", &scene.cam_name),
        FieldOf::Body => ("body", &scene.body_name),
        FieldOf::Dof => {
            return Err(bad(format!(
                "{name} is per degree of freedom, which have no names: set it with set_field (shape (rows, nv))"
            )));
        }
    };
    let item = names.iter().position(|n| *n == r.target).ok_or_else(|| {
        let hint = nearest_name(&r.target, names.iter().map(String::as_str)).map_or_else(
            || format!("the scene's {kind}s are {}", names.join(", ")),
            |n| format!("did you mean `{n}`?"),
        );
        bad(format!("the scene has no {kind} named `{}`; {hint}", r.target))
    })?;
    if r.distribution.width() != width {
        return Err(bad(format!(
            "{name} takes {width} number(s) per value, and the distribution gives {}",
            r.distribution.width()
        )));
    }
    if spec.is_whole() && !matches!(r.distribution, Distribution::Choice(_)) {
        return Err(bad(format!("{name} takes whole values: draw it from a choice = [...]")));
    }
    match &r.distribution {
        Distribution::Uniform { lo, hi } => {
            fields.check_values(name, lo).and(fields.check_values(name, hi)).map_err(|e| bad(e.to_string()))?
        }
        Distribution::Choice(values) => {
            for v in values {
                fields.check_values(name, v).map_err(|e| bad(e.to_string()))?;
            }
        }
        Distribution::Normal { .. } => {}
    }
    let range = spec.clip();
    Ok(Draw { label: format!("{name}/{}", r.target), field, item, distribution: r.distribution.clone(), range })
}

/// A standard normal draw (Box–Muller).
fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.r#gen::<f64>(); // in (0, 1]
    let u2: f64 = rng.r#gen();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}
