//! The return model: what a 905 nm lidar reports for a beam, given the surfaces the beam
//! and its continuations reach. This follows `spec/return-model.md`:
//!
//! **Strength** (1.0 = a perfect matte surface at normal incidence), with `c = cos θ`:
//!
//! ```text
//! m       = max(specSlopeFloor, roughness²)                    RMS microfacet slope (rad)
//! glint   = min(specPeakMax, F0 / (4 m²) · exp(−tan²θ / m²))   monostatic Beckmann peak
//! diffuse = ρ · (1 − metalness) · c
//! retro   = retroGain · c^retroCosExp
//! S       = (1 − r) · (diffuse + glint) + r · retro
//! ```
//!
//! Slab, medium and specular surfaces give a candidate with the glint term only
//! (`(1 − r) · glint + r · retro`); opaque and porous surfaces the whole `S`. A return from
//! behind other surfaces carries every two-way loss of its path: `T²` per slab,
//! `(1 − F0)² · exp(−2 α d)` per medium traversed over `d`, `F0` per fold.
//!
//! **Detection**: `S ≥ detectFloor`; `R < maxRangeAtRef · (S / refReflectivity)^rangeExp`;
//! below `grazingCosCutoff` a return survives with probability `c / grazingCosCutoff`; and
//! the sensor's `[min_range, max_range)`.
//!
//! **Measurement**: range `max(rangeFloor, R + N(0, noiseSigma0 + noiseSlopePerM · R))`;
//! intensity `S · (intensityRefRange / R)² · min(1, R / nearRangeR0)²`; calibrated
//! reflectivity `S`.
//!
//! **Continuations** (at most [`MAX_INTERACTIONS`] surfaces): slab straight on; medium
//! refracted by Snell with n = 1.33 and booked at the optical path (`1.33 ·` the
//! submerged length); porous: with probability `T` the pulse finds a gap and continues at
//! full strength, otherwise it hits as opaque; specular: folds about the normal when
//! `m ≤ foldMaxSlope`, and the folded hit is a phantom booked at the total path along the
//! original beam. Leaving a slab, porous or medium volume (its far face, where the beam runs
//! along the outward normal) is not an interaction: the two faces of a pane count once.
//!
//! One deviation from the spec's loss paragraph: it lists porous gaps among the `T²` losses,
//! but its class table (followed here) says a pulse that finds a gap continues at full
//! strength. The gap draw already has probability `T`; multiplying by `T²` as well would count
//! the gap twice.
//!
//! **Echoes**: detected candidates closer than `minReturnSeparation` merge (the stronger
//! survives); the `maxReturns` strongest are kept; the primary is the strongest and the
//! secondary the next (none when `maxReturns < 2`).
//!
//! Randomness comes from [`BeamRng`], keyed by (seed, world, sensor, beam, tick), so a scan
//! is the same on any number of threads.

use glam::DVec3;

use glint_materials::MaterialLookup;
pub(crate) use glint_materials::{BeamRng, TickKey};

use crate::{Continuation, NirMaterial, PhysicalModel, ReturnParams};

mod lanes;

pub(crate) use lanes::{LANES, LaneReports, Lanes, SurfaceLanes};

/// Most surfaces a beam interacts with (continuations included).
pub(crate) const MAX_INTERACTIONS: usize = 4;

/// Most ghosts of a beam under the physical model: one per pane of its own path, for its
/// first two panes (double glazing).
const MAX_GHOSTS: usize = 2;

/// Most candidates of a beam: its own interactions, and its physical ghosts'.
pub(crate) const MAX_CANDIDATES: usize = (1 + MAX_GHOSTS) * MAX_INTERACTIONS;

/// Most casts per beam (interactions plus far faces of volumes left behind).
const MAX_CASTS: usize = 8;

/// Index of refraction of a medium (water at 905 nm).
pub(crate) const MEDIUM_INDEX: f64 = 1.33;

/// Distance a continuation starts past the surface it leaves (m), so it does not find that
/// surface again.
pub(crate) const NUDGE: f64 = 1e-5;

/// A surface reached by a beam or a continuation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Surface {
    /// Distance along this leg from its start (m).
    pub distance: f64,
    /// The geom.
    pub geomid: i32,
    /// Outward unit normal, world frame.
    pub normal: DVec3,
}

/// What a leg of a beam is, for tracers that replay recorded geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum LegKind {
    /// Straight on past a surface (slab, porous gap, far face of a volume).
    Straight,
    /// Bent into or out of a medium.
    Refracted,
    /// Folded about a specular surface's normal.
    Folded,
}

/// Casts the continuations of a beam.
pub(crate) trait Tracer {
    /// The first surface along `dir` (unit) from `origin`, or `None`. `depth` counts the
    /// legs before this one (1 for the first continuation). `through` is a geom the leg may
    /// pass through (`-1`: none): the convex slab or porous volume it has just entered, whose
    /// far face is no interaction.
    fn cast(&mut self, origin: DVec3, dir: DVec3, kind: LegKind, depth: usize, through: i32) -> Option<Surface>;
}

/// What the model reports for one beam.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BeamReturn {
    /// Measured range of the primary (strongest) echo (m), `-1` for none.
    pub range: f32,
    /// Measured range of the second echo (m), `-1` for none or when `maxReturns < 2`.
    pub secondary_range: f32,
    /// Intensity of the primary echo, `-1` for none or when the material is not resolvable.
    pub intensity: f32,
    /// Calibrated reflectivity (the strength `S`) of the primary echo, `-1` likewise.
    pub reflectivity: f32,
    /// Geom of the primary echo (a phantom reports the surface it folded onto), `-1` for none.
    pub geomid: i32,
}

impl BeamReturn {
    /// No echo.
    pub const NONE: BeamReturn =
        BeamReturn { range: -1.0, secondary_range: -1.0, intensity: -1.0, reflectivity: -1.0, geomid: -1 };
}

/// The terms of a surface's strength at incidence cosine `c`: the formulas term by term, the
/// reference the batched strengths are tested against.
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Strength {
    /// Monostatic Beckmann glint.
    pub glint: f64,
    /// Lambertian term.
    pub diffuse: f64,
    /// Retroreflective term.
    pub retro: f64,
    /// Retroreflective blend `r`.
    pub blend: f64,
}

#[cfg(test)]
impl Strength {
    /// The strength terms of `material` at incidence cosine `c` under `params`.
    pub fn of(params: &ReturnParams, material: &NirMaterial, c: f64) -> Strength {
        let c = c.clamp(0.0, 1.0);
        let optics = Optics::new(params, material);
        let x = glint_exponent(optics.inv_m2, c);
        let glint = optics.glint(params, x, exp_neg(x.min(GLINT_CUTOFF)));
        let blend = optics.blend;
        Strength { glint, diffuse: albedo(material) * c, retro: retro(params, blend, c), blend }
    }

    /// `S` of an opaque (or porous) surface.
    pub fn full(&self) -> f64 {
        (1.0 - self.blend) * (self.diffuse + self.glint) + self.blend * self.retro
    }

    /// `S` of a slab, medium or specular surface: the glint term (and any retroreflection).
    pub fn glint_only(&self) -> f64 {
        (1.0 - self.blend) * self.glint + self.blend * self.retro
    }
}

/// The instruction sets this CPU has, found once.
static ARCH: std::sync::LazyLock<pulp::Arch> = std::sync::LazyLock::new(pulp::Arch::new);

/// [`Optics::strength`] as an operation `pulp` compiles for each instruction set (a struct
/// rather than a closure, which is inlined into the compiled copies only sometimes).
struct StrengthOp<'a> {
    optics: &'a Optics,
    params: &'a ReturnParams,
    c: f64,
}

impl pulp::WithSimd for StrengthOp<'_> {
    type Output = f64;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) -> f64 {
        self.optics.strength_here(self.params, self.c)
    }
}

/// Beyond this exponent the glint is below 1e−34 of its peak, and counts as none.
const GLINT_CUTOFF: f64 = 80.0;

/// The glint's exponent `tan²θ / m²` at incidence cosine `c` (in `[0, 1]`), given `1 / m²`.
#[inline(always)]
fn glint_exponent(inv_m2: f64, c: f64) -> f64 {
    let c2 = c * c;
    if c2 > 0.0 { (1.0 - c2) / c2 * inv_m2 } else { f64::INFINITY }
}

/// `ρ · (1 − metalness)`: the Lambertian term at normal incidence.
#[inline(always)]
fn albedo(material: &NirMaterial) -> f64 {
    material.reflectivity as f64 * (1.0 - material.metalness as f64)
}

/// The retroreflective term `retroGain · c^retroCosExp` (0 without a blend). A whole
/// exponent (the presets' 5) is raised by multiplication, within a few units in the last
/// place of `powf` and several times faster; every path computes it here.
#[inline(always)]
fn retro(params: &ReturnParams, blend: f64, c: f64) -> f64 {
    if blend <= 0.0 {
        return 0.0;
    }
    let e = params.retro_cos_exp;
    let falloff = if e.fract() == 0.0 && e.abs() <= 64.0 { c.powi(e as i32) } else { c.powf(e) };
    params.retro_gain * falloff
}

