//! A sensor's live scan in one world: the clean geometric returns, and, when asked for, the
//! return model's measurement and the secondary geometry the recorder captures.

use glam::DVec3;

use crate::BeamReturn;
use crate::return_model::Surface;
use crate::return_model::{LANES, LaneReports};

/// The live scan of one sensor in one world, one entry per beam (index
/// `bin * channels + channel`). Beams not yet cast hold a miss.
#[derive(Clone, Debug, Default)]
pub struct Scan {
    /// Metres along the beam, or `-1` for no return.
    pub range: Vec<f32>,
    /// Geom hit, or `-1`.
    pub geomid: Vec<i32>,
    /// Where each beam met its surface, present while the lidars keep surfaces
    /// ([`Lidars::set_keep_surfaces`](crate::Lidars::set_keep_surfaces), on by default).
    pub surfaces: Option<Surfaces>,
    /// Simulation time of the tick that cast the beam (seconds), or `-1` before its first.
    pub time: Vec<f64>,
    /// The return model's measurement, present while a material source is loaded.
    pub returns: Option<Returns>,
    /// The surface straight on past each hit, present when the binding captures it.
    pub pass_through: Option<SecondaryHits>,
    /// The surface each hit folds onto, present when the binding captures it.
    pub reflected: Option<SecondaryHits>,
}

/// Each beam's hit point and surface normal. Beams with no return, and beams cast before the
/// scan kept surfaces, hold zeros (a hit's normal is a unit vector).
#[derive(Clone, Debug, Default)]
pub struct Surfaces {
    /// Hit point in the world frame.
    pub point: Vec<[f32; 3]>,
    /// Unit surface normal at the hit, world frame.
    pub normal: Vec<[f32; 3]>,
}

impl Surfaces {
    fn new(beams: usize) -> Surfaces {
        Surfaces { point: vec![[0.0; 3]; beams], normal: vec![[0.0; 3]; beams] }
    }

    /// Whether beam `k`'s surface is known: it hit, and was cast while surfaces were kept.
    pub fn known(&self, k: usize) -> bool {
        self.normal[k] != [0.0; 3]
    }

    fn part(&mut self) -> SurfacesPart<'_> {
        SurfacesPart { point: &mut self.point, normal: &mut self.normal }
    }
}

/// Which optional parts a [`Scan`] holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ScanLayout {
    pub(crate) surfaces: bool,
    pub(crate) returns: bool,
    pub(crate) pass_through: bool,
    pub(crate) reflected: bool,
}

/// The return model's measurement of every beam (the seed's material scan).
#[derive(Clone, Debug, Default)]
pub struct Returns {
    /// Measured range of the strongest echo (m), `-1` for none.
    pub range: Vec<f32>,
    /// Measured range of the second echo (m); all `-1` when `maxReturns < 2`.
    pub secondary_range: Vec<f32>,
    /// Intensity of the strongest echo; `-1` where there is none or its material is not
    /// resolvable.
    pub intensity: Vec<f32>,
    /// Calibrated reflectivity (range-compensated strength, multiples of a perfect matte
    /// surface head-on) of the strongest echo; `-1` likewise.
    pub reflectivity: Vec<f32>,
    /// Geom of the strongest echo (a mirror's phantom names the surface it folded onto).
    pub geomid: Vec<i32>,
}

/// Secondary geometry per beam, material-agnostic (the seed's `sec_*` / `refl_*` columns).
#[derive(Clone, Debug, Default)]
pub struct SecondaryHits {
    /// Pass-through: metres from the sensor to the next surface past the first hit.
    /// Reflected: metres from the first hit along the folded direction. `-1` for none.
    pub range: Vec<f32>,
    /// Geom of that surface, or `-1`.
    pub geomid: Vec<i32>,
    /// Its unit normal, world frame (zero for none).
    pub normal: Vec<[f32; 3]>,
}

impl SecondaryHits {
    fn new(beams: usize) -> SecondaryHits {
        SecondaryHits { range: vec![-1.0; beams], geomid: vec![-1; beams], normal: vec![[0.0; 3]; beams] }
    }

