//! The return model over many beams at once, on vector lanes: the strengths of many surfaces
//! and the reports of beams with one or two candidates, each giving to the bit what the
//! one-beam path gives.

use rand::RngCore;

use super::{ARCH, BeamReturn, GLINT_CUTOFF, Optics, ReturnModel, TickKey, exp_neg, glint_exponent, retro};
use crate::ReturnParams;
use glint_materials::ZIGGURAT;

/// Up to [`LANES`] surfaces' optics and incidences, gathered one array per term, so that
/// their strengths are evaluated without branches or calls, on vector lanes, giving to the
/// bit what [`Optics::strength`] gives one surface.
pub(crate) struct SurfaceLanes {
    lambert: [f64; LANES],
    f0: [f64; LANES],
    inv_m2: [f64; LANES],
    blend: [f64; LANES],
    /// Incidence cosines, clamped to `[0, 1]`.
    c: [f64; LANES],
    retro_term: [f64; LANES],
}

impl Default for SurfaceLanes {
    fn default() -> SurfaceLanes {
        let none = Optics::NONE;
        SurfaceLanes {
            lambert: [none.lambert; LANES],
            f0: [none.f0; LANES],
            inv_m2: [none.inv_m2; LANES],
            blend: [none.blend; LANES],
            c: [0.0; LANES],
            retro_term: [0.0; LANES],
        }
    }
}

impl SurfaceLanes {
    /// Sets lane `i` to a surface of optics `o` at incidence cosine `cos`, all but its
    /// retroreflective term, which [`SurfaceLanes::retro_terms`] works out for the lanes where
    /// this returns true (the surface retroreflects).
    #[inline(always)]
    pub(crate) fn put(&mut self, i: usize, o: &Optics, cos: f64) -> bool {
        (self.lambert[i], self.f0[i], self.inv_m2[i], self.blend[i]) = (o.lambert, o.f0, o.inv_m2, o.blend);
        self.c[i] = cos.clamp(0.0, 1.0);
        o.blend > 0.0
    }

    /// The retroreflective terms of the lanes of bit mask `lanes` after [`SurfaceLanes::put`],
    /// and none for the others (filled as vectors, not stored lane by lane in `put`).
    pub(crate) fn retro_terms(&mut self, params: &ReturnParams, mut lanes: u64) {
        self.retro_term = [0.0; LANES];
        while lanes != 0 {
            let i = lanes.trailing_zeros() as usize;
            lanes &= lanes - 1;
            self.retro_term[i] = retro(params, self.blend[i], self.c[i]);
        }
    }

    /// The strengths of the first `n` lanes, into `out[..n]`, with the CPU's fused
    /// multiply-add where it has one, as [`Optics::strength`] (the portable build's `mul_add`
    /// is otherwise a library call per term of every lane's glint).
    pub(crate) fn strengths(&self, params: &ReturnParams, n: usize, out: &mut [f64; LANES]) {
        ARCH.dispatch(StrengthsOp { lanes: self, params, n, out });
    }

    /// [`SurfaceLanes::strengths`] on the instruction set of its caller.
    #[inline(always)]
    fn strengths_here(&self, params: &ReturnParams, n: usize, out: &mut [f64; LANES]) {
        for (i, s) in out.iter_mut().enumerate().take(n) {
            let o = Optics { lambert: self.lambert[i], f0: self.f0[i], inv_m2: self.inv_m2[i], blend: self.blend[i] };
            let x = glint_exponent(o.inv_m2, self.c[i]);
            *s = o.combine(params, self.c[i], x, exp_neg(x.min(GLINT_CUTOFF)), self.retro_term[i]);
        }
    }
}

/// [`SurfaceLanes::strengths`] as an operation `pulp` compiles for each instruction set.
struct StrengthsOp<'a> {
    lanes: &'a SurfaceLanes,
    params: &'a ReturnParams,
    n: usize,
    out: &'a mut [f64; LANES],
}

impl pulp::WithSimd for StrengthsOp<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        self.lanes.strengths_here(self.params, self.n, self.out);
    }
}

/// How many beams [`ReturnModel::report_lanes`] reports together.
pub(crate) const LANES: usize = 64;