/// What a material's strength needs under one calibration, worked out once: the parts of
/// [`Strength::of`] that do not depend on the incidence. Slab, medium and specular surfaces
/// count by their glint alone ([`Strength::glint_only`]), so their Lambertian term is zero.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Optics {
    /// `ρ · (1 − metalness)` where the whole strength counts (opaque, porous), else 0.
    lambert: f64,
    f0: f64,
    inv_m2: f64,
    blend: f64,
}

impl Optics {
    /// No material: the NaN Lambertian term makes `S` NaN; the rest keeps the evaluation
    /// finite.
    pub(crate) const NONE: Optics = Optics { lambert: f64::NAN, f0: 0.0, inv_m2: 1.0, blend: 0.0 };

    /// The optics of `material` under `params`.
    pub(crate) fn new(params: &ReturnParams, material: &NirMaterial) -> Optics {
        let m = slope(params, material);
        let whole = matches!(material.continuation, Continuation::Opaque | Continuation::Porous);
        Optics {
            lambert: if whole { albedo(material) } else { 0.0 },
            f0: material.f0 as f64,
            inv_m2: 1.0 / (m * m),
            blend: material.retroreflective as f64,
        }
    }

    /// The candidate strength `S` at incidence cosine `c`: [`Strength::full`] of an opaque
    /// or porous surface, [`Strength::glint_only`] of the others, to the bit. Run with the
    /// CPU's fused multiply-add where it has one: the portable build's `mul_add` in
    /// [`exp_neg`] is otherwise a library call, with the same (exactly rounded) result.
    #[inline]
    pub(crate) fn strength(&self, params: &ReturnParams, c: f64) -> f64 {
        ARCH.dispatch(StrengthOp { optics: self, params, c })
    }

    /// [`Optics::strength`] on the instruction set of its caller.
    #[inline(always)]
    fn strength_here(&self, params: &ReturnParams, c: f64) -> f64 {
        let c = c.clamp(0.0, 1.0);
        let x = glint_exponent(self.inv_m2, c);
        let e = exp_neg(x.min(GLINT_CUTOFF));
        self.combine(params, c, x, e, retro(params, self.blend, c))
    }

    /// `S` from the incidence cosine `c` (in `[0, 1]`), the glint's exponent `x`, `e^−min(x, cutoff)`
    /// and the retroreflective term.
    #[inline(always)]
    fn combine(&self, params: &ReturnParams, c: f64, x: f64, e: f64, retro_term: f64) -> f64 {
        (1.0 - self.blend) * (self.lambert * c + self.glint(params, x, e)) + self.blend * retro_term
    }

    /// The glint `min(specPeakMax, F0 / (4 m²) · e^−x)` given the exponent `x` and
    /// `e^−min(x, cutoff)` (none without F0, or past the cutoff).
    #[inline(always)]
    fn glint(&self, params: &ReturnParams, x: f64, e: f64) -> f64 {
        if self.f0 > 0.0 && x < GLINT_CUTOFF {
            (self.f0 * 0.25 * self.inv_m2 * e).min(params.spec_peak_max)
        } else {
            0.0
        }
    }
}

/// `e^−x` for `0 ≤ x ≤ 80`, within a few units in the last place of `f64::exp`. It has no
/// branches and no calls, so a loop of glints over many beams vectorizes; the one-beam path
/// calls it too, so both give the same strengths to the bit.
#[inline(always)]
pub(crate) fn exp_neg(x: f64) -> f64 {
    // e^−x = 2^k · e^r with k = round(−x / ln 2) and |r| ≤ ln 2 / 2, where Taylor's series to
    // degree 13 is exact to 1e−17. ln 2 is split (fdlibm's halves) so k · ln 2 stays exact.
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    // Adding 1.5 · 2^52 rounds to the nearest integer without a call.
    const ROUND: f64 = 6_755_399_441_055_744.0;
    let y = -x;
    let k = (y * std::f64::consts::LOG2_E + ROUND) - ROUND;
    let r = (-k).mul_add(LN2_LO, (-k).mul_add(LN2_HI, y));
    // Estrin's scheme: a shorter chain of dependent operations than Horner's, for the
    // callers that evaluate one glint at a time.
    let c = &INV_FACTORIALS;
    let (r2, r4) = (r * r, r * r * (r * r));
    let q = |i: usize| c[i + 1].mul_add(r, c[i]);
    let (s0, s1, s2) = (q(2).mul_add(r2, q(0)), q(6).mul_add(r2, q(4)), q(10).mul_add(r2, q(8)));
    let (t0, t1) = (s1.mul_add(r4, s0), q(12).mul_add(r4, s2));
    let p = t1.mul_add(r4 * r4, t0);
    // k ≥ −116 for x ≤ 80, so 2^k is a normal number built from its exponent bits. Adding
    // 2^52 puts the biased exponent k + 1023 in the low mantissa bits, to be shifted into
    // place: a float-to-integer cast would not stay on vector lanes (Rust's saturating
    // cast has no vector instruction below AVX-512).
    const TWO_52: f64 = 4_503_599_627_370_496.0;
    p * f64::from_bits((k + (1023.0 + TWO_52)).to_bits() << 52)
}

/// `1 / n!` for `n ≤ 13`: Taylor's coefficients of `e^r`.
const INV_FACTORIALS: [f64; 14] = {
    let (mut f, mut inv) = (1.0, [1.0; 14]);
    let mut n = 1;
    while n < 14 {
        f *= n as f64;
        inv[n] = 1.0 / f;
        n += 1;
    }
    inv
};

/// RMS slope `m = max(specSlopeFloor, roughness²)` in radians.
pub(crate) fn slope(params: &ReturnParams, material: &NirMaterial) -> f64 {
    params.spec_slope_floor.max(material.slope())
}

/// A possible echo before detection.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Candidate {
    /// Booked range (m), strength `S` and incidence cosine.
    pub(crate) range: f64,
    pub(crate) strength: f64,
    pub(crate) cos: f64,
    pub(crate) geomid: i32,
    /// The strength-weighted spread of the ranges summed into it (m): 0 for one ray's echo,
    /// the footprint's own spread for a beam's waveform ([`ReturnModel::footprint_report`]).
    pub(crate) spread: f64,
}

impl Candidate {
    const NONE: Candidate = Candidate { range: 0.0, strength: 0.0, cos: 0.0, geomid: -1, spread: 0.0 };
}

/// The probability that a return of strength `s` at range `r` and incidence cosine `c` is
/// dropped (the sensor's range window aside).
pub(crate) fn drop_probability(params: &ReturnParams, s: f64, r: f64, c: f64) -> f64 {
    if s < params.detect_floor || r >= params.max_range(s) {
        return 1.0;
    }
    if c < params.grazing_cos_cutoff { 1.0 - c / params.grazing_cos_cutoff } else { 0.0 }
}

impl ReturnParams {
    /// The probability that the model drops a beam whose first surface, of `material`, lies
    /// at `range` metres under incidence cosine `cos_incidence` (the seed's `dropout-prob`
    /// colour mode): the return model's detection rule on that surface's strength.
    pub fn dropout_probability(&self, material: &NirMaterial, range: f64, cos_incidence: f64) -> f64 {
        let strength = Optics::new(self, material).strength(self, cos_incidence);
        drop_probability(self, strength, range, cos_incidence)
    }
}

/// The sensor-side inputs of one beam.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Beam {
    /// Origin (world).
    pub origin: DVec3,
    /// Unit direction (world).
    pub dir: DVec3,
    /// The sensor's `[min_range, max_range)`.
    pub window: (f64, f64),
}

/// How a beam's travel stands between surfaces.
pub(crate) struct Path {
    /// Start of the current leg and its unit direction.
    origin: DVec3,
    pub(crate) dir: DVec3,
    /// Range booked along the original beam at the start of the leg.
    booked: f64,
    /// Booked metres per geometric metre on this leg (1 in air, 1.33 in a medium).
    index: f64,
    /// Product of the two-way losses so far.
    pub(crate) loss: f64,
    /// Absorption (1/m) of the medium the leg runs in, if any.
    medium: Option<f64>,
}

/// The return model under one calibration, with what it derives from it once.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ReturnModel {
    params: ReturnParams,
    /// Below this range every candidate over `detectFloor` is within its `Rmax`, so the
    /// power law need not be evaluated: `Rmax(detectFloor)`.
    sure_range: f64,
    /// The physical model's terms ([`crate::physical`]), or `None` for the seed's model.
    physics: Option<PhysicalModel>,
    /// Its detection threshold in noise sigmas.
    threshold: f64,
    /// Where its detection is certain.
    sure: crate::physical::SureDetection,
}

impl ReturnModel {
    /// The seed's model under `params`.
    pub fn new(params: ReturnParams) -> ReturnModel {
        ReturnModel::with_physics(params, None)
    }

    /// The model under `params`, physical where `physics` says.
    pub fn with_physics(params: ReturnParams, physics: Option<PhysicalModel>) -> ReturnModel {
        let threshold = physics.map_or(0.0, |p| p.threshold_sigmas());
        let sure = crate::physical::SureDetection::new(&params, threshold.max(1.0));
        ReturnModel { params, sure_range: params.max_range(params.detect_floor), physics, threshold, sure }
    }