    fn part(&mut self) -> HitsPart<'_> {
        HitsPart { range: &mut self.range, geomid: &mut self.geomid, normal: &mut self.normal }
    }
}

impl Returns {
    fn new(beams: usize) -> Returns {
        Returns {
            range: vec![-1.0; beams],
            secondary_range: vec![-1.0; beams],
            intensity: vec![-1.0; beams],
            reflectivity: vec![-1.0; beams],
            geomid: vec![-1; beams],
        }
    }

    fn part(&mut self) -> ReturnsPart<'_> {
        ReturnsPart {
            range: &mut self.range,
            secondary_range: &mut self.secondary_range,
            intensity: &mut self.intensity,
            reflectivity: &mut self.reflectivity,
            geomid: &mut self.geomid,
        }
    }
}

fn f32x3(v: DVec3) -> [f32; 3] {
    [v.x as f32, v.y as f32, v.z as f32]
}

impl Scan {
    /// A scan of `beams` misses, with the optional parts of `layout`.
    pub(crate) fn new(beams: usize, layout: ScanLayout) -> Scan {
        Scan {
            range: vec![-1.0; beams],
            geomid: vec![-1; beams],
            surfaces: layout.surfaces.then(|| Surfaces::new(beams)),
            time: vec![-1.0; beams],
            returns: layout.returns.then(|| Returns::new(beams)),
            pass_through: layout.pass_through.then(|| SecondaryHits::new(beams)),
            reflected: layout.reflected.then(|| SecondaryHits::new(beams)),
        }
    }

    /// Every beam back to a miss never cast, keeping the layout.
    pub(crate) fn clear(&mut self) {
        let beams = self.len();
        self.range.fill(-1.0);
        self.geomid.fill(-1);
        self.time.fill(-1.0);
        if let Some(s) = &mut self.surfaces {
            *s = Surfaces::new(beams);
        }
        if let Some(r) = &mut self.returns {
            *r = Returns::new(beams);
        }
        for hits in [&mut self.pass_through, &mut self.reflected].into_iter().flatten() {
            *hits = SecondaryHits::new(beams);
        }
    }

    /// Adds or drops the optional parts (new parts start as misses).
    pub(crate) fn set_layout(&mut self, layout: ScanLayout) {
        let ScanLayout { surfaces, returns, pass_through, reflected } = layout;
        let beams = self.len();
        if surfaces != self.surfaces.is_some() {
            self.surfaces = surfaces.then(|| Surfaces::new(beams));
        }
        if returns != self.returns.is_some() {
            self.returns = returns.then(|| Returns::new(beams));
        }
        if pass_through != self.pass_through.is_some() {
            self.pass_through = pass_through.then(|| SecondaryHits::new(beams));
        }
        if reflected != self.reflected.is_some() {
            self.reflected = reflected.then(|| SecondaryHits::new(beams));
        }
    }

    /// Number of beams.
    pub fn len(&self) -> usize {
        self.range.len()
    }

    /// Whether the scan has no beams.
    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }

    /// Number of beams with a return.
    pub fn hits(&self) -> usize {
        self.range.iter().filter(|&&r| r >= 0.0).count()
    }

    pub(crate) fn part(&mut self) -> ScanPart<'_> {
        ScanPart {
            range: &mut self.range,
            geomid: &mut self.geomid,
            surfaces: self.surfaces.as_mut().map(Surfaces::part),
            time: &mut self.time,
            returns: self.returns.as_mut().map(Returns::part),
            pass_through: self.pass_through.as_mut().map(SecondaryHits::part),
            reflected: self.reflected.as_mut().map(SecondaryHits::part),
        }
    }
}

/// A contiguous run of one scan's beams, written by one group of a tick.
pub(crate) struct ScanPart<'a> {
    range: &'a mut [f32],
    geomid: &'a mut [i32],
    surfaces: Option<SurfacesPart<'a>>,
    pub(crate) time: &'a mut [f64],
    pub(crate) returns: Option<ReturnsPart<'a>>,
    pub(crate) pass_through: Option<HitsPart<'a>>,
    pub(crate) reflected: Option<HitsPart<'a>>,
}

