//! The depth-sensor models on a band of rendered pixels (`spec/depth-sensors.md`): each
//! pixel's light is followed through the NIR materials ([`follow`]), and the camera's model
//! turns the returns into what the device reports, or a debug channel replaces the depth.

use glam::DVec3;
use glint_core::{Cast, CastOne, HitsMut, Origins, Spelled};
use glint_materials::{Continuation, NirMaterial};

use super::{Renderer, Shared, Traced, View, material, view_rays};
use crate::depth_model::{DebugChannel, ItofPhase, SensorModel, TargetOrder, poisson_draw, uniform_draw};
use crate::light_path::{Echo, Hit, Path, follow, opaque_echo};
use crate::{CameraError, DepthSensor, Projection, normal_draw, pixel_key};

/// Salts that keep a pixel's draws for different purposes apart.
const GAP_SALT: u64 = 0x6761_7073;
const PHASE_SALT: u64 = 0x7068_6173;
/// dToF: histogram counts per unit of return strength (≈: a white wall head-on at 1 m
/// fills its peak with 10⁴ photons per frame).
const PHOTON_GAIN: f64 = 1.0e4;
/// dToF: a peak must stand this many standard deviations of the ambient above it.
const PEAK_SIGMAS: f64 = 5.0;
/// How far a surface a second viewpoint meets may lie before the point and still be it.
const SAME_POINT: f64 = 1e-4;

/// A pixel's ray and where its light goes; `None` where the ray meets nothing.
type PixelPath = Option<(PixelRay, Path)>;

/// One pixel's ray: where it starts, its unit direction and its length per unit of depth
/// along the optical axis.
#[derive(Clone, Copy)]
struct PixelRay {
    origin: DVec3,
    dir: DVec3,
    per_depth: f64,
}

impl PixelRay {
    /// Ray `r` of `t`, cast from `view`.
    fn of(view: &View, t: &Traced, r: usize) -> PixelRay {
        let per_depth = t.dirs[r].length();
        PixelRay { origin: t.origin(view.pos, r), dir: t.dirs[r] * per_depth.recip(), per_depth }
    }
}

impl Renderer {
    /// Replaces the clean depth of the band's pixels (`pixel`, image rows from `row0`) by
    /// what `view`'s depth sensor reports, or by its debug channel.
    pub(super) fn measure_band(
        &self,
        s: &Shared,
        view: &View,
        (pixel, row0): (&[usize], usize),
        t: &Traced,
        depth: &mut [f32],
    ) -> Result<(), CameraError> {
        let sensor = &view.options.depth_sensor;
        let key = band_keys(s, view, row0);
        // The centre rays' paths, which the debug channels read.
        let paths: Vec<PixelPath> = if sensor.debug_channel != DebugChannel::Depth {
            (0..t.len()).map(|r| self.center_path(s, view, t, r, uniform_draw(key(pixel[r], GAP_SALT)))).collect()
        } else {
            Vec::new()
        };
        let measured: Vec<f32> = match sensor.model {
            SensorModel::None => pixel.iter().map(|&p| depth[p]).collect(),
            SensorModel::ActiveStereo | SensorModel::StructuredLight => {
                let draws = Draws {
                    noise: &|r| normal_draw(key(pixel[r], 0)),
                    gap: &|r| uniform_draw(key(pixel[r], GAP_SALT)),
                };
                self.triangulate_band(s, view, sensor, (pixel, t, &paths), &draws)?
            }
            SensorModel::IToF | SensorModel::DToFSparse => self.time_of_flight_band(s, view, (pixel, row0))?,
        };
        for (r, &p) in pixel.iter().enumerate() {
            depth[p] = match sensor.debug_channel {
                DebugChannel::Depth => measured[r],
                channel => debug_value(channel, paths.get(r).and_then(Option::as_ref), measured[r]),
            };
        }
        Ok(())
    }