    /// The physical model's terms, `None` under the seed's.
    pub(crate) fn physics(&self) -> Option<&PhysicalModel> {
        self.physics.as_ref()
    }

    /// The candidate strength of `material` at incidence cosine `c`: the seed's, with the
    /// diffuse base kept under a retroreflector's lobe when the physical term says.
    fn strength(&self, material: &NirMaterial, c: f64) -> f64 {
        let seed = Optics::new(&self.params, material).strength(&self.params, c);
        match self.physics {
            Some(p) if p.adds_retro_base(material) => {
                let whole = matches!(material.continuation, Continuation::Opaque | Continuation::Porous);
                let base = if whole { albedo(material) * c.clamp(0.0, 1.0) } else { 0.0 };
                seed + material.retroreflective as f64 * base
            }
            _ => seed,
        }
    }

    /// Its calibration.
    pub fn params(&self) -> &ReturnParams {
        &self.params
    }

    /// The report of a beam whose only candidate is `candidate`: [`ReturnModel::report`] of
    /// one candidate, without the merging.
    pub(crate) fn report_one(&self, window: (f64, f64), candidate: &Candidate, rng: &mut BeamRng) -> BeamReturn {
        if self.detected(window, candidate, rng) { self.measure(candidate, None, rng) } else { BeamReturn::NONE }
    }

    /// Runs the model for one beam whose first surface (from the clean scan) and its material
    /// are `first` (`None`: no surface, or a surface the bake has no material for), following
    /// continuations through `tracer` and looking their materials up in `materials`.
    pub fn beam_return(
        &self,
        beam: &Beam,
        first: Option<(Surface, NirMaterial)>,
        tracer: &mut impl Tracer,
        materials: &(impl MaterialLookup + ?Sized),
        rng: &mut BeamRng,
    ) -> BeamReturn {
        let Some((s, material)) = first else { return BeamReturn::NONE };
        if material.continuation == Continuation::Opaque {
            // Most beams: one candidate, no continuation.
            return self.report_one(beam.window, &self.opaque_candidate(beam, &s, &material), rng);
        }
        self.traced_return(beam, (&s, &material), tracer, materials, rng)
    }

    /// The one candidate of a beam along `beam` whose first surface `s` is opaque `material`.
    fn opaque_candidate(&self, beam: &Beam, s: &Surface, material: &NirMaterial) -> Candidate {
        let cos = beam.dir.dot(s.normal).abs();
        Candidate { range: s.distance, strength: self.strength(material, cos), cos, geomid: s.geomid, spread: 0.0 }
    }

    /// Appends to `out` the candidates of one sub-ray of a beam's footprint (along `beam`,
    /// first surface and material `first`), their strengths weighed by its share `weight` of
    /// the beam's energy: the candidates [`ReturnModel::beam_return`] would report from.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn footprint_candidates(
        &self,
        beam: &Beam,
        first: Option<(Surface, NirMaterial)>,
        tracer: &mut impl Tracer,
        materials: &(impl MaterialLookup + ?Sized),
        rng: &mut BeamRng,
        weight: f64,
        out: &mut Vec<Candidate>,
    ) {
        let Some((s, material)) = first else { return };
        if material.continuation == Continuation::Opaque {
            let c = self.opaque_candidate(beam, &s, &material);
            out.push(Candidate { strength: weight * c.strength, ..c });
            return;
        }
        let mut candidates = [Candidate::NONE; MAX_CANDIDATES];
        let n = trace(self, beam, (&s, &material), tracer, materials, rng, &mut candidates);
        out.extend(candidates[..n].iter().map(|c| Candidate { strength: c.strength * weight, ..*c }));
    }

    /// The report of a beam from its footprint sub-rays' candidates (`candidates`, in any
    /// order; reordered): one waveform, in which an echo nearer than `minReturnSeparation`
    /// to the one before joins its pulse (the pulse's strength the sum, its range and
    /// incidence the strength-weighted means, its geom the strongest part's, its spread the
    /// parts' range spread), the pulses then detected, merged and measured as
    /// [`ReturnModel::report`] does. A foreground edge and the background behind it closer
    /// than the separation give one pulse between them (a mixed return), farther apart two.
    pub(crate) fn footprint_report(
        &self,
        window: (f64, f64),
        candidates: &mut [Candidate],
        rng: &mut BeamRng,
    ) -> BeamReturn {
        candidates.sort_by(|a, b| a.range.total_cmp(&b.range));
        let mut pulses = [Candidate::NONE; MAX_CANDIDATES];
        let mut npulse = 0;
        let mut rest = &candidates[..];
        while !rest.is_empty() {
            let mut end = 1;
            while end < rest.len() && rest[end].range - rest[end - 1].range < self.params.min_return_separation {
                end += 1;
            }
            let pulse = pulse(&rest[..end]);
            rest = &rest[end..];
            if npulse < MAX_CANDIDATES {
                pulses[npulse] = pulse;
                npulse += 1;
            } else if let Some(weakest) = pulses.iter_mut().min_by(|a, b| a.strength.total_cmp(&b.strength)) {
                // More pulses than a beam keeps: the weakest gives way, range order kept.
                if pulse.strength > weakest.strength {
                    *weakest = pulse;
                    pulses.sort_by(|a, b| a.range.total_cmp(&b.range));
                }
            }
        }
        self.report(window, &pulses[..npulse], rng)
    }

    /// [`ReturnModel::beam_return`] of a beam whose first surface is not opaque.
    pub(crate) fn traced_return(
        &self,
        beam: &Beam,
        first: (&Surface, &NirMaterial),
        tracer: &mut impl Tracer,
        materials: &(impl MaterialLookup + ?Sized),
        rng: &mut BeamRng,
    ) -> BeamReturn {
        let mut candidates = [Candidate::NONE; MAX_CANDIDATES];
        let n = trace(self, beam, first, tracer, materials, rng, &mut candidates);
        self.report(beam.window, &candidates[..n], rng)
    }
}

/// Fills `candidates` with the candidate echoes of a beam whose first surface and its
/// material are `first`, in range order, and returns how many.
fn trace(
    model: &ReturnModel,
    beam: &Beam,
    first: (&Surface, &NirMaterial),
    tracer: &mut impl Tracer,
    materials: &(impl MaterialLookup + ?Sized),
    rng: &mut BeamRng,
    candidates: &mut [Candidate; MAX_CANDIDATES],
) -> usize {
    let params = &model.params;
    let mut ncand = 0;
    let mut next_path =
        Some(Leg { path: Path::new(beam.origin, beam.dir), surface: Some(*first.0), leg: 0, interactions: 0 });
    // The physical model's ghosts: each pane's reflection (of the beam's first
    // `MAX_GHOSTS` panes), followed once the beam's own path ends, in the order the panes
    // were met (a ghost's own panes reflect no further ghost: R⁴ and weaker).
    let mut ghosts: [Option<Leg>; MAX_GHOSTS] = [const { None }; MAX_GHOSTS];
    let (mut nghost, mut next_ghost) = (0, 0);
    while let Some(Leg { mut path, mut surface, leg: start, mut interactions }) = next_path.take() {
        let on_ghost = next_ghost > 0;
        for leg in start..MAX_CASTS {
            let Some(s) = surface else { break };
            let (range, point) = path.reach(&s);
            let found = if leg == 0 { Some(*first.1) } else { materials.material_at(s.geomid as usize, point) };
            let Some(material) = found else { break };
            let leaving = path.leaves(&s, &material);
            if !leaving {
                if interactions == MAX_INTERACTIONS {
                    break;
                }
                interactions += 1;
            }
            let crossing = match &model.physics {
                None => cross(params, &mut path, &s, &material, leaving, || rng.uniform()),
                Some(physics) => {
                    let (crossing, reflected) =
                        cross_physical(params, physics, &mut path, &s, &material, leaving, || rng.uniform());
                    if let Some((dir, loss)) = reflected.filter(|_| !on_ghost && nghost < MAX_GHOSTS) {
                        let mut reflected = Path { dir, loss, ..path };
                        reflected.set_off(point, range);
                        let surface = tracer.cast(reflected.origin, dir, LegKind::Folded, leg + 1, -1);
                        ghosts[nghost] = Some(Leg { path: reflected, surface, leg: leg + 1, interactions });
                        nghost += 1;
                    }
                    crossing
                }
            };
            if let Some((loss, cos)) = crossing.candidate {
                let strength = loss * model.strength(&material, cos);
                candidates[ncand] = Candidate { range, strength, cos, geomid: s.geomid, spread: 0.0 };
                ncand += 1;
            }
            let Some((kind, through)) = crossing.next else { break };
            path.set_off(point, range);
            surface = tracer.cast(path.origin, path.dir, kind, leg + 1, through);
        }
        if next_ghost < nghost {
            next_path = ghosts[next_ghost].take();
            next_ghost += 1;
        }
    }
    if model.physics.is_some() {
        // A ghost's candidates come after the beam's own: echoes are chosen in range order.
        candidates[..ncand].sort_by(|a, b| a.range.total_cmp(&b.range));
    }
    ncand
}