pub(crate) struct SurfacesPart<'a> {
    point: &'a mut [[f32; 3]],
    normal: &'a mut [[f32; 3]],
}

impl<'a> SurfacesPart<'a> {
    fn split_at(self, mid: usize) -> (SurfacesPart<'a>, SurfacesPart<'a>) {
        let (p0, p1) = split(self.point, mid);
        let (n0, n1) = split(self.normal, mid);
        (SurfacesPart { point: p0, normal: n0 }, SurfacesPart { point: p1, normal: n1 })
    }
}

pub(crate) struct ReturnsPart<'a> {
    range: &'a mut [f32],
    secondary_range: &'a mut [f32],
    intensity: &'a mut [f32],
    reflectivity: &'a mut [f32],
    geomid: &'a mut [i32],
}

pub(crate) struct HitsPart<'a> {
    range: &'a mut [f32],
    geomid: &'a mut [i32],
    normal: &'a mut [[f32; 3]],
}

fn split<T>(s: &mut [T], mid: usize) -> (&mut [T], &mut [T]) {
    s.split_at_mut(mid)
}

impl<'a> ScanPart<'a> {
    /// How many of the part's beams have a return (a range of 0 or more).
    pub(crate) fn hits(&self) -> u64 {
        self.range.iter().filter(|&&r| r >= 0.0).count() as u64
    }

    pub(crate) fn split_at(self, mid: usize) -> (ScanPart<'a>, ScanPart<'a>) {
        let (r0, r1) = split(self.range, mid);
        let (g0, g1) = split(self.geomid, mid);
        let (s0, s1) = self.surfaces.map(|s| s.split_at(mid)).unzip();
        let (t0, t1) = split(self.time, mid);
        let (ret0, ret1) = self.returns.map(|r| r.split_at(mid)).unzip();
        let (pass0, pass1) = self.pass_through.map(|h| h.split_at(mid)).unzip();
        let (refl0, refl1) = self.reflected.map(|h| h.split_at(mid)).unzip();
        (
            ScanPart {
                range: r0,
                geomid: g0,
                surfaces: s0,
                time: t0,
                returns: ret0,
                pass_through: pass0,
                reflected: refl0,
            },
            ScanPart {
                range: r1,
                geomid: g1,
                surfaces: s1,
                time: t1,
                returns: ret1,
                pass_through: pass1,
                reflected: refl1,
            },
        )
    }

    /// The clean arrays, and the return model's if it runs, to be written together.
    pub(crate) fn clean_and_returns(&mut self) -> (CleanPart<'_>, Option<&mut ReturnsPart<'a>>) {
        let surfaces = self.surfaces.as_mut().map(|s| SurfacesPart { point: &mut *s.point, normal: &mut *s.normal });
        let clean = CleanPart { range: self.range, geomid: self.geomid, surfaces };
        (clean, self.returns.as_mut())
    }
}

/// The clean arrays of a [`ScanPart`].
pub(crate) struct CleanPart<'b> {
    range: &'b mut [f32],
    geomid: &'b mut [i32],
    surfaces: Option<SurfacesPart<'b>>,
}

impl CleanPart<'_> {
    /// Writes the clean returns of rays `r` from `origin` along `dirs[r]` into beams
    /// `order[r]`: those `hit` takes for a return, the others as misses.
    pub(crate) fn set_rays(
        &mut self,
        order: &[usize],
        origin: DVec3,
        (dirs, dist, geomid, normal): (&[DVec3], &[f64], &[i32], &[DVec3]),
        hit: impl Fn(f64, i32) -> bool,
    ) {
        let n = order.len();
        let (dirs, dist, geomid, normal) = (&dirs[..n], &dist[..n], &geomid[..n], &normal[..n]);
        if self.surfaces.is_some() {
            for (r, &j) in order.iter().enumerate() {
                let (d, g) = (dist[r], geomid[r]);
                self.set(j, hit(d, g).then(|| (d, g, origin + dirs[r] * d, normal[r])));
            }
            return;
        }
        // Ranges and geoms alone: a tight loop with nothing computed for the surfaces.
        let (range, geom) = (&mut *self.range, &mut *self.geomid);
        for (r, &j) in order.iter().enumerate() {
            let (d, g) = (dist[r], geomid[r]);
            let yes = hit(d, g);
            range[j] = if yes { d as f32 } else { -1.0 };
            geom[j] = if yes { g } else { -1 };
        }
    }

    /// Writes beam `j`'s clean return: a hit at `point` with `normal`, or a miss. Always
    /// inlined: a call per beam made the clean scan a third slower.
    #[inline(always)]
    pub(crate) fn set(&mut self, j: usize, hit: Option<(f64, i32, DVec3, DVec3)>) {
        match hit {
            Some((d, g, p, n)) => {
                self.range[j] = d as f32;
                self.geomid[j] = g;
                if let Some(s) = &mut self.surfaces {
                    s.point[j] = f32x3(p);
                    s.normal[j] = f32x3(n);
                }
            }
            None => {
                self.range[j] = -1.0;
                self.geomid[j] = -1;
                if let Some(s) = &mut self.surfaces {
                    s.point[j] = [0.0; 3];
                    s.normal[j] = [0.0; 3];
                }
            }
        }
    }
}

