//! MJCF sensors glint computes itself: the `<rangefinder>` sensors of a compiled `mjModel`
//! (what each casts and how MuJoCo turns the hit into `sensordata`), and MuJoCo's own
//! `sensordata` and `mj_sensorPos` as the reference they are tested and benchmarked against.
//!
//! MuJoCo 3.17's rangefinder (`engine_sensor.c`, `mj_computeSensorPos`): a site-attached one
//! casts `mj_ray` from the site's origin along its z axis, every geom group included,
//! `flg_static = 1`, the site's own body excluded; it writes the fields its `data` attribute
//! names (`sensor_intprm[0]`, a bit set of `mjtRayDataField`: `dist`, `dir`, `origin`, `point`,
//! `normal`, `depth`, in that order), `-1` for the distance and depth of a miss and zeros for
//! its direction, point and normal; then clamps every value to `±cutoff` (its data type is
//! `mjDATATYPE_REAL`; a cutoff of 0 clamps nothing). `noise` is metadata only: MuJoCo adds
//! none, and neither does glint.

use std::ffi::CStr;
use std::os::raw::c_char;

use mujoco_rs::mujoco_c::{mj_sensorPos, mjModel, mjtDataType, mjtDisableBit, mjtObj, mjtSensor};

use crate::{Model, WorldBatch};

/// What a rangefinder writes (MuJoCo's `mjtRayDataField` bits, from its `data` attribute).
pub const RAY_FIELDS: [(&str, usize); 6] =
    [("dist", 1), ("dir", 3), ("origin", 3), ("point", 3), ("normal", 3), ("depth", 1)];

/// How MuJoCo clamps a sensor's values with its cutoff (`apply_cutoff`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cutoff {
    /// No cutoff (0), or a data type MuJoCo does not clamp.
    None,
    /// `mjDATATYPE_REAL`: every value clipped to `[-c, c]`.
    Both(f64),
    /// `mjDATATYPE_POSITIVE`: every value capped at `c`.
    Above(f64),
}

impl Cutoff {
    /// `v` clamped as MuJoCo clamps it.
    pub fn apply(self, v: f64) -> f64 {
        match self {
            Cutoff::None => v,
            // mju_clip: below the low end, the low end; above the high end, the high end.
            Cutoff::Both(c) => {
                if v < -c {
                    -c
                } else if v > c {
                    c
                } else {
                    v
                }
            }
            // mju_min(cutoff, v): `cutoff` unless v < cutoff.
            Cutoff::Above(c) => {
                if c < v {
                    c
                } else {
                    v
                }
            }
        }
    }
}

/// One site-attached `<rangefinder>` of a model.
#[derive(Clone, Debug, PartialEq)]
pub struct Rangefinder {
    /// MuJoCo's sensor id.
    pub sensor: usize,
    /// The sensor's name (`rangefinder<id>` when the MJCF gives none).
    pub name: String,
    /// The site it casts from, along the site's z axis.
    pub site: usize,
    /// The site's body, whose geoms the ray ignores.
    pub body: i32,
    /// What it writes: a bit set over [`RAY_FIELDS`] (MuJoCo's `sensor_intprm[0]`).
    pub fields: u32,
    /// How its values are clamped.
    pub cutoff: Cutoff,
    /// Its noise's standard deviation: metadata that MuJoCo does not apply.
    pub noise: f64,
    /// Where its values start in MuJoCo's `sensordata`.
    pub adr: usize,
    /// How many values it writes.
    pub dim: usize,
}

impl Rangefinder {
    /// The names of its values: the sensor's name for a distance alone, else
    /// `<name>/<field>` and `<name>/<field>_<x|y|z>`.
    pub fn value_names(&self) -> Vec<String> {
        if self.fields == 1 {
            return vec![self.name.clone()];
        }
        let mut names = Vec::with_capacity(self.dim);
        for (bit, (field, width)) in RAY_FIELDS.iter().enumerate() {
            if self.fields & (1 << bit) == 0 {
                continue;
            }
            if *width == 1 {
                names.push(format!("{}/{field}", self.name));
            } else {
                names.extend(["x", "y", "z"].iter().map(|a| format!("{}/{field}_{a}", self.name)));
            }
        }
        names
    }
}

/// A rangefinder glint leaves to MuJoCo, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct SkippedRangefinder {
    /// The sensor's name.
    pub name: String,
    /// Why glint does not compute it, and what would make it.
    pub reason: String,
}

/// The model's rangefinders: those glint computes, and those it leaves to MuJoCo.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rangefinders {
    /// Site-attached rangefinders without delay or interval, in sensor order.
    pub sensors: Vec<Rangefinder>,
    /// The others (camera-attached, delayed, sampled at an interval; all of them when the
    /// model disables sensors).
    pub skipped: Vec<SkippedRangefinder>,
}

/// Views `n` elements at `ptr` (an `mjModel` or `mjData` array) as a slice.
pub(crate) fn arr<'a, T>(ptr: *const T, n: usize) -> &'a [T] {
    if n == 0 || ptr.is_null() {
        return &[];
    }
    // SAFETY: MuJoCo allocates every array with its documented length for the lifetime of its
    // model or data; callers keep the slice no longer than they borrow it.
    unsafe { std::slice::from_raw_parts(ptr, n) }
}

fn sensor_name(m: &mjModel, i: usize) -> String {
    let adr = arr(m.name_sensoradr, m.nsensor as usize)[i];
    let names = arr(m.names as *const c_char, m.nnames as usize);
    let name = if adr >= 0 && (adr as usize) < names.len() {
        // SAFETY: MuJoCo stores names NUL-terminated inside `names`.
        unsafe { CStr::from_ptr(names.as_ptr().add(adr as usize)) }.to_string_lossy().into_owned()
    } else {
        String::new()
    };
    if name.is_empty() { format!("rangefinder{i}") } else { name }
}