/// The pulse of a footprint's waveform made of the echoes `parts` (in range order, at least
/// one), as a candidate.
fn pulse(parts: &[Candidate]) -> Candidate {
    let strength: f64 = parts.iter().map(|c| c.strength).sum();
    let strongest = parts.iter().max_by(|a, b| a.strength.total_cmp(&b.strength)).unwrap_or(&parts[0]);
    // No positive strength (zero, or NaN from a surface without optics): nothing to weigh by.
    if strength.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return Candidate { strength, ..*strongest };
    }
    let mean = |f: fn(&Candidate) -> f64| parts.iter().map(|c| c.strength * f(c)).sum::<f64>() / strength;
    let range = mean(|c| c.range);
    let variance = mean(|c| c.range * c.range + c.spread * c.spread) - range * range;
    Candidate { range, strength, cos: mean(|c| c.cos), geomid: strongest.geomid, spread: variance.max(0.0).sqrt() }
}

/// Where a path stands before a leg: its state, the surface the leg reaches, the leg's index
/// and the interactions so far.
struct Leg {
    path: Path,
    surface: Option<Surface>,
    leg: usize,
    interactions: usize,
}

impl Path {
    /// The path of a beam from `origin` along unit `dir`, before its first surface.
    pub(crate) fn new(origin: DVec3, dir: DVec3) -> Path {
        Path { origin, dir, booked: 0.0, index: 1.0, loss: 1.0, medium: None }
    }

    /// Reaches surface `s` at the end of the current leg, taking the medium's absorption
    /// along it: the surface's booked range and world point.
    pub(crate) fn reach(&mut self, s: &Surface) -> (f64, DVec3) {
        let range = self.booked + self.index * s.distance;
        if let Some(alpha) = self.medium {
            self.loss *= (-2.0 * alpha * s.distance).exp();
        }
        (range, self.origin + self.dir * s.distance)
    }

    /// Whether reaching `s` of `material` leaves a volume (its far face, where the path runs
    /// along the outward normal): no interaction.
    pub(crate) fn leaves(&self, s: &Surface, material: &NirMaterial) -> bool {
        self.dir.dot(s.normal) > 0.0
            && matches!(material.continuation, Continuation::Slab | Continuation::Porous | Continuation::Medium)
    }

    /// Starts the next leg just past `point`, reached at booked range `range`.
    pub(crate) fn set_off(&mut self, point: DVec3, range: f64) {
        self.origin = point + self.dir * NUDGE;
        self.booked = range + self.index * NUDGE;
    }
}

/// What a surface did to the pulse that reached it.
pub(crate) struct Crossing {
    /// The surface's own candidate, when it gives one: the path's loss to weigh its strength
    /// by, and the incidence cosine.
    pub(crate) candidate: Option<(f64, f64)>,
    /// The next leg, when the pulse goes on: its kind and the geom it may pass through.
    pub(crate) next: Option<(LegKind, i32)>,
}

/// Crosses surface `s` of `material` (`leaving`: its far face, see [`Path::leaves`]): books
/// its candidate and turns or attenuates `path` for the next leg by the surface's
/// continuation class. `gap` draws a uniform number for a porous surface's gap. Inlined: the
/// planning of a group's crossings calls it once per crossing, with `leaving` false and a
/// constant gap, which the inlined copy folds away.
#[inline]
pub(crate) fn cross(
    params: &ReturnParams,
    path: &mut Path,
    s: &Surface,
    material: &NirMaterial,
    leaving: bool,
    gap: impl FnOnce() -> f64,
) -> Crossing {
    if leaving {
        return Crossing { candidate: None, next: leave_volume(path, material, s.normal).map(|kind| (kind, -1)) };
    }
    let candidate = Some((path.loss, path.dir.dot(s.normal).abs()));
    let next = match material.continuation {
        Continuation::Slab => {
            path.loss *= (material.transmission as f64).powi(2);
            Some((LegKind::Straight, s.geomid))
        }
        Continuation::Medium => refract(path.dir, s.normal, 1.0 / MEDIUM_INDEX).map(|bent| {
            path.dir = bent;
            path.loss *= (1.0 - material.f0 as f64).powi(2);
            path.index = MEDIUM_INDEX;
            path.medium = Some(material.absorption as f64);
            (LegKind::Refracted, -1)
        }),
        Continuation::Porous if gap() < material.transmission as f64 => {
            return Crossing { candidate: None, next: Some((LegKind::Straight, s.geomid)) };
        }
        Continuation::Specular if slope(params, material) <= params.fold_max_slope => {
            path.loss *= material.f0 as f64;
            path.dir = fold(path.dir, s.normal);
            Some((LegKind::Folded, -1))
        }
        _ => None,
    };
    Crossing { candidate, next }
}

/// [`cross`] under the physical model's terms ([`crate::physical`]): Fresnel panes (both
/// faces' echo, `T_slab(θ)²` through), split footprints on porous surfaces, `F0²` folds,
/// water's group index and radiance loss. A term switched off crosses as the seed's.
pub(crate) fn cross_physical(
    params: &ReturnParams,
    physics: &PhysicalModel,
    path: &mut Path,
    s: &Surface,
    material: &NirMaterial,
    leaving: bool,
    gap: impl FnOnce() -> f64,
) -> (Crossing, Option<(DVec3, f64)>) {
    if leaving {
        return (cross(params, path, s, material, leaving, gap), None);
    }
    let cos = path.dir.dot(s.normal).abs();
    let loss = path.loss;
    let mut reflected = None;
    let (scale, next) = match material.continuation {
        Continuation::Slab if physics.fresnel => {
            let pane = crate::physical::slab_optics(material, cos);
            // The ghost: the pane's reflection, out and back (R_slab² of the path so far).
            let ghost = loss * pane.reflectance.powi(2);
            if ghost > GHOST_FLOOR {
                reflected = Some((fold(path.dir, s.normal), ghost));
            }
            path.loss *= pane.transmittance.powi(2);
            // The seed's glint carries F0; the pane returns R_slab(θ) from both faces.
            let f0 = material.f0 as f64;
            (if f0 > 0.0 { pane.reflectance / f0 } else { 0.0 }, Some((LegKind::Straight, s.geomid)))
        }
        Continuation::Porous if physics.split_footprints => {
            let t = material.transmission as f64;
            path.loss *= t;
            (1.0 - t, Some((LegKind::Straight, s.geomid)))
        }
        Continuation::Specular if physics.two_bounce_mirrors && slope(params, material) <= params.fold_max_slope => {
            path.loss *= (material.f0 as f64).powi(2);
            path.dir = fold(path.dir, s.normal);
            (1.0, Some((LegKind::Folded, -1)))
        }
        Continuation::Medium if physics.water => {
            let crossing = cross(params, path, s, material, leaving, gap);
            if crossing.next.is_some() {
                path.index = crate::physical::WATER_GROUP_INDEX;
                path.loss /= MEDIUM_INDEX * MEDIUM_INDEX;
            }
            return (crossing, None);
        }
        _ => return (cross(params, path, s, material, leaving, gap), None),
    };
    (Crossing { candidate: Some((loss * scale, cos)), next }, reflected)
}

/// A pane's reflection weaker than this (in path loss) is not followed as a ghost: below
/// any strength a detector sees, even off a retroreflector (`retroGain` 800 · 1e−6).
const GHOST_FLOOR: f64 = 1e-6;

/// `dir` folded about a surface with unit normal `n`: `d − 2 (d·n) n`. The return model,
/// the reflected capture and the fold prefetch all cast this same ray.
pub(crate) fn fold(dir: DVec3, n: DVec3) -> DVec3 {
    dir - 2.0 * dir.dot(n) * n
}

/// Leaves the volume whose far face the path reached; `None` on total internal reflection.
fn leave_volume(path: &mut Path, material: &NirMaterial, normal: DVec3) -> Option<LegKind> {
    if material.continuation != Continuation::Medium {
        return Some(LegKind::Straight);
    }
    path.dir = refract(path.dir, -normal, MEDIUM_INDEX)?;
    path.loss *= (1.0 - material.f0 as f64).powi(2);
    path.index = 1.0;
    path.medium = None;
    Some(LegKind::Refracted)
}

/// Snell refraction of unit `dir` through a surface whose normal `n` faces the incoming
/// side, with `eta = n_from / n_to`; `None` on total internal reflection.
pub(crate) fn refract(dir: DVec3, n: DVec3, eta: f64) -> Option<DVec3> {
    let cos_i = -dir.dot(n);
    let k = 1.0 - eta * eta * (1.0 - cos_i * cos_i);
    (k >= 0.0).then(|| (eta * dir + (eta * cos_i - k.sqrt()) * n).normalize())
}