impl<'a> ReturnsPart<'a> {
    fn split_at(self, mid: usize) -> (ReturnsPart<'a>, ReturnsPart<'a>) {
        let (r0, r1) = split(self.range, mid);
        let (s0, s1) = split(self.secondary_range, mid);
        let (i0, i1) = split(self.intensity, mid);
        let (f0, f1) = split(self.reflectivity, mid);
        let (g0, g1) = split(self.geomid, mid);
        (
            ReturnsPart { range: r0, secondary_range: s0, intensity: i0, reflectivity: f0, geomid: g0 },
            ReturnsPart { range: r1, secondary_range: s1, intensity: i1, reflectivity: f1, geomid: g1 },
        )
    }

    /// Writes the reports of `n` beams from `start`, one per lane of `lanes` (what the lanes
    /// left to the one-beam path is written over later).
    #[inline]
    pub(crate) fn set_lanes(&mut self, start: usize, n: usize, lanes: &LaneReports) {
        // A whole chunk's copies get a size known here: a few vector moves rather than calls.
        if n == LANES { self.copy_lanes(start, LANES, lanes) } else { self.copy_lanes(start, n, lanes) }
    }

    #[inline(always)]
    fn copy_lanes(&mut self, start: usize, n: usize, lanes: &LaneReports) {
        let end = start + n;
        self.range[start..end].copy_from_slice(&lanes.range[..n]);
        self.secondary_range[start..end].copy_from_slice(&lanes.secondary_range[..n]);
        self.intensity[start..end].copy_from_slice(&lanes.intensity[..n]);
        self.reflectivity[start..end].copy_from_slice(&lanes.reflectivity[..n]);
        self.geomid[start..end].copy_from_slice(&lanes.geomid[..n]);
    }

    #[inline]
    pub(crate) fn set(&mut self, j: usize, r: &BeamReturn) {
        self.range[j] = r.range;
        self.secondary_range[j] = r.secondary_range;
        self.intensity[j] = r.intensity;
        self.reflectivity[j] = r.reflectivity;
        self.geomid[j] = r.geomid;
    }
}

impl<'a> HitsPart<'a> {
    fn split_at(self, mid: usize) -> (HitsPart<'a>, HitsPart<'a>) {
        let (r0, r1) = split(self.range, mid);
        let (g0, g1) = split(self.geomid, mid);
        let (n0, n1) = split(self.normal, mid);
        (HitsPart { range: r0, geomid: g0, normal: n0 }, HitsPart { range: r1, geomid: g1, normal: n1 })
    }

    /// Writes beam `j`'s secondary surface, booked at `offset` plus its distance.
    #[inline]
    pub(crate) fn set(&mut self, j: usize, offset: f64, hit: Option<Surface>) {
        match hit {
            Some(s) => {
                self.range[j] = (offset + s.distance) as f32;
                self.geomid[j] = s.geomid;
                self.normal[j] = f32x3(s.normal);
            }
            None => {
                self.range[j] = -1.0;
                self.geomid[j] = -1;
                self.normal[j] = [0.0; 3];
            }
        }
    }
}