/// The candidates of up to [`LANES`] beams that have one or two, one beam per lane:
/// candidate `k` of lane `i` is `range[k][i]`, `strength[k][i]`, `cos[k][i]`, `geomid[k][i]`.
pub(crate) struct Lanes {
    /// How many lanes are in use.
    pub(crate) n: usize,
    /// The beams' numbers in their tick (keys of their random streams).
    pub(crate) beam: [u64; LANES],
    pub(crate) range: [[f64; LANES]; 2],
    pub(crate) strength: [[f64; LANES]; 2],
    pub(crate) cos: [[f64; LANES]; 2],
    pub(crate) geomid: [[i32; LANES]; 2],
}

impl Default for Lanes {
    fn default() -> Lanes {
        Lanes {
            n: 0,
            beam: [0; LANES],
            range: [[0.0; LANES]; 2],
            strength: [[0.0; LANES]; 2],
            cos: [[0.0; LANES]; 2],
            geomid: [[-1; LANES]; 2],
        }
    }
}

impl Lanes {
    /// Sets candidate `k` of lane `i` to `(range, cos, geomid)`, all but its strength.
    #[inline(always)]
    pub(crate) fn set(&mut self, k: usize, i: usize, (range, cos, geomid): (f64, f64, i32)) {
        (self.range[k][i], self.cos[k][i], self.geomid[k][i]) = (range, cos, geomid);
    }
}

/// What [`ReturnModel::report_lanes`] made of a lane, and what detection makes of one
/// candidate without drawing ([`ReturnModel::detect_quick`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Quick {
    /// No echo: dropped.
    None,
    /// The lane's report: detected.
    Echo,
    /// Left to the one-beam path: it needs a draw or the power law the lanes do not do.
    Scalar,
    /// Detected, but its first normal draw falls outside the ziggurat's common case: its
    /// ranges are measured after the loop ([`ReturnModel::later_draws`]).
    Redraw,
}

/// The reports of up to [`LANES`] beams, a [`BeamReturn`]'s fields apart (so that the
/// lanes store them as vectors).
pub(crate) struct LaneReports {
    state: [Quick; LANES],
    pub(crate) range: [f32; LANES],
    pub(crate) secondary_range: [f32; LANES],
    pub(crate) intensity: [f32; LANES],
    pub(crate) reflectivity: [f32; LANES],
    pub(crate) geomid: [i32; LANES],
}

impl LaneReports {
    /// Whether the lanes made lane `i`'s report (its fields hold it, [`BeamReturn::NONE`]'s
    /// when dropped).
    #[inline(always)]
    pub(crate) fn made(&self, i: usize) -> bool {
        self.state[i] != Quick::Scalar
    }

    /// Lane `i`'s report, `None` when it is left to the one-beam path.
    #[cfg(test)]
    pub(crate) fn get(&self, i: usize) -> Option<BeamReturn> {
        match self.state[i] {
            Quick::None => Some(BeamReturn::NONE),
            Quick::Echo => Some(BeamReturn {
                range: self.range[i],
                secondary_range: self.secondary_range[i],
                intensity: self.intensity[i],
                reflectivity: self.reflectivity[i],
                geomid: self.geomid[i],
            }),
            Quick::Scalar | Quick::Redraw => None,
        }
    }
}

impl Default for LaneReports {
    fn default() -> LaneReports {
        LaneReports {
            state: [Quick::None; LANES],
            range: [0.0; LANES],
            secondary_range: [0.0; LANES],
            intensity: [0.0; LANES],
            reflectivity: [0.0; LANES],
            geomid: [0; LANES],
        }
    }
}