impl ReturnModel {
    /// Detection, echo merging and measurement of a beam's candidates.
    pub(crate) fn report(&self, window: (f64, f64), candidates: &[Candidate], rng: &mut BeamRng) -> BeamReturn {
        let params = &self.params;
        let mut echoes = [Candidate::NONE; MAX_CANDIDATES];
        let mut n = 0;
        // Candidates arrive in booked-range order along the path, which is also range order.
        for &c in candidates {
            if !self.detected(window, &c, rng) {
                continue;
            }
            if n > 0 && c.range - echoes[n - 1].range < params.min_return_separation {
                if c.strength > echoes[n - 1].strength {
                    echoes[n - 1] = c;
                }
            } else {
                echoes[n] = c;
                n += 1;
            }
        }
        // The strongest and the next, the nearer first among equals (a stable sort's first two).
        let stronger = |a: &Candidate, b: &Candidate| a.strength.total_cmp(&b.strength).is_gt();
        let (mut primary, mut second): (Option<&Candidate>, Option<&Candidate>) = (None, None);
        for e in &echoes[..n] {
            if primary.is_none_or(|p| stronger(e, p)) {
                (primary, second) = (Some(e), primary);
            } else if second.is_none_or(|s| stronger(e, s)) {
                second = Some(e);
            }
        }
        match primary {
            None => BeamReturn::NONE,
            Some(primary) => self.measure(primary, second, rng),
        }
    }

    /// The measured report of the strongest echo and, when the hardware reports two, the next.
    fn measure(&self, primary: &Candidate, second: Option<&Candidate>, rng: &mut BeamRng) -> BeamReturn {
        let params = &self.params;
        let range = self.measured(primary, rng.normal());
        let secondary_range = match second {
            Some(c) if params.max_returns >= 2 => self.measured(c, rng.normal()),
            _ => -1.0,
        };
        BeamReturn {
            range,
            secondary_range,
            intensity: self.reported_intensity(primary.range, primary.strength),
            reflectivity: primary.strength as f32,
            geomid: primary.geomid,
        }
    }

    /// The measured range of echo `c` given a standard normal draw `z`: [`Self::noisy`], or
    /// the physical noise of its strength and incidence, folded above `rangeFloor`.
    fn measured(&self, c: &Candidate, z: f64) -> f32 {
        match self.physics {
            Some(p) if p.noise => {
                let sigma = p.spread_sigma(&self.params, (c.strength, c.range, c.cos), c.spread);
                crate::physical::fold_above(c.range + sigma * z, self.params.range_floor) as f32
            }
            _ => self.noisy(c.range, z),
        }
    }

    /// The measured range of an echo booked at `range`, given a standard normal draw `z`.
    #[inline(always)]
    fn noisy(&self, range: f64, z: f64) -> f32 {
        let measured = range + self.params.noise_sigma(range) * z;
        measured.max(self.params.range_floor) as f32
    }

    /// [`Self::intensity`], saturated where the physical model says.
    fn reported_intensity(&self, range: f64, strength: f64) -> f32 {
        match self.physics {
            Some(p) if p.saturation => {
                let linear = self.intensity(range, strength) as f64;
                crate::physical::saturated(linear, self.params.spec_peak_max) as f32
            }
            _ => self.intensity(range, strength),
        }
    }

    /// The intensity of an echo booked at `range` with strength `strength`:
    /// `S · (intensityRefRange / R)² · min(1, R / nearRangeR0)²`, which is
    /// `S · (intensityRefRange / max(R, nearRangeR0))²` (one division where the lanes
    /// would pay for two).
    #[inline(always)]
    fn intensity(&self, range: f64, strength: f64) -> f32 {
        let params = &self.params;
        (strength * (params.intensity_ref_range / range.max(params.near_range_r0)).powi(2)) as f32
    }

    fn detected(&self, (min_range, max_range): (f64, f64), c: &Candidate, rng: &mut BeamRng) -> bool {
        let params = &self.params;
        let strong_enough = if self.physics.is_some_and(|p| p.detection) {
            // One draw per candidate, whatever its odds, so a scan's draws do not depend on
            // which candidates are sure.
            let u = rng.uniform();
            c.strength > 0.0
                && (self.sure.sure(params, c.strength, c.range)
                    || u < crate::physical::detection_probability(params, self.threshold, c.strength, c.range))
        } else {
            // Written as the refusals, so a NaN strength (no material) refuses nothing here.
            !(c.strength < params.detect_floor || c.range >= self.sure_range && c.range >= params.max_range(c.strength))
        };
        if !(strong_enough && min_range <= c.range && c.range < max_range) {
            return false;
        }
        c.cos >= params.grazing_cos_cutoff || rng.uniform() < c.cos / params.grazing_cos_cutoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MaterialPreset, ReturnPreset};
    use glint_materials::episode_seed;
    use rand::RngCore;

    /// Surfaces handed out in order: the continuations of one beam.
    struct Script(Vec<Surface>);

    impl Tracer for Script {
        fn cast(&mut self, _: DVec3, _: DVec3, _: LegKind, _: usize, _: i32) -> Option<Surface> {
            (!self.0.is_empty()).then(|| self.0.remove(0))
        }
    }

    /// Materials by geom id.
    struct Palette(Vec<NirMaterial>);

    impl MaterialLookup for Palette {
        fn palette(&self) -> &[NirMaterial] {
            &self.0
        }

        fn index_at(&self, geom: usize, _: DVec3) -> Option<usize> {
            (geom < self.0.len()).then_some(geom)
        }
    }

    fn lambertian(reflectivity: f32) -> NirMaterial {
        NirMaterial { reflectivity, f0: 0.0, ..MaterialPreset::Diffuse.material() }
    }

    const FORWARD: DVec3 = DVec3::X;

    fn beam() -> Beam {
        Beam { origin: DVec3::ZERO, dir: FORWARD, window: (0.0, 1000.0) }
    }

    /// A surface `d` metres on, facing back along the beam (or tilted by `deg` about Z).
    fn facing(d: f64, geomid: i32, deg: f64) -> Surface {
        let a = deg.to_radians();
        Surface { distance: d, geomid, normal: DVec3::new(-a.cos(), a.sin(), 0.0) }
    }

    fn run(params: &ReturnParams, surfaces: Vec<Surface>, palette: &Palette, seed: u64) -> BeamReturn {
        let mut script = Script(surfaces);
        let first = (!script.0.is_empty()).then(|| script.0.remove(0));
        let first = first.and_then(|s| Some((s, palette.material_at(s.geomid as usize, DVec3::ZERO)?)));
        ReturnModel::new(*params).beam_return(&beam(), first, &mut script, palette, &mut BeamRng::new(seed, 0, 0, 0))
    }

    fn candidates(params: &ReturnParams, surfaces: Vec<Surface>, palette: &Palette) -> Vec<Candidate> {
        let mut script = Script(surfaces);
        let first = script.0.remove(0);
        let material = palette.material_at(first.geomid as usize, DVec3::ZERO).unwrap();
        let mut c = [Candidate::NONE; MAX_CANDIDATES];
        let model = ReturnModel::new(*params);
        let n =
            trace(&model, &beam(), (&first, &material), &mut script, palette, &mut BeamRng::new(0, 0, 0, 0), &mut c);
        c[..n].to_vec()
    }

    fn noiseless() -> ReturnParams {
        ReturnParams { noise_sigma0: 0.0, noise_slope_per_m: 0.0, ..ReturnParams::default() }
    }

    #[test]
    fn oracle_1_maximum_range_follows_reflectivity() {
        let p = noiseless();
        let board = Palette(vec![lambertian(0.9)]);
        assert!(run(&p, vec![facing(19.9, 0, 0.0)], &board, 0).range > 0.0);
        assert_eq!(run(&p, vec![facing(20.1, 0, 0.0)], &board, 0).range, -1.0);
        assert!((p.max_range(0.1) - 9.9).abs() <= 0.1, "{}", p.max_range(0.1));
        let dark = Palette(vec![lambertian(0.1)]);
        assert!(run(&p, vec![facing(9.8, 0, 0.0)], &dark, 0).range > 0.0);
        assert_eq!(run(&p, vec![facing(10.0, 0, 0.0)], &dark, 0).range, -1.0);
        let mid = ReturnPreset::LivoxMid360.params();
        assert!((mid.max_range(0.1) - 39.9).abs() <= 0.1, "{}", mid.max_range(0.1));
        let slope = (p.max_range(0.8).ln() - p.max_range(0.2).ln()) / (0.8f64.ln() - 0.2f64.ln());
        assert!((slope - p.range_exp).abs() < 1e-12);
    }

    #[test]
    fn oracle_2_noise_grows_with_range_and_never_goes_below_the_floor() {
        let p = ReturnPreset::OusterOs1.params();
        let board = Palette(vec![lambertian(0.9)]);
        for (range, sigma) in [(10.0, 0.025), (100.0, 0.070)] {
            let errors: Vec<f64> = (0..20_000)
                .map(|seed| run(&p, vec![facing(range, 0, 0.0)], &board, seed).range as f64 - range)
                .collect();
            let mean = errors.iter().sum::<f64>() / errors.len() as f64;
            let std = (errors.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / errors.len() as f64).sqrt();
            assert!((std / sigma - 1.0).abs() < 0.05, "σ at {range} m is {std}");
            assert!(mean.abs() < 3.0 * sigma / (errors.len() as f64).sqrt() + 2e-4, "mean {mean}");
        }
        let noisy = ReturnParams { noise_sigma0: 0.5, ..p };
        let near = (0..2_000).map(|seed| run(&noisy, vec![facing(0.3, 0, 0.0)], &board, seed).range);
        assert!(near.into_iter().all(|r| r >= noisy.range_floor as f32));
    }