    /// What an iToF or dToF sensor reports at the band's pixels (`pixel`, image rows from
    /// `row0`): from its own sub-pixel or zone rays, without the band's centre rays.
    pub(super) fn time_of_flight_band(
        &self,
        s: &Shared,
        view: &View,
        (pixel, row0): (&[usize], usize),
    ) -> Result<Vec<f32>, CameraError> {
        let sensor = &view.options.depth_sensor;
        let width = view.model.width;
        if sensor.model == SensorModel::IToF {
            let key = band_keys(s, view, row0);
            let keys: Vec<[u64; 2]> = pixel.iter().map(|&p| [key(p, PHASE_SALT), key(p, PHASE_SALT + 1)]).collect();
            return self.itof_band(s, view, sensor, (pixel, row0), &keys);
        }
        let frame = noise_frame(s, view);
        let cells = &s.zone_depths[view.w][view.slot];
        let n = sensor.zones as usize;
        let mut out = Vec::with_capacity(pixel.len());
        for &p in pixel {
            let zone = zone_of(sensor, view, p % width, row0 + p / width);
            let cell = &cells[zone.1 * n + zone.0];
            let z = match cell.get() {
                Some(&z) => z,
                None => {
                    // Two bands may both compute a zone: the same draws, the same depth.
                    let z = self.dtof_zone(s, view, sensor, zone, frame)?;
                    let _ = cell.set(z);
                    z
                }
            };
            out.push(z);
        }
        Ok(out)
    }

    /// The light path of ray `r` of `t`, or none where the ray meets nothing.
    fn center_path(&self, s: &Shared, view: &View, t: &Traced, r: usize, gap: f64) -> Option<(PixelRay, Path)> {
        let ray = PixelRay::of(view, t, r);
        let first = match t.skin_of[r] {
            // A skin nearer than the geoms: its visible colour stands for its NIR material.
            Some((k, _)) => {
                (Hit { dist: t.dist[r] * ray.per_depth, geom: -1, normal: t.normal[r] }, skin_material(s, k))
            }
            // The surface colour shows is the first one unless transparent ones lie in front.
            None if t.geomid[r] >= 0 && t.seg_of[r] == t.geomid[r] => {
                let g = t.geomid[r];
                (Hit { dist: t.dist[r] * ray.per_depth, geom: g, normal: t.normal[r] }, self.nir(s, g))
            }
            None => {
                let hit = cast(s, view, ray.origin, ray.dir, -1)?;
                (hit, self.nir(s, hit.geom))
            }
        };
        let path =
            follow((ray.origin, ray.dir), first, &|g| self.nir(s, g), &|o, d, skip| cast(s, view, o, d, skip), gap);
        Some((ray, path))
    }

    /// Active stereo or structured light over a band: each pixel's matched surface's depth,
    /// where the projector's light comes back strongly enough, no material defeats the
    /// matcher and the device's second viewpoint sees the point (one packet cast from it
    /// for the band; rays that meet glass or foliage first are followed one by one).
    fn triangulate_band(
        &self,
        s: &Shared,
        view: &View,
        sensor: &DepthSensor,
        (pixel, t, paths): (&[usize], &Traced, &[PixelPath]),
        draws: &Draws,
    ) -> Result<Vec<f32>, CameraError> {
        let Projection::Perspective { f, .. } = view.model.projection else {
            return Ok(vec![0.0; pixel.len()]);
        };
        let width = view.model.width;
        let second = view.pos + view.mat * DVec3::new(sensor.baseline, 0.0, 0.0);
        // Per pixel the matched depth and the point to see, where the materials allow one.
        // Paths already followed (for a debug channel) are read; else an opaque first surface
        // is judged on the spot and only the others are followed.
        let candidates: Vec<Option<(f64, DVec3)>> = (0..pixel.len())
            .map(|r| match paths.get(r) {
                Some(p) => p.as_ref().and_then(|(ray, path)| self.match_point(s, view, sensor, ray, path)),
                None => match self.opaque_first(s, view, t, r) {
                    Some((ray, echo)) => self.verdict(s, view, sensor, &ray, Matched::opaque(echo)),
                    None => self
                        .center_path(s, view, t, r, (draws.gap)(r))
                        .and_then(|(ray, path)| self.match_point(s, view, sensor, &ray, &path)),
                },
            })
            .collect();
        // What each pixel reads if the second viewpoint sees its point; a pixel that reads
        // nothing even then (past the disparity limit or the range gate) needs no ray.
        let mut out: Vec<f32> = (0..pixel.len())
            .map(|r| {
                candidates[r]
                    .map_or(0.0, |(z, _)| sensor.triangulate(z, pixel[r] % width, f[0], true, (draws.noise)(r)))
            })
            .collect();
        let wanted: Vec<usize> = (0..pixel.len()).filter(|&r| out[r] != 0.0).collect();
        let dirs: Vec<DVec3> = wanted.iter().map(|&r| candidates[r].expect("wanted").1 - second).collect();
        let n = dirs.len();
        let (mut dist, mut geomid, mut normal) = (vec![0.0; n], vec![0; n], vec![DVec3::ZERO; n]);
        let cast = Cast {
            world: view.w,
            origins: Origins::Shared(second),
            dirs: &dirs,
            exclude_body: -1,
            skip_geom: -1,
            trusted: true,
        };
        // Distances are in units of the ray to the point (1 is the point itself): only what
        // lies before the point can block it, so the walk goes no farther.
        let hits = HitsMut { dist: &mut dist, geomid: &mut geomid, normal: &mut normal };
        s.prepared[view.slot].cast_within(cast, 1.0 - SAME_POINT, hits)?;
        for (i, &r) in wanted.iter().enumerate() {
            let (_, point) = candidates[r].expect("wanted");
            if geomid[i] >= 0 && !self.sees(s, view, (second, point), (draws.gap)(r)) {
                out[r] = 0.0;
            }
        }
        Ok(out)
    }