impl ReturnModel {
    /// [`ReturnModel::report`] of up to [`LANES`] beams at once, on vector lanes, to the
    /// bit: lane `i` is beam `lanes.beam[i]` of the tick keyed `key`, with its first
    /// `COUNT` (1 or 2) candidates in `lanes`, in range order. A lane that needs what the
    /// lanes do not do (a grazing surface's detection draw, the reflectivity's power law)
    /// comes out [`Quick::Scalar`], for the caller to report one by one. Normal draws past
    /// the ziggurat's common case are made after the loop, for the few lanes that need them.
    /// Under the physical model every lane is left to the one-beam path (its detection draw
    /// and its noise are the candidates' own); the lanes then serve for the strengths.
    pub(crate) fn report_lanes<const COUNT: usize>(
        &self,
        window: (f64, f64),
        key: TickKey,
        lanes: &Lanes,
        out: &mut LaneReports,
    ) {
        if self.physics.is_some() {
            out.state = [Quick::Scalar; LANES];
            return;
        }
        let params = &self.params;
        let zig = &*ZIGGURAT;
        let two_reported = params.max_returns >= 2;
        // The second echoes' ranges, measured after the loop: few lanes have one, and their
        // draws' table lookups would cost every lane. So are the ranges of the lanes whose
        // first draw is not a common one (about 1 %).
        let (mut first, mut second) = ([f64::NAN; LANES], [f64::NAN; LANES]);
        // Every lane, used or not: a fixed count keeps the loop on vector lanes.
        for i in 0..LANES {
            let mut rng = key.beam(lanes.beam[i]);
            let (z1, stands1) = zig.quick(rng.next_u64());
            let candidate = |k: usize| (lanes.range[k][i], lanes.strength[k][i], lanes.cos[k][i]);
            let d0 = self.detect_quick(window, candidate(0));
            let d1 = if COUNT > 1 { self.detect_quick(window, candidate(1)) } else { Quick::None };
            // `report`'s merging and choice, for two candidates: close echoes merge into the
            // stronger (the first among equals), else the stronger of two leads.
            let both = d0 == Quick::Echo && d1 == Quick::Echo;
            let (r0, r1) = (lanes.range[0][i], lanes.range[1][i]);
            let (s0, s1) = (lanes.strength[0][i], lanes.strength[1][i]);
            // Detected ranges are finite (inside the window), so `>=` is `report`'s `!<`.
            let two = both && r1 - r0 >= params.min_return_separation;
            let lead_second = if two {
                s1.total_cmp(&s0).is_gt()
            } else if both {
                s1 > s0
            } else {
                d1 == Quick::Echo
            };
            let pick = |second: bool, a: f64, b: f64| if second { b } else { a };
            let (range, strength) = (pick(lead_second, r0, r1), pick(lead_second, s0, s1));
            let other = pick(lead_second, r1, r0);
            let secondary = two && two_reported;
            // A lane left to the one-beam path gets its report there: what is written here
            // is written over.
            let echo = d0 != Quick::None || d1 != Quick::None;
            out.state[i] = if d0 == Quick::Scalar || d1 == Quick::Scalar {
                Quick::Scalar
            } else if !echo {
                Quick::None
            } else if stands1 {
                Quick::Echo
            } else {
                Quick::Redraw
            };
            let none = BeamReturn::NONE;
            first[i] = range;
            out.range[i] = if echo { self.noisy(range, z1) } else { none.range };
            out.secondary_range[i] = none.secondary_range;
            second[i] = if echo && secondary { other } else { f64::NAN };
            out.intensity[i] = if echo { self.intensity(range, strength) } else { none.intensity };
            out.reflectivity[i] = if echo { strength as f32 } else { none.reflectivity };
            let geomid = if lead_second { lanes.geomid[1][i] } else { lanes.geomid[0][i] };
            out.geomid[i] = if echo { geomid } else { none.geomid };
        }
        self.later_draws(key, lanes, (&first, &second), out);
    }

    /// The measured ranges that the loop leaves, from each beam's stream as
    /// [`ReturnModel::report`] draws it: the lanes' `second` echoes (NaN: none), and both
    /// ranges (the first from `first`) of the lanes left [`Quick::Redraw`].
    fn later_draws(
        &self,
        key: TickKey,
        lanes: &Lanes,
        (first, second): (&[f64; LANES], &[f64; LANES]),
        out: &mut LaneReports,
    ) {
        // Which lanes have any, as a bit mask (a loop that stays on vector lanes): few do.
        let mut later = 0u64;
        for (i, (&state, other)) in out.state.iter().zip(second).enumerate() {
            later |= u64::from(state == Quick::Redraw || !other.is_nan()) << i;
        }
        while later != 0 {
            let i = later.trailing_zeros() as usize;
            later &= later - 1;
            let redraw = out.state[i] == Quick::Redraw;
            if !redraw && out.state[i] != Quick::Echo {
                continue;
            }
            let mut rng = key.beam(lanes.beam[i]);
            if redraw {
                out.range[i] = self.noisy(first[i], ZIGGURAT.sample(&mut rng));
                out.state[i] = Quick::Echo;
            } else {
                // The first draw, which stood.
                rng.next_u64();
            }
            if !second[i].is_nan() {
                out.secondary_range[i] = self.noisy(second[i], ZIGGURAT.sample(&mut rng));
            }
        }
    }

