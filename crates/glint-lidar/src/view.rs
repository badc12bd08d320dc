//! How a scan is drawn: the seed's colour-by modes and colour ramps (the Lidar View). The
//! names are the manifest's (`video_colour_by`) and the command line's (`--colour-by`,
//! `--ramp`); the drawing itself is glint-record's.

use glint_core::spelled;

/// Colour of a NaN ramp parameter: a dim grey, visible on black but clearly "no value".
pub const NAN_GREY: [u8; 3] = [80, 80, 80];

/// Scalar each point is coloured by: the seed's twelve colour-by modes. The last five read the
/// return model and a material bake; without them they draw the flat green of `Solid`, so an
/// unconfigured material read is unmistakable, and a hit the bake has no material for is dim
/// grey.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ColourBy {
    /// Laser channel (row): `channel / (channels - 1)`; one ramp colour (the ramp's middle)
    /// when the sensor has a single channel, as Livox sensors do.
    Channel,
    /// Measured range, normalised by the largest range among the drawn points.
    Range,
    /// World Z, normalised by the lowest..highest Z among the drawn points.
    Height,
    /// Sensor-frame azimuth: `(azimuth + π) / 2π`, wrapped into one turn.
    Azimuth,
    /// Emission index, normalised by the largest index among the drawn points.
    SampleOrder,
    /// Flat green (0, 200, 0) whatever the ramp.
    Solid,
    /// `|cos|` of the angle between beam and surface normal (1 = head-on, 0 = grazing).
    Incidence,
    /// Return-model intensity, linear, saturating at 1 (a perfect matte surface head-on at
    /// `intensityRefRange`): the inverse-square falloff makes close points saturate.
    Intensity,
    /// Baked NIR reflectivity `ρ`, 0..1.
    NirReflectivity,
    /// Baked metal reflectance `F0 · metalness`, 0..1.
    MetalReflectance,
    /// Return-model drop probability of the first surface, 0..1.
    DropoutProb,
    /// Calibrated reflectivity on a log scale over four decades: 0.01 → 0, 100 → 1.
    CalibratedReflectivity,
}

spelled!(ColourBy, "colour mode", [
    Channel => "channel",
    Range => "range",
    Height => "height",
    Azimuth => "azimuth",
    SampleOrder => "sample-order",
    Solid => "solid",
    Incidence => "incidence",
    Intensity => "intensity",
    NirReflectivity => "nir-reflectivity",
    MetalReflectance => "metal-reflectance",
    DropoutProb => "dropout-prob",
    CalibratedReflectivity => "calibrated-reflectivity",
]);

impl ColourBy {
    /// Whether the mode reads the return model and a bake.
    pub fn needs_material(self) -> bool {
        matches!(
            self,
            ColourBy::Intensity
                | ColourBy::NirReflectivity
                | ColourBy::MetalReflectance
                | ColourBy::DropoutProb
                | ColourBy::CalibratedReflectivity
        )
    }
}

/// Colour ramps: Warm-Green-Blue, Grayscale, Heat, Warm Red-Yellow (the default).
///
/// Each ramp is a few colour stops spaced evenly over `t` in [0, 1] and linearly interpolated
/// between (see [`Ramp::stops`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Ramp {
    /// Warm orange (255, 140, 0) → green (0, 200, 80) → blue (30, 60, 255).
    WarmGreenBlue,
    /// Near-black (40, 40, 40) → white (255, 255, 255); starts above black so the lowest
    /// value stays visible on the black background.
    Grayscale,
    /// Dark red (40, 0, 0) → red (255, 0, 0) → yellow (255, 255, 0) → white (255, 255, 255).
    Heat,
    /// Dark red (150, 0, 0) → red (255, 40, 0) → yellow (255, 230, 0). The default.
    #[default]
    WarmRedYellow,
}

spelled!(Ramp, "colour ramp", [
    WarmGreenBlue => "warm-green-blue",
    Grayscale => "grayscale",
    Heat => "heat",
    WarmRedYellow => "warm-red-yellow",
]);

impl Ramp {
    /// The ramp's colour stops, spaced evenly over `t` in [0, 1] (the first at 0, the last at 1).
    pub fn stops(self) -> &'static [[u8; 3]] {
        match self {
            Ramp::WarmGreenBlue => &[[255, 140, 0], [0, 200, 80], [30, 60, 255]],
            Ramp::Grayscale => &[[40, 40, 40], [255, 255, 255]],
            Ramp::Heat => &[[40, 0, 0], [255, 0, 0], [255, 255, 0], [255, 255, 255]],
            Ramp::WarmRedYellow => &[[150, 0, 0], [255, 40, 0], [255, 230, 0]],
        }
    }

    /// The ramp's colour at `t`: clamped to [0, 1], linearly interpolated between the two
    /// surrounding stops; a NaN `t` gives a dim grey (80, 80, 80).
    pub fn colour(self, t: f32) -> [u8; 3] {
        if t.is_nan() {
            return NAN_GREY;
        }
        let stops = self.stops();
        let segments = stops.len() - 1;
        let pos = t.clamp(0.0, 1.0) * segments as f32;
        // `pos` is in [0, segments]; the last segment also takes `pos == segments`.
        let i = (pos.floor() as usize).min(segments - 1);
        let frac = pos - i as f32;
        let (a, b) = (stops[i], stops[i + 1]);
        std::array::from_fn(|k| {
            let v = f32::from(a[k]) + (f32::from(b[k]) - f32::from(a[k])) * frac;
            v.round().clamp(0.0, 255.0) as u8
        })
    }
}