    /// The optical-axis depth a triangulating device matches on `path`, and the point its
    /// second viewpoint must see; `None` where the materials leave nothing to match.
    fn match_point(
        &self,
        s: &Shared,
        view: &View,
        sensor: &DepthSensor,
        ray: &PixelRay,
        path: &Path,
    ) -> Option<(f64, DVec3)> {
        let echo = path.echoes[path.matched?];
        let matched = Matched {
            echo,
            translucent_first: path
                .first
                .is_some_and(|f| matches!(f.material.continuation, Continuation::Slab | Continuation::Medium)),
            glint_up_to: path.echoes.iter().any(|e| e.glint && e.range <= echo.range),
            straight_range: path.straight_range,
        };
        self.verdict(s, view, sensor, ray, matched)
    }

    /// [`Renderer::match_point`]'s judgement of a matched surface.
    fn verdict(
        &self,
        s: &Shared,
        view: &View,
        sensor: &DepthSensor,
        ray: &PixelRay,
        m: Matched,
    ) -> Option<(f64, DVec3)> {
        let echo = m.echo;
        let textured = || {
            echo.geom >= 0
                && material(s, view.w, echo.geom as usize).is_some_and(|m| s.fields.mat_texid(view.w, m) >= 0)
        };
        let dark = echo.strength < sensor.detect_floor;
        let fails = match sensor.model {
            // Active stereo falls back on the surface's own texture where the dots fade; a
            // glint on the matched surface blinds it.
            SensorModel::ActiveStereo => (dark && !textured()) || echo.glint,
            // Structured light has only its dots: dark, glinting (a mirror head-on among
            // them) and translucent surfaces are holes.
            _ => dark || m.translucent_first || m.glint_up_to,
        };
        (!fails).then(|| (echo.range / ray.per_depth, ray.origin + ray.dir * m.straight_range))
    }

    /// Ray `r`'s first surface when it is an opaque geom with nothing drawn in front: its
    /// return judged without following a path (the common case).
    fn opaque_first(&self, s: &Shared, view: &View, t: &Traced, r: usize) -> Option<(PixelRay, Echo)> {
        let g = t.geomid[r];
        if g < 0 || t.skin_of[r].is_some() || t.seg_of[r] != g {
            return None;
        }
        let m = self.nir(s, g);
        if m.continuation != Continuation::Opaque {
            return None;
        }
        let ray = PixelRay::of(view, t, r);
        let range = t.dist[r] * ray.per_depth;
        Some((ray, opaque_echo(&m, incidence_cos(t.normal[r], ray.dir), range, g)))
    }