impl Model {
    /// The model's `<rangefinder>` sensors (see the module's docs).
    pub fn rangefinders(&self) -> Rangefinders {
        let m = self.mj().ffi();
        let n = m.nsensor.max(0) as usize;
        let kind = arr(m.sensor_type, n);
        let objtype = arr(m.sensor_objtype, n);
        let objid = arr(m.sensor_objid, n);
        let intprm = arr(m.sensor_intprm, n * 3);
        let datatype = arr(m.sensor_datatype, n);
        let cutoff = arr(m.sensor_cutoff, n);
        let noise = arr(m.sensor_noise, n);
        let adr = arr(m.sensor_adr, n);
        let dim = arr(m.sensor_dim, n);
        let delay = arr(m.sensor_delay, n);
        let interval = arr(m.sensor_interval, 2 * n);
        let site_body = arr(m.site_bodyid, m.nsite.max(0) as usize);
        let disabled = m.opt.disableflags & mjtDisableBit::mjDSBL_SENSOR as i32 != 0;
        let mut out = Rangefinders::default();
        for i in (0..n).filter(|&i| kind[i] == mjtSensor::mjSENS_RANGEFINDER as i32) {
            let name = sensor_name(m, i);
            let skip = if disabled {
                Some("the model disables sensors (<flag sensor=\"disable\"/>), so MuJoCo computes none".to_string())
            } else if objtype[i] != mjtObj::mjOBJ_SITE as i32 {
                Some(
                    "it is attached to a camera (a depth image); glint computes site-attached rangefinders: \
                     attach it to a site"
                        .to_string(),
                )
            } else if delay[i] > 0.0 || interval[2 * i] > 0.0 {
                Some(format!(
                    "it has delay = {} s or interval = {} s, read from MuJoCo's history buffer; remove them for \
                     glint to compute it",
                    delay[i],
                    interval[2 * i]
                ))
            } else {
                None
            };
            if let Some(reason) = skip {
                out.skipped.push(SkippedRangefinder { name, reason });
                continue;
            }
            let c = cutoff[i];
            let cutoff = if c <= 0.0 {
                Cutoff::None
            } else if datatype[i] == mjtDataType::mjDATATYPE_REAL as i32 {
                Cutoff::Both(c)
            } else if datatype[i] == mjtDataType::mjDATATYPE_POSITIVE as i32 {
                Cutoff::Above(c)
            } else {
                Cutoff::None
            };
            let site = objid[i] as usize;
            out.sensors.push(Rangefinder {
                sensor: i,
                name,
                site,
                body: site_body[site],
                fields: intprm[3 * i] as u32,
                cutoff,
                noise: noise[i],
                adr: adr[i] as usize,
                dim: dim[i] as usize,
            });
        }
        out
    }
}

impl WorldBatch {
    /// World `w`'s `sensordata` (MuJoCo's, `nsensordata` values) as its last step, reset or
    /// forward left it.
    pub fn sensordata(&self, w: usize) -> &[f64] {
        let n = self.model().mj().ffi().nsensordata.max(0) as usize;
        arr(self.data[w].ffi().sensordata, n)
    }

    /// Runs MuJoCo's `mj_sensorPos` on world `w` as it stands: every position-stage sensor
    /// (rangefinders among them) recomputed into its `sensordata`. The reference the
    /// rangefinder benchmark times.
    pub fn mj_sensor_pos(&mut self, w: usize) {
        let (m, d) = (self.model().mj().clone(), &mut self.data[w]);
        // SAFETY: the model and the data are MuJoCo's, alive, and the data was made for the
        // model; `mj_sensorPos` reads the kinematics the last step computed and writes only
        // the data's sensor arrays.
        unsafe { mj_sensorPos(m.ffi(), d.ffi_mut()) };
    }
}

impl crate::SceneSpec {
    /// Adds a mocap body `<prefix>body` at `origin` (world frame) holding one site per
    /// direction of `dirs` (`<prefix>site<i>`, its z axis along the direction) and one
    /// rangefinder on each (`<prefix><i>`, the distance alone): an array of rangefinders for a
    /// scene that has none, as `glint bench rangefinder` builds one. The body has no geom, so
    /// the rays exclude nothing of the scene (a site of the world body would exclude every
    /// static geom).
    pub fn add_rangefinders(&mut self, prefix: &str, origin: glam::DVec3, dirs: &[glam::DVec3]) {
        use mujoco_rs::wrappers::SpecItem;
        let body = self.spec.world_body_mut().add_body();
        body.with_name(&format!("{prefix}body")).with_pos(origin.to_array()).with_mocap(true);
        for (i, dir) in dirs.iter().enumerate() {
            // The site's z axis is the ray (MuJoCo casts along column 2 of the site's xmat).
            let q = glam::DQuat::from_rotation_arc(glam::DVec3::Z, dir.normalize());
            body.add_site().with_name(&format!("{prefix}site{i}")).with_quat([q.w, q.x, q.y, q.z]);
        }
        for i in 0..dirs.len() {
            let sensor = self.spec.add_sensor();
            sensor.set_name(&format!("{prefix}{i}")).expect("a name without NUL");
            sensor
                .with_type(mjtSensor::mjSENS_RANGEFINDER)
                .with_objtype(mujoco_rs::wrappers::MjtObjBase::mjOBJ_SITE)
                .with_objname(&format!("{prefix}site{i}"));
            // `data="dist"`: the distance alone, MuJoCo's default (the bit of RAY_FIELDS[0]).
            let mut intprm = *sensor.intprm();
            intprm[0] = 1;
            sensor.with_intprm(intprm);
        }
    }
}