    #[test]
    fn oracle_3_intensity_falls_with_range_and_calibrated_reflectivity_does_not() {
        let p = noiseless();
        let board = Palette(vec![lambertian(0.5)]);
        let at = |r: f64| run(&p, vec![facing(r, 0, 0.0)], &board, 0);
        for r in [1.0, 2.0, 4.0] {
            let ratio = at(2.0 * r).intensity / at(r).intensity;
            assert!((ratio - 0.25).abs() < 1e-5, "{ratio} from {r} m");
        }
        let reference = at(2.0).reflectivity;
        for r in [2.0, 5.0, 9.0, 15.0] {
            assert!((at(r).reflectivity / reference - 1.0).abs() < 0.02);
        }
        let white = Palette(vec![lambertian(1.0)]);
        assert!((run(&p, vec![facing(5.0, 0, 0.0)], &white, 0).reflectivity - 1.0).abs() < 1e-6);
        // Inside nearRangeR0 the ramp cuts intensity further.
        assert!(at(0.3).intensity < at(0.6).intensity * 4.0 * 0.3);
    }

    #[test]
    fn oracle_4_grazing_returns_drop_in_proportion_below_the_cutoff() {
        let p = noiseless();
        let board = Palette(vec![lambertian(0.9)]);
        let keep_rate = |deg: f64| {
            let kept = (0..20_000).filter(|&seed| run(&p, vec![facing(2.0, 0, deg)], &board, seed).range > 0.0).count();
            kept as f64 / 20_000.0
        };
        // cos 80° = 0.17 > 0.10: no dropout.
        assert_eq!(keep_rate(80.0), 1.0);
        // Below the cutoff, but bright enough to clear detectFloor (0.9 · cos 87° = 0.047).
        for deg in [84.5f64, 86.0, 87.0] {
            let expected = deg.to_radians().cos() / p.grazing_cos_cutoff;
            assert!((keep_rate(deg) - expected).abs() < 0.015, "{deg}°: {} vs {expected}", keep_rate(deg));
        }
    }

    fn glass_then_wall(deg: f64) -> (Vec<Surface>, Palette) {
        let a = deg.to_radians();
        let exit = Surface { distance: 0.01, geomid: 0, normal: DVec3::new(a.cos(), -a.sin(), 0.0) };
        let surfaces = vec![facing(4.0, 0, deg), exit, facing(3.0, 1, 0.0)];
        (surfaces, Palette(vec![MaterialPreset::ClearFloatGlass.material(), lambertian(0.8)]))
    }

    #[test]
    fn oracle_5_clear_glass_gives_a_glint_and_the_wall_behind() {
        let p = ReturnParams { max_returns: 2, ..noiseless() };
        let (surfaces, palette) = glass_then_wall(0.0);
        let c = candidates(&p, surfaces.clone(), &palette);
        assert_eq!(c.len(), 2);
        assert!((c[0].strength / (0.042 / (4.0 * 0.03f64.powi(2))) - 1.0).abs() < 1e-6, "{}", c[0].strength);
        assert!((c[1].strength - 0.8 * 0.71f64.powi(2)).abs() < 1e-6, "{}", c[1].strength);
        assert!((c[1].range - 7.01).abs() < 1e-4);
        let r = run(&p, surfaces, &palette, 0);
        assert!((r.range - 4.0).abs() < 1e-4 && (r.secondary_range - 7.01).abs() < 1e-4, "{r:?}");
        assert_eq!(r.geomid, 0);
        // Ten degrees off normal: no glint, only the wall.
        let (surfaces, palette) = glass_then_wall(10.0);
        let r = run(&p, surfaces, &palette, 0);
        assert_eq!((r.geomid, r.secondary_range), (1, -1.0), "{r:?}");
    }

    #[test]
    fn oracle_6_a_mirror_gives_a_phantom_at_the_total_path() {
        let p = noiseless();
        let palette = Palette(vec![MaterialPreset::Mirror.material(), lambertian(0.8)]);
        // The beam runs along +X and folds to +Y; the wall faces back along -Y.
        let wall = Surface { distance: 3.0, geomid: 1, normal: DVec3::NEG_Y };
        let r = run(&p, vec![facing(2.0, 0, 45.0), wall], &palette, 0);
        assert!((r.range - 5.0).abs() < 1e-4, "{r:?}");
        assert_eq!(r.geomid, 1);
        assert!((r.reflectivity as f64 - 0.9 * 0.8).abs() < 1e-6);
        // Too rough to fold: no phantom.
        let rough = Palette(vec![NirMaterial { roughness: 0.5, ..MaterialPreset::Mirror.material() }, lambertian(0.8)]);
        assert_eq!(run(&p, vec![facing(2.0, 0, 45.0), wall], &rough, 0).range, -1.0);
    }

    #[test]
    fn oracle_7_water_hides_deep_bottoms_and_books_the_optical_path() {
        let p = noiseless();
        let palette = Palette(vec![MaterialPreset::StillWater.material(), lambertian(0.9)]);
        // Straight down onto the water 2 m away: the bottom's candidate is booked at
        // h + 1.33 d (the surface's own glint is the stronger echo there).
        let c = candidates(&p, vec![facing(2.0, 0, 0.0), facing(0.10, 1, 0.0)], &palette);
        assert_eq!(c.len(), 2);
        assert!((c[1].range - (2.0 + 1.33 * 0.10)).abs() < 1e-4, "{c:?}");
        // Five degrees off normal the surface is a void; a white bottom shows only when shallow.
        let tilt = 5.0f64.to_radians();
        let bent = refract(DVec3::new(tilt.cos(), tilt.sin(), 0.0), DVec3::NEG_X, 1.0 / MEDIUM_INDEX).unwrap();
        assert!((bent.y - tilt.sin() / MEDIUM_INDEX).abs() < 1e-12, "Snell");
        let bottom = |depth: f64| {
            let path = depth / bent.x;
            let floor = Surface { distance: path, geomid: 1, normal: DVec3::NEG_X };
            (run(&p, vec![facing(2.0, 0, -5.0), floor], &palette, 0), path)
        };
        let (shallow, path) = bottom(0.10);
        assert_eq!(shallow.geomid, 1, "{shallow:?}");
        assert!((shallow.range as f64 - (2.0 + 1.33 * path)).abs() < 1e-4);
        assert_eq!(bottom(0.50).0.geomid, -1);
    }

    #[test]
    fn oracle_8_retroreflectors_are_bright_and_fall_off_with_entrance_angle() {
        let p = noiseless();
        let sign = Palette(vec![MaterialPreset::Retroreflector.material()]);
        let s = |deg: f64| run(&p, vec![facing(5.0, 0, deg)], &sign, 0).reflectivity as f64;
        assert!((s(0.0) - 800.0).abs() < 1e-3);
        assert!((s(30.0) / 800.0 - 0.487).abs() < 0.001);
        assert!((s(60.0) / 800.0 - 0.031).abs() < 0.001);
        let board = Palette(vec![lambertian(0.9)]);
        assert_eq!(run(&p, vec![facing(60.0, 0, 0.0)], &board, 0).range, -1.0);
        assert!(run(&p, vec![facing(60.0, 0, 0.0)], &sign, 0).range > 0.0);
    }

    #[test]
    fn oracle_9_close_echoes_merge_and_max_returns_keeps_the_strongest() {
        let glass = NirMaterial { f0: 0.01, ..MaterialPreset::ClearFloatGlass.material() };
        let palette = Palette(vec![glass, lambertian(0.9)]);
        let scene = |gap: f64| {
            vec![facing(5.0, 0, 0.0), Surface { distance: 0.0, geomid: 0, normal: FORWARD }, facing(gap, 1, 0.0)]
        };
        let two = ReturnParams { max_returns: 2, ..noiseless() };
        let merged = run(&two, scene(0.9), &palette, 0);
        assert_eq!(merged.secondary_range, -1.0, "{merged:?}");
        let split = run(&two, scene(1.1), &palette, 0);
        assert!(split.secondary_range > 0.0, "{split:?}");
        // Glint 0.01 / (4 · 0.03²) ≈ 2.8 beats the wall's 0.9 · 0.71²: with one echo the glass wins.
        let one = run(&noiseless(), scene(1.1), &palette, 0);
        assert_eq!((one.geomid, one.secondary_range), (0, -1.0));
        assert!((one.range - 5.0).abs() < 1e-4);
    }

    #[test]
    fn porous_surfaces_let_a_fraction_through_at_full_strength() {
        let p = noiseless();
        let palette = Palette(vec![MaterialPreset::Vegetation.material(), lambertian(0.9)]);
        let behind = (0..10_000)
            .filter(|&seed| {
                let exit = Surface { distance: 0.5, geomid: 0, normal: FORWARD };
                let r = run(&p, vec![facing(3.0, 0, 0.0), exit, facing(2.0, 1, 0.0)], &palette, seed);
                if r.geomid == 1 {
                    assert!((r.reflectivity - 0.9).abs() < 1e-6);
                }
                r.geomid == 1
            })
            .count();
        assert!((behind as f64 / 10_000.0 - 0.30).abs() < 0.015, "{behind}");
    }