    /// Whether a viewpoint at `from` sees `point`: the first surface toward it, past the
    /// surfaces depth sees through, is the point itself. Foliage passes where the pixel's
    /// own draw `gap` found a gap (the two views look through the same gaps).
    fn sees(&self, s: &Shared, view: &View, (from, point): (DVec3, DVec3), gap: f64) -> bool {
        let toward = point - from;
        let reach = toward.length();
        let dir = toward / reach;
        let (mut at, mut skip) = (0.0, -1);
        loop {
            match cast(s, view, from + dir * at, dir, skip) {
                Some(hit) if at + hit.dist < reach - SAME_POINT * reach.max(1.0) => {
                    let m = self.nir(s, hit.geom);
                    let through_gap = m.continuation == Continuation::Porous && gap < f64::from(m.transmission);
                    if !self.passes(hit.geom) && !through_gap {
                        return false;
                    }
                    (at, skip) = (at + hit.dist, hit.geom);
                }
                _ => return true,
            }
        }
    }

    /// iToF over a band: each pixel's sub-pixel rays (cast together for the band) and their
    /// returns summed as phasors.
    fn itof_band(
        &self,
        s: &Shared,
        view: &View,
        sensor: &DepthSensor,
        (pixel, row0): (&[usize], usize),
        keys: &[[u64; 2]],
    ) -> Result<Vec<f32>, CameraError> {
        let (n, width) = (sensor.subpixels as usize, view.model.width);
        let per_pixel = n * n;
        let at = |p: usize| ((p % width) as f64, (row0 + p / width) as f64);
        let offsets: Vec<(f64, f64)> =
            (0..per_pixel).map(|i| (((i % n) as f64 + 0.5) / n as f64, ((i / n) as f64 + 0.5) / n as f64)).collect();
        let mut points = Vec::with_capacity(pixel.len() * per_pixel);
        for &p in pixel {
            let (col, row) = at(p);
            points.extend(offsets.iter().map(|&(i, j)| (col + i, row + j)));
        }
        // The sub-pixel rays' returns in pixel order (rays are visited in order), each
        // carrying its share of the pixel; `ends[r]` closes pixel r's.
        let (mut returns, mut ends) = (Vec::with_capacity(pixel.len() * per_pixel), vec![0; pixel.len()]);
        let share = 1.0 / per_pixel as f64;
        // Ray k belongs to pixel r while k < next (counted up, not divided: this runs for
        // every sub-pixel ray).
        let (mut r, mut next) = (0, per_pixel);
        self.sub_echoes(s, view, points, &mut |k, e| {
            while k >= next {
                (r, next) = (r + 1, next + per_pixel);
            }
            returns.push((e.range, e.strength * share));
            ends[r] = returns.len();
        })?;
        let phase = ItofPhase::of(sensor);
        let mut out = Vec::with_capacity(pixel.len());
        let mut start = 0;
        for (r, &p) in pixel.iter().enumerate() {
            let end = ends[r].max(start);
            let mine = &returns[start..end];
            start = end;
            let (col, row) = at(p);
            let (_, center) = view.model.ray_at(col + 0.5, row + 0.5);
            let measured = phase.range(mine, keys[r].map(normal_draw));
            out.push(measured.map_or(0.0, |range| sensor.gate(range / center.length())));
        }
        Ok(out)
    }