    /// [`ReturnModel::detected`] of a candidate `(range, strength, cos)` as far as it goes
    /// without drawing: [`Quick::Echo`] when detected, [`Quick::Scalar`] when it needs a
    /// draw or the power law. The tests run in `detected`'s order.
    #[inline(always)]
    fn detect_quick(&self, (min_range, max_range): (f64, f64), (r, s, c): (f64, f64, f64)) -> Quick {
        if s < self.params.detect_floor {
            Quick::None
        } else if r >= self.sure_range {
            Quick::Scalar
        } else if !(min_range <= r && r < max_range) {
            Quick::None
        } else if c >= self.params.grazing_cos_cutoff {
            Quick::Echo
        } else {
            Quick::Scalar
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::return_model::{BeamRng, Candidate};
    use crate::{ReturnParams, ReturnPreset};

    /// A candidate value drawn from ordinary ones and the awkward ones a scan can produce.
    fn pick(rng: &mut BeamRng, ordinary: f64, awkward: &[f64]) -> f64 {
        let u = rng.uniform();
        if u < 0.85 { ordinary * rng.uniform() } else { awkward[(u * 1e6) as usize % awkward.len()] }
    }

    /// Lanes of one and two candidates against `report_one` and `report`, beam by beam, over
    /// ordinary candidates and awkward ones (NaN, infinite, zero, negative, past the window,
    /// grazing, close pairs that merge), under presets with one and two echoes.
    #[test]
    fn lanes_report_what_one_beam_reports() {
        let mut rng = BeamRng::new(99, 0, 0, 0);
        let key = BeamRng::tick_key(5, 1, 2);
        let mut lanes_checked = [0usize; 2];
        for preset in [ReturnPreset::OusterOs1, ReturnPreset::Generic] {
            let model = ReturnModel::new(ReturnParams { noise_sigma0: 0.05, ..preset.params() });
            let window = (0.3, 60.0);
            for round in 0..200 {
                let mut lanes = Lanes { n: LANES, ..Lanes::default() };
                for i in 0..LANES {
                    lanes.beam[i] = (round * LANES + i) as u64;
                    let range = pick(&mut rng, 80.0, &[f64::NAN, f64::INFINITY, 0.0, -1.0, 0.3, 60.0]);
                    let gap = pick(&mut rng, 3.0, &[0.0, 0.05, 1.0, f64::NAN]);
                    for (k, r) in [range, range + gap].into_iter().enumerate() {
                        let strength = pick(&mut rng, 2.0, &[f64::NAN, 0.0, 1e-3, 800.0]);
                        let cos = pick(&mut rng, 1.0, &[f64::NAN, 0.0, 0.05, 1.0]);
                        lanes.set(k, i, (r, cos, (i + k) as i32));
                        lanes.strength[k][i] = strength;
                    }
                }
                let mut out = LaneReports::default();
                for count in [1, 2] {
                    if count == 1 {
                        model.report_lanes::<1>(window, key, &lanes, &mut out);
                    } else {
                        model.report_lanes::<2>(window, key, &lanes, &mut out);
                    }
                    for i in 0..LANES {
                        let Some(quick) = out.get(i) else { continue };
                        let candidate = |k: usize| Candidate {
                            range: lanes.range[k][i],
                            strength: lanes.strength[k][i],
                            cos: lanes.cos[k][i],
                            geomid: lanes.geomid[k][i],
                            spread: 0.0,
                        };
                        let mut beam = key.beam(lanes.beam[i]);
                        let one = match count {
                            1 => model.report_one(window, &candidate(0), &mut beam),
                            _ => model.report(window, &[candidate(0), candidate(1)], &mut beam),
                        };
                        let bits = |r: &BeamReturn| {
                            (
                                r.range.to_bits(),
                                r.secondary_range.to_bits(),
                                r.intensity.to_bits(),
                                r.reflectivity.to_bits(),
                                r.geomid,
                            )
                        };
                        assert_eq!(
                            bits(&quick),
                            bits(&one),
                            "{preset:?}, {count} candidates, lane {i}: {:?}",
                            candidate(0)
                        );
                        lanes_checked[count - 1] += 1;
                    }
                }
            }
        }
        // Of 25,600 lanes per count, many are reported on the lanes (the rest, left to the
        // one-beam path, are mostly past Generic's sure range).
        assert!(lanes_checked.iter().all(|&n| n > 5_000), "{lanes_checked:?}");
    }
}