    #[test]
    fn the_glints_exponential_matches_the_standard_one() {
        let mut worst: f64 = 0.0;
        for i in 0..=800_000 {
            let x = i as f64 * 1e-4;
            let (fast, exact) = (exp_neg(x), (-x).exp());
            worst = worst.max((fast - exact).abs() / exact);
        }
        assert!(worst < 1e-15, "worst relative error {worst:e}");
        assert_eq!(exp_neg(0.0), 1.0);
    }

    #[test]
    fn strengths_over_many_surfaces_equal_one_surfaces_to_the_bit() {
        let p = ReturnParams::default();
        let mut rng = BeamRng::new(3, 0, 0, 0);
        let presets = [
            MaterialPreset::Diffuse,
            MaterialPreset::Retroreflector,
            MaterialPreset::GlossDarkPaint,
            MaterialPreset::ClearFloatGlass,
            MaterialPreset::Mirror,
            MaterialPreset::Vegetation,
        ];
        let (mut materials, mut cos, mut index) = (Vec::new(), Vec::new(), Vec::new());
        for k in 0..300 {
            let base = presets[k % presets.len()].material();
            let roughness = if k % 7 == 0 { 0.0 } else { rng.uniform() as f32 };
            materials.push(NirMaterial { roughness, metalness: (k % 3) as f32 * 0.5, ..base });
            // Normal, grazing, beyond the glint's cutoff, and out of [0, 1].
            cos.push([1.0, 0.0, 1.2, rng.uniform()][k % 4]);
            // Every eleventh surface has no material.
            index.push(if k % 11 == 10 { u32::MAX } else { k as u32 });
        }
        let optics: Vec<Optics> = materials.iter().map(|m| Optics::new(&p, m)).collect();
        let (mut lanes, mut plain, mut s) = (SurfaceLanes::default(), Vec::new(), [0.0; LANES]);
        for start in (0..cos.len()).step_by(LANES) {
            let n = LANES.min(cos.len() - start);
            let mut retro = 0u64;
            for i in 0..n {
                let o = optics.get(index[start + i] as usize).unwrap_or(&Optics::NONE);
                retro |= u64::from(lanes.put(i, o, cos[start + i])) << i;
            }
            lanes.retro_terms(&p, retro);
            lanes.strengths(&p, n, &mut s);
            plain.extend_from_slice(&s[..n]);
        }
        assert_eq!(plain.len(), cos.len());
        for i in 0..cos.len() {
            let Some(o) = optics.get(index[i] as usize) else {
                assert!(plain[i].is_nan(), "surface {i}");
                continue;
            };
            let one = o.strength(&p, cos[i]);
            let terms = Strength::of(&p, &materials[i], cos[i]);
            let whole = matches!(materials[i].continuation, Continuation::Opaque | Continuation::Porous);
            let expected = if whole { terms.full() } else { terms.glint_only() };
            assert_eq!(one.to_bits(), expected.to_bits(), "surface {i}");
            assert_eq!(plain[i].to_bits(), one.to_bits(), "surface {i}");
        }
    }

    #[test]
    fn random_streams_depend_on_every_key() {
        let base = BeamRng::new(1, 3, 4, 5).next_u64();
        for other in
            [BeamRng::new(0, 3, 4, 5), BeamRng::new(1, 0, 4, 5), BeamRng::new(1, 3, 0, 5), BeamRng::new(1, 3, 4, 0)]
        {
            assert_ne!(other.clone().next_u64(), base);
        }
        assert_eq!(BeamRng::new(1, 3, 4, 5).next_u64(), base);
    }

    #[test]
    fn episode_seeds_differ_by_run_and_episode() {
        let seeds: Vec<u64> =
            [(0, 0), (0, 1), (1, 0), (1, 1), (7, 2)].iter().map(|&(run, e)| episode_seed(run, e)).collect();
        for (i, a) in seeds.iter().enumerate() {
            assert!(seeds[i + 1..].iter().all(|b| b != a), "{seeds:?}");
        }
        assert_eq!(episode_seed(7, 2), seeds[4]);
    }

    // The physical model: each term on its own scene against its formula.

    fn physical_candidates(physics: PhysicalModel, surfaces: Vec<Surface>, palette: &Palette) -> Vec<Candidate> {
        let mut script = Script(surfaces);
        let first = script.0.remove(0);
        let material = palette.material_at(first.geomid as usize, DVec3::ZERO).unwrap();
        let mut c = [Candidate::NONE; MAX_CANDIDATES];
        let model = ReturnModel::with_physics(noiseless(), Some(physics));
        let n =
            trace(&model, &beam(), (&first, &material), &mut script, palette, &mut BeamRng::new(0, 0, 0, 0), &mut c);
        c[..n].to_vec()
    }

    fn physical_run(params: &ReturnParams, surfaces: Vec<Surface>, palette: &Palette, seed: u64) -> BeamReturn {
        let mut script = Script(surfaces);
        let first = script.0.remove(0);
        let first = palette.material_at(first.geomid as usize, DVec3::ZERO).map(|m| (first, m));
        let model = ReturnModel::with_physics(*params, Some(PhysicalModel::default()));
        model.beam_return(&beam(), first, &mut script, palette, &mut BeamRng::new(seed, 0, 0, 0))
    }

    #[test]
    fn physical_intensity_saturates_on_bright_close_returns_only() {
        let p = noiseless();
        let sign = Palette(vec![MaterialPreset::Retroreflector.material()]);
        let board = Palette(vec![lambertian(0.5)]);
        // A retroreflector at 2 m: 800 · (5 / 2)² = 5000 linear, at most specPeakMax reported.
        let bright = physical_run(&p, vec![facing(2.0, 0, 0.0)], &sign, 0).intensity as f64;
        let linear = run(&p, vec![facing(2.0, 0, 0.0)], &sign, 0).intensity as f64;
        assert!((linear - 5000.0).abs() < 5.0, "{linear}");
        let expected = p.spec_peak_max * (1.0 - (-linear / p.spec_peak_max).exp());
        // (The physical strength keeps the sign's diffuse base: a few parts in 10⁵ more.)
        assert!((bright / expected - 1.0).abs() < 1e-4 && bright < p.spec_peak_max, "{bright} vs {expected}");
        // A grey board at 20 m is faint: within 0.01 % of the seed's.
        let (faint, seed) =
            (physical_run(&p, vec![facing(20.0, 0, 0.0)], &board, 0), run(&p, vec![facing(20.0, 0, 0.0)], &board, 0));
        assert!((faint.intensity / seed.intensity - 1.0).abs() < 1e-4, "{} vs {}", faint.intensity, seed.intensity);
    }

    #[test]
    fn physical_detection_follows_its_s_curve() {
        let p = ReturnParams { noise_sigma0: 0.0, noise_slope_per_m: 0.0, ..ReturnPreset::OusterOs1.params() };
        let physics = PhysicalModel::default();
        let board = Palette(vec![lambertian(0.1)]);
        let r50 = p.max_range(0.1);
        let beams = 20_000;
        for factor in [0.85, 1.0, 1.1] {
            let r = factor * r50;
            let seen = (0..beams).filter(|&k| physical_run(&p, vec![facing(r, 0, 0.0)], &board, k).range > 0.0).count();
            let expected = physics.detection_probability(&p, 0.1, r);
            let share = seen as f64 / beams as f64;
            let tolerance = 4.0 * (expected * (1.0 - expected) / beams as f64).sqrt() + 1e-3;
            assert!((share - expected).abs() < tolerance, "{factor}: {share} vs {expected}");
        }
        // The seed's floor no longer hides a dark plate close by.
        let dark = Palette(vec![lambertian(0.02)]);
        assert!(physical_run(&p, vec![facing(1.0, 0, 0.0)], &dark, 1).range > 0.0);
        assert_eq!(run(&p, vec![facing(1.0, 0, 0.0)], &dark, 1).range, -1.0);
    }

    #[test]
    fn physical_noise_is_three_times_wider_on_a_dark_plate_and_grows_with_tilt() {
        let p = ReturnPreset::OusterOs1.params();
        let std_of = |palette: &Palette, deg: f64| {
            let errors: Vec<f64> = (0..20_000)
                .map(|k| physical_run(&p, vec![facing(10.0, 0, deg)], palette, k).range as f64 - 10.0)
                .collect();
            let mean = errors.iter().sum::<f64>() / errors.len() as f64;
            (errors.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / errors.len() as f64).sqrt()
        };
        let (dark, white) = (Palette(vec![lambertian(0.1)]), Palette(vec![lambertian(0.9)]));
        let ratio = std_of(&dark, 0.0) / std_of(&white, 0.0);
        assert!((ratio - 3.0).abs() < 0.15, "dark/white σ {ratio}");
        assert!(std_of(&white, 70.0) > 1.2 * std_of(&white, 0.0));
    }