    /// Visits the returns of rays through image points `points` (sub-pixel and zone rays,
    /// cast in one packet) as `(ray index, echo)`. Their foliage draws are 0: a leaf met is
    /// kept (leaf and gap both return to a time-of-flight sensor). A world with skins
    /// traces them as colour does, so the skins are met.
    fn sub_echoes(
        &self,
        s: &Shared,
        view: &View,
        points: Vec<(f64, f64)>,
        visit: &mut dyn FnMut(usize, &Echo),
    ) -> Result<(), CameraError> {
        if !s.skins[view.w].is_empty() {
            let sub = self.trace_at(s, view, points.into_iter())?;
            for r in 0..sub.len() {
                if let Some((_, path)) = self.center_path(s, view, &sub, r, 0.0) {
                    path.echoes.iter().for_each(|e| visit(r, e));
                }
            }
            return Ok(());
        }
        let (origins, dirs) = sub_rays(view, &points);
        let n = dirs.len();
        let (mut dist, mut geomid, mut normal) = (vec![0.0; n], vec![0; n], vec![DVec3::ZERO; n]);
        let packet = Cast {
            world: view.w,
            origins: origins.as_ref().map_or(Origins::Shared(view.pos), |o| Origins::Each(o)),
            dirs: &dirs,
            exclude_body: -1,
            skip_geom: -1,
            trusted: true,
        };
        s.prepared[view.slot].cast(packet, HitsMut { dist: &mut dist, geomid: &mut geomid, normal: &mut normal })?;
        for k in 0..n {
            let g = geomid[k];
            if g < 0 {
                continue;
            }
            let per_depth = dirs[k].length();
            let (dir, m) = (dirs[k] * per_depth.recip(), self.nir(s, g));
            if m.continuation == Continuation::Opaque {
                visit(k, &opaque_echo(&m, incidence_cos(normal[k], dir), dist[k] * per_depth, g));
                continue;
            }
            let first = Hit { dist: dist[k] * per_depth, geom: g, normal: normal[k] };
            let (nir, cast) = (|g| self.nir(s, g), |o, d, skip| cast(s, view, o, d, skip));
            let origin = origins.as_ref().map_or(view.pos, |o| o[k]);
            follow((origin, dir), (first, m), &nir, &cast, 0.0).echoes.iter().for_each(|e| visit(k, e));
        }
        Ok(())
    }

    /// dToF: zone `zone`'s reported depth, from a histogram of its sub-rays' returns.
    fn dtof_zone(
        &self,
        s: &Shared,
        view: &View,
        sensor: &DepthSensor,
        zone: (usize, usize),
        frame: u64,
    ) -> Result<f32, CameraError> {
        let (n, k) = (sensor.zones as usize, sensor.zone_rays as usize);
        let (zw, zh) = (view.model.width as f64 / n as f64, view.model.height as f64 / n as f64);
        let (u0, v0) = (zone.0 as f64 * zw, zone.1 as f64 * zh);
        let points = (0..k * k)
            .map(|i| (u0 + ((i % k) as f64 + 0.5) / k as f64 * zw, v0 + ((i / k) as f64 + 0.5) / k as f64 * zh));
        let mut echoes: Vec<Echo> = Vec::new();
        self.sub_echoes(s, view, points.collect(), &mut |_, e| echoes.push(*e))?;
        // The histogram reaches the farthest return (past it, ambient counts alone stay
        // under the peak threshold) or the range gate, whichever is nearer.
        let farthest = echoes.iter().map(|e| e.range).fold(0.0, f64::max);
        let bins = (farthest.min(sensor.max_range * 1.5) / sensor.bin_width).ceil() as usize + 3;
        let mut signal = vec![0.0; bins];
        for e in &echoes {
            deposit(&mut signal, e.range / sensor.bin_width, PHOTON_GAIN * e.strength / (k * k) as f64);
        }
        let zone_index = (zone.1 * n + zone.0) as u64;
        let counts: Vec<f64> = signal
            .iter()
            .enumerate()
            .map(|(b, &c)| {
                let key = pixel_key(frame ^ zone_index.wrapping_mul(0x51_7cc1_b727_220a), view.model.camera, b);
                poisson_draw(c + sensor.ambient_counts, key) - sensor.ambient_counts
            })
            .collect();
        let (_, center) = view.model.ray_at(u0 + zw / 2.0, v0 + zh / 2.0);
        Ok(pick_target(sensor, &counts).map_or(0.0, |range| sensor.gate(range / center.length())))
    }

    /// Geom `g`'s NIR material; without [`Renderer::set_materials`], the one its colour
    /// implies.
    fn nir(&self, s: &Shared, g: i32) -> NirMaterial {
        let Ok(g) = usize::try_from(g) else { return NirMaterial::default() };
        match self.nir.get(g) {
            Some(m) => *m,
            None => super::geom_nir(s.scene, &glint_materials::MaterialTable::default(), g),
        }
    }
}

/// A band's keyed draws by ray index, drawn only where needed: the disparity noise (standard
/// normal) and the foliage gap draw (uniform).
struct Draws<'a> {
    noise: &'a dyn Fn(usize) -> f64,
    gap: &'a dyn Fn(usize) -> f64,
}