    #[test]
    fn physical_glass_transmits_and_returns_by_fresnel() {
        for deg in [0.0, 30.0, 60.0, 80.0] {
            let (surfaces, palette) = glass_then_wall(deg);
            let c = physical_candidates(PhysicalModel::default(), surfaces, &palette);
            let pane = crate::slab_optics(&palette.0[0], deg.to_radians().cos());
            let wall = c.iter().find(|c| c.geomid == 1).expect("the wall behind");
            assert!(
                (wall.strength - 0.8_f32 as f64 * pane.transmittance.powi(2)).abs() < 1e-9,
                "{deg}°: {}",
                wall.strength
            );
        }
        let (surfaces, palette) = glass_then_wall(0.0);
        let c = physical_candidates(PhysicalModel::default(), surfaces, &palette);
        let glint = 0.042f64 / (4.0 * 0.03f64.powi(2));
        let both_faces = crate::slab_optics(&palette.0[0], 1.0).reflectance;
        assert!((c[0].strength - glint * both_faces / 0.042_f32 as f64).abs() < 1e-6, "{}", c[0].strength);
    }

    #[test]
    fn physical_mirror_phantoms_carry_f0_squared() {
        let palette = Palette(vec![MaterialPreset::Mirror.material(), lambertian(0.8)]);
        let wall = Surface { distance: 3.0, geomid: 1, normal: DVec3::NEG_Y };
        let c = physical_candidates(PhysicalModel::default(), vec![facing(2.0, 0, 45.0), wall], &palette);
        let phantom = c.iter().find(|c| c.geomid == 1).unwrap();
        assert!((phantom.strength / 0.8 - 0.9f64.powi(2)).abs() < 1e-6, "{}", phantom.strength);
        let seed = PhysicalModel { two_bounce_mirrors: false, ..PhysicalModel::default() };
        let c = physical_candidates(seed, vec![facing(2.0, 0, 45.0), wall], &palette);
        assert!((c.iter().find(|c| c.geomid == 1).unwrap().strength / 0.8 - 0.9).abs() < 1e-6);
    }

    #[test]
    fn physical_foliage_splits_the_footprint() {
        let hedge = MaterialPreset::Vegetation.material();
        let palette = Palette(vec![hedge, lambertian(0.9)]);
        let exit = Surface { distance: 0.5, geomid: 0, normal: DVec3::X };
        let c = physical_candidates(
            PhysicalModel::default(),
            vec![facing(5.0, 0, 0.0), exit, facing(2.0, 1, 0.0)],
            &palette,
        );
        assert_eq!(c.len(), 2, "{c:?}");
        let t = hedge.transmission as f64;
        let leaves = Optics::new(&noiseless(), &hedge).strength(&noiseless(), 1.0);
        assert!((c[0].strength - (1.0 - t) * leaves).abs() < 1e-9);
        assert!((c[1].strength - t * 0.9_f32 as f64).abs() < 1e-9);
        // Both detected and 2.5 m apart: a two-echo unit reports canopy and wall together.
        let p = ReturnParams { max_returns: 2, ..noiseless() };
        let r = physical_run(&p, vec![facing(5.0, 0, 0.0), exit, facing(2.0, 1, 0.0)], &palette, 3);
        assert!(r.range > 0.0 && r.secondary_range > 0.0, "{r:?}");
    }

    #[test]
    fn physical_water_books_the_group_index() {
        let palette = Palette(vec![MaterialPreset::StillWater.material(), lambertian(0.9)]);
        let c =
            physical_candidates(PhysicalModel::default(), vec![facing(2.0, 0, 0.0), facing(0.10, 1, 0.0)], &palette);
        let bottom = c.iter().find(|c| c.geomid == 1).unwrap();
        assert!((bottom.range - (2.0 + 1.341 * 0.10)).abs() < 1e-4, "{}", bottom.range);
    }

    #[test]
    fn physical_panes_show_a_ghost_of_a_retroreflector_where_fresnel_puts_it() {
        let glass = MaterialPreset::ClearFloatGlass.material();
        let retro = MaterialPreset::Retroreflector.material();
        let palette = Palette(vec![glass, retro, lambertian(0.8)]);
        // A pane 4 m on, turned 30°: its reflection folds the beam to (−0.5, 0.866, 0), onto a
        // retroreflector 2 m along it facing back; the wall 3 m behind the pane.
        let pane = facing(4.0, 0, 30.0);
        let folded = fold(FORWARD, pane.normal);
        let target = Surface { distance: 2.0, geomid: 1, normal: -folded };
        let exit = Surface { distance: 0.01, geomid: 0, normal: -pane.normal };
        let wall = facing(3.0, 2, 0.0);
        let c = physical_candidates(PhysicalModel::default(), vec![pane, target, exit, wall], &palette);
        let ghost = c.iter().find(|c| c.geomid == 1).expect("the ghost");
        let r = crate::slab_optics(&glass, 30f64.to_radians().cos()).reflectance;
        let head_on = 800.0 + 0.8_f32 as f64; // the retro lobe and its diffuse base
        assert!((ghost.range - 6.0).abs() < 1e-4, "{}", ghost.range);
        assert!((ghost.strength / (r * r * head_on) - 1.0).abs() < 1e-6, "{} vs {}", ghost.strength, r * r * head_on);
        // Booked in range order with the wall behind the pane (7.01 m).
        assert!(c.windows(2).all(|w| w[0].range <= w[1].range), "{c:?}");
        assert!(c.iter().any(|c| c.geomid == 2));
        // The seed's model: no ghost.
        assert!(candidates(&noiseless(), vec![pane, exit, wall], &palette).iter().all(|c| c.geomid != 1));
    }

    #[test]
    fn physical_double_glazing_shows_a_ghost_of_each_pane() {
        let glass = MaterialPreset::ClearFloatGlass.material();
        let retro = MaterialPreset::Retroreflector.material();
        let palette = Palette(vec![glass, retro, lambertian(0.8), glass, retro]);
        // Two parallel panes turned 30° (4 m on, and 1 m past the first's far face), each
        // folding the beam onto a retroreflector 2 m along its fold; the wall 3 m behind.
        // Surfaces in cast order: the first pane, its ghost's target, its far face, the
        // second pane, its ghost's target, its far face, the wall.
        let first = facing(4.0, 0, 30.0);
        let folded = fold(FORWARD, first.normal);
        let target = |geomid: i32| Surface { distance: 2.0, geomid, normal: -folded };
        let exit = |geomid: i32| Surface { distance: 0.01, geomid, normal: -first.normal };
        let second = Surface { distance: 1.0, geomid: 3, normal: first.normal };
        let surfaces = vec![first, target(1), exit(0), second, target(4), exit(3), facing(3.0, 2, 0.0)];
        let c = physical_candidates(PhysicalModel::default(), surfaces, &palette);
        let pane = crate::slab_optics(&glass, 30f64.to_radians().cos());
        let head_on = 800.0 + 0.8_f32 as f64;
        let ghost = |geomid: i32| *c.iter().find(|c| c.geomid == geomid).expect("a ghost");
        assert!((ghost(1).range - 6.0).abs() < 1e-4, "{}", ghost(1).range);
        assert!((ghost(4).range - 7.01).abs() < 1e-4, "{}", ghost(4).range);
        let r2 = pane.reflectance.powi(2);
        assert!((ghost(1).strength / (r2 * head_on) - 1.0).abs() < 1e-6);
        // The second pane's ghost went through the first pane both ways.
        let expected = pane.transmittance.powi(2) * r2 * head_on;
        assert!((ghost(4).strength / expected - 1.0).abs() < 1e-6, "{} vs {expected}", ghost(4).strength);
        assert!(c.windows(2).all(|w| w[0].range <= w[1].range), "{c:?}");
    }

    #[test]
    fn physical_two_echo_share_on_a_hedge_matches_the_split_footprint_prediction() {
        // A hedge 40 m on and a wall 3 m behind it, OS1 preset (two echoes): the canopy's
        // (1 − T) and the wall's T share of the beam each clear detection on their own odds, so
        // the share of beams with both echoes is the product of the two P_d.
        let p = ReturnPreset::OusterOs1.params();
        let physics = PhysicalModel::default();
        let hedge = MaterialPreset::Vegetation.material();
        let palette = Palette(vec![hedge, lambertian(0.9)]);
        let exit = Surface { distance: 0.5, geomid: 0, normal: DVec3::X };
        let scene = || vec![facing(40.0, 0, 0.0), exit, facing(2.5, 1, 0.0)];
        let t = hedge.transmission as f64;
        let leaves = (1.0 - t) * Optics::new(&p, &hedge).strength(&p, 1.0);
        let wall = t * 0.9_f32 as f64;
        let predicted = physics.detection_probability(&p, leaves, 40.0) * physics.detection_probability(&p, wall, 43.0);
        let beams = 20_000;
        let both = (0..beams)
            .filter(|&k| {
                let r = physical_run(&p, scene(), &palette, k);
                r.range > 0.0 && r.secondary_range > 0.0
            })
            .count();
        let share = both as f64 / beams as f64;
        let tolerance = 4.0 * (predicted * (1.0 - predicted) / beams as f64).sqrt() + 1e-3;
        assert!((share - predicted).abs() < tolerance, "two-echo share {share}, predicted {predicted}");
        assert!(share > 0.5, "{share}");
        // The seed's model: a beam is canopy or wall, never both.
        let seed_both = (0..2_000)
            .filter(|&k| {
                let r = run(&p, scene(), &palette, k);
                r.range > 0.0 && r.secondary_range > 0.0
            })
            .count();
        assert_eq!(seed_both, 0);
    }
}