/// A matched surface and what a triangulating device judges it by.
struct Matched {
    echo: Echo,
    /// Whether the first surface is glass or water.
    translucent_first: bool,
    /// Whether any surface up to the matched one glints.
    glint_up_to: bool,
    /// Where the path leaves the pixel's straight ray.
    straight_range: f64,
}

impl Matched {
    /// An opaque first surface: the path's only one.
    fn opaque(echo: Echo) -> Matched {
        Matched { echo, translucent_first: false, glint_up_to: echo.glint, straight_range: echo.range }
    }
}

/// The first surface from `origin` along unit `dir` in `view`'s world, passing geom `skip`.
/// The frame number `view`'s world keys its depth noise by.
fn noise_frame(s: &Shared, view: &View) -> u64 {
    s.depth_noise.get(view.w).copied().unwrap_or(0)
}

/// The keyed draw's key of a band's pixel `p` (from image row `row0`) for `salt`: one per
/// (episode's frame, camera, pixel, salt), whatever the band and the thread.
fn band_keys<'a>(s: &'a Shared, view: &'a View, row0: usize) -> impl Fn(usize, u64) -> u64 + 'a {
    let frame = noise_frame(s, view);
    move |p, salt| pixel_key(frame ^ salt, view.model.camera, row0 * view.model.width + p)
}

/// |cos| of the angle between a surface's `normal` (any length; zero: none) and unit `dir`.
fn incidence_cos(normal: DVec3, dir: DVec3) -> f64 {
    let n = normal.length();
    if n > 0.0 { (normal.dot(dir) / n).abs() } else { 0.0 }
}

/// The rays through image points `points` of `view`: world-frame origins (none for a
/// pinhole, whose rays share its centre: the core's faster packets) and directions. A
/// pinhole's direction is linear in the image point, so each costs two multiply-adds.
fn sub_rays(view: &View, points: &[(f64, f64)]) -> (Option<Vec<DVec3>>, Vec<DVec3>) {
    let Projection::Perspective { f, c } = view.model.projection else {
        let (origins, dirs) = view_rays(view, points.iter().copied());
        return (Some(origins), dirs);
    };
    let (per_u, per_v) = (view.mat * DVec3::new(1.0 / f[0], 0.0, 0.0), view.mat * DVec3::new(0.0, -1.0 / f[1], 0.0));
    let at_zero = view.mat * DVec3::new(-c[0] / f[0], c[1] / f[1], -1.0);
    (None, points.iter().map(|&(u, v)| at_zero + per_u * u + per_v * v).collect())
}

fn cast(s: &Shared, view: &View, origin: DVec3, dir: DVec3, skip: i32) -> Option<Hit> {
    let ray = CastOne { world: view.w, origin, dir, exclude_body: -1, skip_geom: skip };
    s.prepared[view.slot].cast_one(ray).map(|h| Hit { dist: h.dist, geom: h.geomid, normal: h.normal })
}

/// Skin `k`'s NIR material: its visible colour's.
fn skin_material(s: &Shared, k: usize) -> NirMaterial {
    NirMaterial::from_albedo(s.scene.skin[k].rgba)
}

/// A dToF camera's empty zone cells (none for other models).
pub(super) fn zone_cells(sensor: &DepthSensor) -> Vec<std::sync::OnceLock<f32>> {
    if sensor.model != SensorModel::DToFSparse {
        return Vec::new();
    }
    let n = sensor.zones as usize;
    (0..n * n).map(|_| std::sync::OnceLock::new()).collect()
}

/// The zone of pixel (`col`, `row`).
fn zone_of(sensor: &DepthSensor, view: &View, col: usize, row: usize) -> (usize, usize) {
    let n = sensor.zones as usize;
    (col * n / view.model.width, row * n / view.model.height)
}

/// Adds `counts` at fractional bin `at`, split between the two nearest bin centres.
fn deposit(histogram: &mut [f64], at: f64, counts: f64) {
    let x = at - 0.5;
    let (lo, frac) = (x.floor(), x - x.floor());
    for (b, share) in [(lo, 1.0 - frac), (lo + 1.0, frac)] {
        if let Some(bin) = usize::try_from(b as i64).ok().and_then(|b| histogram.get_mut(b)) {
            *bin += counts * share;
        }
    }
}

/// The range of the target a zone reports from its ambient-subtracted `counts`: peaks that
/// stand above the detect floor and the ambient's noise, the strongest or the closest.
fn pick_target(sensor: &DepthSensor, counts: &[f64]) -> Option<f64> {
    let threshold = (sensor.detect_floor * PHOTON_GAIN).max(PEAK_SIGMAS * sensor.ambient_counts.sqrt());
    let peak = |b: usize| {
        let left = if b > 0 { counts[b - 1] } else { f64::NEG_INFINITY };
        let right = counts.get(b + 1).copied().unwrap_or(f64::NEG_INFINITY);
        // The two bins a return splits between sum to its counts.
        let height = counts[b] + left.max(right).max(0.0);
        (counts[b] >= left && counts[b] > right && height >= threshold).then_some(height)
    };
    let peaks = (0..counts.len()).filter_map(|b| peak(b).map(|h| (b, h)));
    let (b, height) = match sensor.target_order {
        TargetOrder::Strongest => peaks.max_by(|a, b| a.1.total_cmp(&b.1))?,
        TargetOrder::Closest => peaks.min_by_key(|p| p.0)?,
    };
    if sensor.saturation > 0.0 && height / PHOTON_GAIN > sensor.saturation {
        return None;
    }
    // The centroid of the peak and its neighbours.
    let span = b.saturating_sub(1)..(b + 2).min(counts.len());
    let (mut sum, mut moment) = (0.0, 0.0);
    for i in span {
        let c = counts[i].max(0.0);
        sum += c;
        moment += c * (i as f64 + 0.5);
    }
    Some(moment / sum * sensor.bin_width)
}

/// Debug channel `channel` of a pixel whose centre path is `path`, where the model reported
/// `measured` (0: a hole).
fn debug_value(channel: DebugChannel, path: Option<&(PixelRay, Path)>, measured: f32) -> f32 {
    if channel == DebugChannel::OcclusionMask {
        return if measured > 0.0 { 0.0 } else { 1.0 };
    }
    let Some((ray, path)) = path else {
        return if channel == DebugChannel::ContinuationClass { -1.0 } else { 0.0 };
    };
    let first = path.first.expect("a path that met a surface has a first one");
    let m = first.material;
    let value = match channel {
        DebugChannel::Backscatter => path.echoes.iter().map(|e| e.strength).sum(),
        DebugChannel::IncidenceCosine => first.cos,
        DebugChannel::NirReflectivity => f64::from(m.reflectivity),
        DebugChannel::TransparentDepth => path.transparent_range / ray.per_depth,
        DebugChannel::Metalness => f64::from(m.f0),
        DebugChannel::Roughness => m.slope(),
        DebugChannel::TransmissionSuppression => path.suppression,
        DebugChannel::ContinuationClass => m.continuation.index() as f64,
        DebugChannel::Depth | DebugChannel::OcclusionMask => unreachable!("handled above"),
    };
    value as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_peak_comes_back_at_its_range() {
        let sensor = DepthSensor { ambient_counts: 0.0, detect_floor: 0.001, ..DepthSensor::default() };
        for range in [0.5, 1.234, 2.9] {
            let mut h = vec![0.0; 200];
            deposit(&mut h, range / sensor.bin_width, 1000.0);
            let got = pick_target(&sensor, &h).unwrap();
            assert!((got - range).abs() < 1e-9, "{range}: {got}");
        }
    }

    #[test]
    fn strongest_and_closest_pick_different_targets() {
        let mut h = vec![0.0; 200];
        deposit(&mut h, 1.0 / 0.0375, 300.0);
        deposit(&mut h, 2.0 / 0.0375, 900.0);
        let strongest = DepthSensor { ambient_counts: 0.0, detect_floor: 0.01, ..DepthSensor::default() };
        let closest = DepthSensor { target_order: TargetOrder::Closest, ..strongest };
        assert!((pick_target(&strongest, &h).unwrap() - 2.0).abs() < 1e-9);
        assert!((pick_target(&closest, &h).unwrap() - 1.0).abs() < 1e-9);
        // Below the floor, nothing.
        let deaf = DepthSensor { detect_floor: 0.2, ..strongest };
        assert!(pick_target(&deaf, &h).is_none());
    }
}
