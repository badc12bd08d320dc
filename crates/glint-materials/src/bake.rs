//! Material bakes: which near-infrared material a beam that hits a geom should use, so a beam
//! that hits collision geometry reports the material of the visual surface there (the seed's
//! "Material bakes", `spec/return-model.md` "Bake").
//!
//! A [`Bake`] holds two things, both indices into a palette of distinct [`NirMaterial`]s:
//!
//! 1. **A per-geom table.** A *visual* geom gets its own material: its MuJoCo material, resolved
//!    through the scene's [`MaterialTable`] (authored) or from the material's colour
//!    ([`NirMaterial::from_albedo`]); a geom without a MuJoCo material falls back to its own
//!    colour. A *hidden* geom (group 3 or above, which MuJoCo's viewer hides and menagerie
//!    models use for collision geometry, or alpha 0) gets its own MuJoCo material when it has
//!    one, else the material of the nearest visual geom of the same body (by distance between
//!    the centres of their bounds in world 0), else none: a hole. With `include_hidden`, hidden
//!    geoms count as visual.
//! 2. **A world-space grid over static geometry** (geoms of bodies welded to the world), filled
//!    from the static visual geoms (planes excluded: they are infinite). The grid covers the
//!    union of their world bounds plus `splat_radius` cells on each side; its cell is
//!    `max(cell_size, longest extent / max_dim)` so no axis has more than `max_dim` cells. A
//!    cell is filled when its centre lies within `splat_radius + ½` cells of a geom's oriented
//!    bounding box (its local bounds placed by its world-0 pose); where several geoms reach a
//!    cell, the one with the smallest signed distance to the cell centre wins (inside beats
//!    outside, and equal distances go to the lower geom id).
//!
//! [`Bake::material_at`] looks a hit up in this order: the geom's own MuJoCo material if it has
//! one; else, for a static geom, the grid cell at the hit point when it is filled; else the
//! geom's per-geom table entry; else `None`.
//!
//! A bake is a snapshot: [`material_fingerprint`] hashes every NIR material definition the
//! scene resolves, and [`scene_fingerprint`] the scene's geoms and bodies (what the per-geom
//! table is indexed by and the grid is built from). [`Bake::status`] reports a bake that does
//! not match the scene (`matches_scene = false`: made from another scene, or before the
//! scene's geoms changed) when its scene fingerprint or geom count differs, and stale when it
//! does not match, when its material fingerprint differs from the scene's current one, or when
//! it was written by an older format version.
//!
//! # The `.lvxb` file (all numbers little-endian)
//!
//! | bytes | what |
//! |---|---|
//! | 4 | magic `LVXB` |
//! | 4 | `u32` format version ([`BAKE_FORMAT_VERSION`]) |
//! | 8 + 4 + 4 + 1 | settings: `f64` cell_size, `u32` max_dim, `i32` splat_radius, `u8` include_hidden |
//! | 3 × 4 | `u32` grid dims x, y, z |
//! | 3 × 8 | `f64` grid origin (the lower corner of cell 0, world frame, metres) |
//! | 8 | `f64` actual cell size (metres) |
//! | 8 | `u64` material fingerprint |
//! | 8 | `u64` scene fingerprint (format 2 on; absent from older files) |
//! | 4 + 29 × P | `u32` palette length P, then each material's [`NirMaterial::to_bytes`] |
//! | 4 + 3 × G | `u32` geom count G, then per geom a `u16` palette index (`0xFFFF`: none) and a `u8` of flags (1: own MuJoCo material, 2: static) |
//! | 2 × X·Y·Z | the grid, `u16` palette index per cell (`0xFFFF`: empty), x fastest, then y, then z |
//! | 4 | CRC-32 (IEEE) of every byte before it |
//!
//! Loading never panics: a file that is truncated, corrupt (checksum mismatch or impossible
//! contents), foreign (no magic) or from a newer format is an error naming the file and what is
//! wrong. An older format version loads and reports stale; a file without a scene fingerprint
//! (format 1) is matched to the scene by its geom count alone.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use glam::{DMat3, DVec3};
use glint_core::{Poses, Scene};
use rayon::prelude::*;

use crate::{MaterialError, MaterialLookup, MaterialTable, NirMaterial};

/// The `.lvxb` format version this build writes, and the newest it reads.
pub const BAKE_FORMAT_VERSION: u32 = 2;

/// The first format version whose files hold a scene fingerprint.
const SCENE_FINGERPRINT_VERSION: u32 = 2;

/// The folder, inside the project (manifest) folder, that bakes are saved to.
pub const BAKE_DIR: &str = "MaterialBakes";

const MAGIC: &[u8; 4] = b"LVXB";
/// A palette index meaning "no material" (per-geom table) or "empty" (grid).
const NONE: u16 = u16::MAX;
const OWN: u8 = 1;
const STATIC: u8 = 2;
const MAT_BYTES: usize = 29;
const MAX_DIM_LIMIT: u32 = 1024;
const SPLAT_LIMIT: i32 = 16;
const CELL_RANGE: &str = "0.001 to 10 m";

/// How a bake is made (the seed's bake settings, saved with the scene: in glint, the
/// manifest's `[bake]` table).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BakeSettings {
    /// Requested grid cell size, metres (0.001 to 10; default 0.05). The grid grows it when
    /// the scene would need more than `max_dim` cells along an axis.
    pub cell_size: f64,
    /// Cap on cells per axis (1 to 1024; default 256). The grid takes 2 bytes per cell on disk
    /// and 6 while baking.
    pub max_dim: u32,
    /// How many cells beyond a geom's bounds its material spreads (0 to 16; default 1).
    pub splat_radius: i32,
    /// Whether hidden geoms (group 3 and above, or alpha 0) count as visual (default false).
    pub include_hidden: bool,
}

impl Default for BakeSettings {
    fn default() -> Self {
        BakeSettings { cell_size: 0.05, max_dim: 256, splat_radius: 1, include_hidden: false }
    }
}

impl BakeSettings {
    /// Checks every field against its range; errors name the field.
    pub fn validate(&self) -> Result<(), MaterialError> {
        if !(self.cell_size.is_finite() && (0.001..=10.0).contains(&self.cell_size)) {
            return Err(MaterialError::OutOfRange {
                what: "bake",
                field: "cell_size",
                value: self.cell_size,
                range: CELL_RANGE,
            });
        }
        if !(1..=MAX_DIM_LIMIT).contains(&self.max_dim) {
            return Err(MaterialError::OutOfRange {
                what: "bake",
                field: "max_dim",
                value: self.max_dim as f64,
                range: "1 to 1024",
            });
        }
        if !(0..=SPLAT_LIMIT).contains(&self.splat_radius) {
            return Err(MaterialError::OutOfRange {
                what: "bake",
                field: "splat_radius",
                value: self.splat_radius as f64,
                range: "0 to 16 cells",
            });
        }
        Ok(())
    }
}

/// A bake request from the API (the seed's `BakeLidarMaterialEx` / gRPC `BakeLidarMaterial`):
/// every field left at 0 takes the scene's setting, so a client can override one setting
/// without knowing the others.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BakeRequest {
    /// 0: the scene's setting; otherwise the cell size in metres.
    pub cell_size: f64,
    /// 0: the scene's setting; otherwise the cap on cells per axis.
    pub max_dim: i32,
    /// 0: the scene's setting; -1: an explicit radius of 0; otherwise the radius in cells.
    pub splat_radius: i32,
    /// 0: the scene's setting; 1: include hidden geoms; 2: exclude them.
    pub include_hidden: i32,
}

impl BakeRequest {
    /// The settings this request asks for, with every 0 replaced by `scene_defaults`' value;
    /// errors name the field.
    pub fn resolve(&self, scene_defaults: &BakeSettings) -> Result<BakeSettings, MaterialError> {
        let cell_size = match self.cell_size {
            0.0 => scene_defaults.cell_size,
            c if c.is_finite() && (0.001..=10.0).contains(&c) => c,
            c => {
                return Err(MaterialError::OutOfRange {
                    what: "bake",
                    field: "cell_size",
                    value: c,
                    range: "0 (the scene setting) or 0.001 to 10 m",
                });
            }
        };
        let max_dim = match self.max_dim {
            0 => scene_defaults.max_dim,
            d if (1..=MAX_DIM_LIMIT as i32).contains(&d) => d as u32,
            d => {
                return Err(MaterialError::OutOfRange {
                    what: "bake",
                    field: "max_dim",
                    value: d as f64,
                    range: "0 (the scene setting) or 1 to 1024",
                });
            }
        };
        let splat_radius = match self.splat_radius {
            0 => scene_defaults.splat_radius,
            -1 => 0,
            r if (1..=SPLAT_LIMIT).contains(&r) => r,
            r => {
                return Err(MaterialError::OutOfRange {
                    what: "bake",
                    field: "splat_radius",
                    value: r as f64,
                    range: "0 (the scene setting), -1 (an explicit 0) or 1 to 16 cells",
                });
            }
        };
        let include_hidden = match self.include_hidden {
            0 => scene_defaults.include_hidden,
            1 => true,
            2 => false,
            v => {
                return Err(MaterialError::OutOfRange {
                    what: "bake",
                    field: "include_hidden",
                    value: v as f64,
                    range: "0 (the scene setting), 1 (include) or 2 (exclude)",
                });
            }
        };
        let settings = BakeSettings { cell_size, max_dim, splat_radius, include_hidden };
        settings.validate()?;
        Ok(settings)
    }
}

/// What is loaded (the seed's `GetLidarBakeStatus`). Written as JSON (`augmentation.json`)
/// with the fingerprint in hex, as `glint bake --status` prints it.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BakeStatus {
    /// Whether a bake is loaded at all.
    pub valid: bool,
    /// The format version it was written with.
    pub format_version: u32,
    /// The grid's actual cell size, metres (at least the requested `cell_size`; larger when
    /// `max_dim` cells per axis could not cover the scene at the requested size).
    pub cell_size: f64,
    /// The cell size the bake was asked for, metres.
    #[serde(default)]
    pub requested_cell_size: f64,
    /// The splat radius it was baked with, cells.
    pub splat_radius: i32,
    /// Grid cells along x, y and z.
    pub dims: [u32; 3],
    /// Grid cells that hold a material.
    pub filled_cells: u64,
    /// Entries of the per-geom material table (one per geom of the baked scene).
    pub geom_materials: u64,
    /// The fingerprint of the materials it was baked from.
    #[serde(with = "hex16")]
    pub material_fingerprint: u64,
    /// Whether the scene's materials changed since (or the format is older, or the bake does
    /// not match the scene): check this before trusting a material-informed scan.
    pub stale: bool,
    /// The fingerprint of the scene's geoms and bodies it was baked from (0: a format 1 file,
    /// which has none).
    #[serde(with = "hex16", default)]
    pub scene_fingerprint: u64,
    /// Whether it was baked from this scene: `false` when the scene's geoms differ from the
    /// baked ones (another scene, or the scene's geometry changed since), and the bake's
    /// per-geom table and grid describe something else.
    #[serde(default = "yes")]
    pub matches_scene: bool,
}

fn yes() -> bool {
    true
}

impl BakeStatus {
    /// The status when no bake is loaded: `valid = false`, everything else zero.
    pub fn none() -> BakeStatus {
        BakeStatus {
            valid: false,
            format_version: 0,
            cell_size: 0.0,
            requested_cell_size: 0.0,
            splat_radius: 0,
            dims: [0; 3],
            filled_cells: 0,
            geom_materials: 0,
            material_fingerprint: 0,
            stale: false,
            scene_fingerprint: 0,
            matches_scene: false,
        }
    }
}

/// A fingerprint as 16 lower-case hex digits.
mod hex16 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{v:016x}"))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let text = String::deserialize(d)?;
        u64::from_str_radix(&text, 16)
            .map_err(|_| serde::de::Error::custom(format!("'{text}' is not a hex fingerprint")))
    }
}

/// One entry of the per-geom table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct GeomEntry {
    /// Palette index or [`NONE`].
    material: u16,
    /// [`OWN`] | [`STATIC`].
    flags: u8,
}

/// A material bake of one scene: the per-geom table and the static grid (see the module
/// docs for how each is filled and how [`Bake::material_at`] uses them).
#[derive(Clone, Debug, PartialEq)]
pub struct Bake {
    settings: BakeSettings,
    format_version: u32,
    dims: [u32; 3],
    origin: DVec3,
    cell: f64,
    fingerprint: u64,
    /// [`scene_fingerprint`] of the baked scene; `None` in a format 1 file.
    scene: Option<u64>,
    palette: Vec<NirMaterial>,
    geoms: Vec<GeomEntry>,
    grid: Vec<u16>,
}

/// The NIR material of MuJoCo material `m`: authored, else from its colour.
fn resolve_material(scene: &Scene, table: &MaterialTable, m: usize) -> NirMaterial {
    table.get(&scene.mat_name[m]).copied().unwrap_or_else(|| NirMaterial::from_albedo(scene.mat_rgba[m]))
}

/// MuJoCo material id of geom `g`, if it has one.
fn matid(scene: &Scene, g: usize) -> Option<usize> {
    usize::try_from(scene.geom_matid[g]).ok().filter(|&m| m < scene.mat_name.len())
}

/// Hidden in MuJoCo's viewer by default (groups 3 to 5) or invisible (alpha 0).
fn hidden(scene: &Scene, g: usize) -> bool {
    scene.geom_group[g] >= 3 || !scene.geom_visible(g)
}

/// 64-bit FNV-1a.
struct Fnv(u64);

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// A stable hash (64-bit FNV-1a) of every NIR material definition `scene` resolves through
/// `table`: each MuJoCo material in id order (its name and resolved channels), then each geom
/// without a material (its id and the channels of its colour fallback). Editing any authored
/// channel of a material the scene uses changes it.
pub fn material_fingerprint(scene: &Scene, table: &MaterialTable) -> u64 {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    h.write(b"glint NIR materials");
    h.write(&(scene.mat_name.len() as u32).to_le_bytes());
    for m in 0..scene.mat_name.len() {
        let name = scene.mat_name[m].as_bytes();
        h.write(&(name.len() as u32).to_le_bytes());
        h.write(name);
        h.write(&resolve_material(scene, table, m).to_bytes());
    }
    for g in 0..scene.ngeom() {
        if matid(scene, g).is_none() {
            h.write(&(g as u32).to_le_bytes());
            h.write(&NirMaterial::from_albedo(scene.geom_rgba[g]).to_bytes());
        }
    }
    h.0
}

/// A stable hash (64-bit FNV-1a) of what a bake's per-geom table and grid are made from
/// beside the materials: every geom's name, type, size, body, group, mesh or height field and
/// MuJoCo material, and every body's name and weld. A bake made from another scene, or before
/// the scene's geoms changed, has another. (Geom colours are the materials' business:
/// [`material_fingerprint`] covers them.)
pub fn scene_fingerprint(scene: &Scene) -> u64 {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    h.write(b"glint scene geoms");
    let name = |h: &mut Fnv, n: &str| {
        h.write(&(n.len() as u32).to_le_bytes());
        h.write(n.as_bytes());
    };
    h.write(&(scene.ngeom() as u32).to_le_bytes());
    for g in 0..scene.ngeom() {
        name(&mut h, &scene.geom_name[g]);
        h.write(&[scene.geom_type[g] as u8]);
        for v in scene.geom_size[g].to_array() {
            h.write(&v.to_le_bytes());
        }
        for v in [scene.geom_bodyid[g], scene.geom_group[g], scene.geom_dataid[g], scene.geom_matid[g]] {
            h.write(&v.to_le_bytes());
        }
    }
    h.write(&(scene.nbody() as u32).to_le_bytes());
    for b in 0..scene.nbody() {
        name(&mut h, &scene.body_name[b]);
        h.write(&scene.body_weldid[b].to_le_bytes());
    }
    h.0
}

/// The path of the bake called `name` in a project folder: `<dir>/MaterialBakes/<name>.lvxb`.
/// A name is 1 to 100 letters, digits, `-`, `_` or `.`, not starting with `.`.
pub fn bake_path(project_dir: &Path, name: &str) -> Result<PathBuf, MaterialError> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !ok {
        return Err(MaterialError::InvalidName {
            what: "bake name",
            name: name.into(),
            rule: "use 1 to 100 letters, digits, '-', '_' or '.', not starting with '.'",
        });
    }
    Ok(project_dir.join(BAKE_DIR).join(format!("{name}.lvxb")))
}

/// Distinct materials in order of first use.
#[derive(Default)]
struct Palette {
    materials: Vec<NirMaterial>,
    index: HashMap<[u8; MAT_BYTES], u16>,
}

impl Palette {
    fn index_of(&mut self, m: NirMaterial) -> Result<u16, MaterialError> {
        let key = m.to_bytes();
        if let Some(&i) = self.index.get(&key) {
            return Ok(i);
        }
        let i = u16::try_from(self.materials.len()).ok().filter(|&i| i != NONE).ok_or_else(|| {
            MaterialError::Conflict(
                "the scene resolves more than 65535 distinct NIR materials; a bake holds at most 65535".into(),
            )
        })?;
        self.materials.push(m);
        self.index.insert(key, i);
        Ok(i)
    }
}

/// A static visual geom's oriented box, ready for the grid.
struct Solid {
    /// World position of the box centre.
    centre: DVec3,
    /// Local axes as columns.
    rot: DMat3,
    /// Half extents in the geom frame.
    half: DVec3,
    /// World bounds of the box.
    lo: DVec3,
    hi: DVec3,
    material: u16,
}

impl Solid {
    /// Signed distance from `p` to the box: negative inside.
    fn signed_distance(&self, p: DVec3) -> f64 {
        let q = self.rot.transpose() * (p - self.centre);
        let d = q.abs() - self.half;
        d.max(DVec3::ZERO).length() + d.max_element().min(0.0)
    }
}

impl Bake {
    /// Bakes `scene` with the poses of world 0 of `poses` and the NIR authoring in `table`.
    pub fn build(
        scene: &Scene,
        poses: &Poses,
        table: &MaterialTable,
        settings: BakeSettings,
    ) -> Result<Bake, MaterialError> {
        settings.validate()?;
        poses.check_world(0)?;
        let n = scene.ngeom();
        if poses.ngeom() != n {
            return Err(MaterialError::Conflict(format!(
                "the poses hold {} geoms per world, but the scene has {n}: they come from another scene",
                poses.ngeom()
            )));
        }
        let (xpos, xmat) = poses.geoms(0);
        let mat_nir: Vec<NirMaterial> = (0..scene.mat_name.len()).map(|m| resolve_material(scene, table, m)).collect();
        let own = |g: usize| matid(scene, g).map(|m| mat_nir[m]);
        let geom_nir = |g: usize| own(g).unwrap_or_else(|| NirMaterial::from_albedo(scene.geom_rgba[g]));
        let visual: Vec<bool> = (0..n).map(|g| settings.include_hidden || !hidden(scene, g)).collect();
        let is_static = |g: usize| {
            usize::try_from(scene.geom_bodyid[g]).ok().and_then(|b| scene.body_weldid.get(b)).is_some_and(|&w| w == 0)
        };
        // World centre of each geom's bounds (planes: their frame origin).
        let centre: Vec<DVec3> = (0..n)
            .map(|g| match scene.geom_local_bounds(g) {
                Some(b) => xpos[g] + xmat[g] * b.center(),
                None => xpos[g],
            })
            .collect();
        let mut by_body: Vec<Vec<usize>> = vec![Vec::new(); scene.nbody()];
        for g in (0..n).filter(|&g| visual[g]) {
            if let Some(list) = usize::try_from(scene.geom_bodyid[g]).ok().and_then(|b| by_body.get_mut(b)) {
                list.push(g);
            }
        }

        let mut palette = Palette::default();
        let mut geoms = Vec::with_capacity(n);
        for g in 0..n {
            let material = if visual[g] || own(g).is_some() {
                Some(geom_nir(g))
            } else {
                usize::try_from(scene.geom_bodyid[g])
                    .ok()
                    .and_then(|b| by_body.get(b))
                    .and_then(|list| {
                        list.iter().copied().min_by(|&a, &b| {
                            let da = (centre[a] - centre[g]).length_squared();
                            let db = (centre[b] - centre[g]).length_squared();
                            da.total_cmp(&db)
                        })
                    })
                    .map(geom_nir)
            };
            let material = match material {
                Some(m) => palette.index_of(m)?,
                None => NONE,
            };
            let flags = if own(g).is_some() { OWN } else { 0 } | if is_static(g) { STATIC } else { 0 };
            geoms.push(GeomEntry { material, flags });
        }
        // The skins after the geoms, as a lidar that sees them numbers them (`ngeom + skin`):
        // each by its own material, or its colour. They move with their bodies: never static.
        for skin in &scene.skin {
            let own = usize::try_from(skin.matid).ok().and_then(|m| mat_nir.get(m)).copied();
            let material = palette.index_of(own.unwrap_or_else(|| NirMaterial::from_albedo(skin.rgba)))?;
            geoms.push(GeomEntry { material, flags: if own.is_some() { OWN } else { 0 } });
        }

        let mut solids = Vec::new();
        for g in (0..n).filter(|&g| visual[g] && is_static(g)) {
            let Some(b) = scene.geom_local_bounds(g) else { continue };
            let (rot, half) = (xmat[g], 0.5 * (b.max - b.min));
            let c = xpos[g] + rot * b.center();
            let world_half = DMat3::from_cols(rot.x_axis.abs(), rot.y_axis.abs(), rot.z_axis.abs()) * half;
            if !(c.is_finite() && world_half.is_finite() && half.min_element() >= 0.0) {
                continue;
            }
            solids.push(Solid {
                centre: c,
                rot,
                half,
                lo: c - world_half,
                hi: c + world_half,
                material: geoms[g].material,
            });
        }
        let (origin, cell, dims) = grid_frame(&solids, &settings);
        let grid = fill_grid(&solids, origin, cell, dims, settings.splat_radius);
        Ok(Bake {
            settings,
            format_version: BAKE_FORMAT_VERSION,
            dims,
            origin,
            cell,
            fingerprint: material_fingerprint(scene, table),
            scene: Some(scene_fingerprint(scene)),
            palette: palette.materials,
            geoms,
            grid,
        })
    }

    /// The material a beam that hit geom `geom` at world point `point` should use: the geom's
    /// own MuJoCo material if it has one; else, for a static geom, the grid cell at `point`
    /// when filled; else the geom's per-geom table entry; else `None` (a hole, or a geom id
    /// past the baked scene's).
    pub fn material_at(&self, geom: usize, point: DVec3) -> Option<&NirMaterial> {
        self.palette.get(self.index_at(geom, point)?)
    }

    /// The index in [`Bake::palette`] of [`Bake::material_at`]'s material.
    pub(crate) fn index_at(&self, geom: usize, point: DVec3) -> Option<usize> {
        let e = self.geoms.get(geom)?;
        if e.flags & OWN == 0
            && e.flags & STATIC != 0
            && let Some(m) = self.grid_index(point)
        {
            return Some(m);
        }
        (e.material != NONE).then_some(e.material as usize)
    }

    /// The per-geom table entry of `geom` (`None`: no material, or no such geom).
    pub fn geom_material(&self, geom: usize) -> Option<&NirMaterial> {
        self.palette.get(self.geoms.get(geom)?.material as usize)
    }

    /// The material of the grid cell holding world point `point` (`None`: empty or outside).
    pub fn grid_material(&self, point: DVec3) -> Option<&NirMaterial> {
        self.palette.get(self.grid_index(point)?)
    }

    /// The palette index of the grid cell holding world point `point`.
    fn grid_index(&self, point: DVec3) -> Option<usize> {
        let q = (point - self.origin) / self.cell;
        let mut index = 0usize;
        let mut stride = 1usize;
        for (v, &d) in q.to_array().into_iter().zip(&self.dims) {
            let v = v.floor();
            // NaN fails both comparisons.
            if !(v >= 0.0 && v < d as f64) {
                return None;
            }
            index += v as usize * stride;
            stride *= d as usize;
        }
        self.grid.get(index).filter(|&&m| m != NONE).map(|&m| m as usize)
    }

    /// The format version it was written with ([`BAKE_FORMAT_VERSION`] for a fresh bake).
    pub fn format_version(&self) -> u32 {
        self.format_version
    }

    /// Grid cells along x, y and z (all 0 when the scene has no static visual geom).
    pub fn dims(&self) -> [u32; 3] {
        self.dims
    }

    /// The grid's actual cell size, metres.
    pub fn cell_size(&self) -> f64 {
        self.cell
    }

    /// The distinct materials the table and grid refer to.
    pub(crate) fn palette(&self) -> &[NirMaterial] {
        &self.palette
    }

    /// Grid cells that hold a material.
    pub fn filled_cells(&self) -> u64 {
        self.grid.iter().filter(|&&c| c != NONE).count() as u64
    }

    /// The cell size the bake was asked for, metres ([`Bake::cell_size`] is the one the grid
    /// has).
    pub fn requested_cell_size(&self) -> f64 {
        self.settings.cell_size
    }

    /// Whether this bake was made from `scene` as it stands: an entry for each geom and skin
    /// and, where the file holds one, the same [`scene_fingerprint`].
    pub fn matches_scene(&self, scene: &Scene) -> bool {
        self.geoms.len() == scene.ngeom() + scene.skin.len() && self.scene.is_none_or(|f| f == scene_fingerprint(scene))
    }

    /// What this bake is, and whether it matches `scene` and is stale against it with the
    /// NIR authoring `table`: it does not match when [`Bake::matches_scene`] says so, and it
    /// is stale when it does not match, the materials' fingerprint differs, or the format is
    /// older than [`BAKE_FORMAT_VERSION`].
    pub fn status(&self, scene: &Scene, table: &MaterialTable) -> BakeStatus {
        let matches_scene = self.matches_scene(scene);
        let stale = !matches_scene
            || self.fingerprint != material_fingerprint(scene, table)
            || self.format_version < BAKE_FORMAT_VERSION;
        BakeStatus {
            valid: true,
            format_version: self.format_version,
            cell_size: self.cell,
            requested_cell_size: self.settings.cell_size,
            scene_fingerprint: self.scene.unwrap_or(0),
            matches_scene,
            splat_radius: self.settings.splat_radius,
            dims: self.dims,
            filled_cells: self.filled_cells(),
            geom_materials: self.geoms.len() as u64,
            material_fingerprint: self.fingerprint,
            stale,
        }
    }

    /// The `.lvxb` bytes of this bake (the module docs give the layout).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.encode(BAKE_FORMAT_VERSION)
    }

    /// Reads `.lvxb` bytes; `source` names where they came from in errors. Never panics.
    pub fn from_bytes(bytes: &[u8], source: &Path) -> Result<Bake, MaterialError> {
        decode(bytes).map_err(|reason| MaterialError::Bake { path: source.to_path_buf(), reason })
    }

    /// Reads a bake file ([`Bake::to_bytes`]; `glint bake` and `Simulation::save_bake` write them). An older format version loads (and reports
    /// stale); a missing, truncated, corrupt or foreign file, or one from a newer format, is an
    /// error naming the file and what is wrong.
    pub fn load(path: &Path) -> Result<Bake, MaterialError> {
        let bytes = std::fs::read(path)
            .map_err(|e| MaterialError::Bake { path: path.to_path_buf(), reason: format!("cannot read it: {e}") })?;
        Bake::from_bytes(&bytes, path)
    }

    /// The file bytes with `version` in the header (tests write older versions).
    fn encode(&self, version: u32) -> Vec<u8> {
        let mut b =
            Vec::with_capacity(96 + MAT_BYTES * self.palette.len() + 3 * self.geoms.len() + 2 * self.grid.len());
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&version.to_le_bytes());
        b.extend_from_slice(&self.settings.cell_size.to_le_bytes());
        b.extend_from_slice(&self.settings.max_dim.to_le_bytes());
        b.extend_from_slice(&self.settings.splat_radius.to_le_bytes());
        b.push(self.settings.include_hidden as u8);
        for d in self.dims {
            b.extend_from_slice(&d.to_le_bytes());
        }
        for v in self.origin.to_array() {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&self.cell.to_le_bytes());
        b.extend_from_slice(&self.fingerprint.to_le_bytes());
        if version >= SCENE_FINGERPRINT_VERSION {
            b.extend_from_slice(&self.scene.unwrap_or(0).to_le_bytes());
        }
        b.extend_from_slice(&(self.palette.len() as u32).to_le_bytes());
        for m in &self.palette {
            b.extend_from_slice(&m.to_bytes());
        }
        b.extend_from_slice(&(self.geoms.len() as u32).to_le_bytes());
        for e in &self.geoms {
            b.extend_from_slice(&e.material.to_le_bytes());
            b.push(e.flags);
        }
        for c in &self.grid {
            b.extend_from_slice(&c.to_le_bytes());
        }
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }
}

/// Origin, cell size and dims of the grid over `solids`.
fn grid_frame(solids: &[Solid], settings: &BakeSettings) -> (DVec3, f64, [u32; 3]) {
    if solids.is_empty() {
        return (DVec3::ZERO, settings.cell_size, [0; 3]);
    }
    let (lo, hi) =
        solids.iter().fold((DVec3::INFINITY, DVec3::NEG_INFINITY), |(lo, hi), s| (lo.min(s.lo), hi.max(s.hi)));
    let extent = hi - lo;
    // Pad by the splat radius where max_dim leaves room for it.
    let pad = (settings.splat_radius as u32).min((settings.max_dim - 1) / 2);
    let inner = settings.max_dim - 2 * pad;
    let cell = settings.cell_size.max(extent.max_element() / inner as f64);
    let dims = extent.to_array().map(|e| ((e / cell).ceil() as u32).clamp(1, inner) + 2 * pad);
    (lo - DVec3::splat(pad as f64 * cell), cell, dims)
}

/// Fills the grid: each z slab in parallel, the solids in id order within a slab, so the
/// result does not depend on the thread count.
fn fill_grid(solids: &[Solid], origin: DVec3, cell: f64, dims: [u32; 3], splat_radius: i32) -> Vec<u16> {
    let [nx, ny, nz] = dims.map(|d| d as usize);
    let slab = nx * ny;
    let mut grid = vec![NONE; slab * nz];
    if grid.is_empty() {
        return grid;
    }
    let reach = (splat_radius as f64 + 0.5) * cell;
    // Index range of cell centres within `reach` of [lo, hi] along one axis.
    let range = |lo: f64, hi: f64, o: f64, n: usize| -> Option<(usize, usize)> {
        let a = ((lo - reach - o) / cell - 0.5).ceil().max(0.0);
        let b = ((hi + reach - o) / cell - 0.5).floor().min(n as f64 - 1.0);
        (a <= b).then_some((a as usize, b as usize))
    };
    grid.par_chunks_mut(slab).enumerate().for_each(|(k, cells)| {
        let z = origin.z + (k as f64 + 0.5) * cell;
        let mut best = vec![f64::INFINITY; slab];
        for s in solids {
            if z < s.lo.z - reach || z > s.hi.z + reach {
                continue;
            }
            let (Some((i0, i1)), Some((j0, j1))) =
                (range(s.lo.x, s.hi.x, origin.x, nx), range(s.lo.y, s.hi.y, origin.y, ny))
            else {
                continue;
            };
            for j in j0..=j1 {
                let y = origin.y + (j as f64 + 0.5) * cell;
                for i in i0..=i1 {
                    let x = origin.x + (i as f64 + 0.5) * cell;
                    let d = s.signed_distance(DVec3::new(x, y, z));
                    let c = j * nx + i;
                    if d <= reach && d < best[c] {
                        best[c] = d;
                        cells[c] = s.material;
                    }
                }
            }
        }
    });
    grid
}

/// A cursor over file bytes whose reads fail with "truncated".
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], String> {
        let end = (self.pos as u64).checked_add(n).filter(|&e| e <= self.bytes.len() as u64).ok_or_else(|| {
            format!(
                "truncated or damaged: the {what} ({n} bytes from byte {}) runs past the file's end at {} bytes",
                self.pos,
                self.bytes.len()
            )
        })? as usize;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], String> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N as u64, what)?);
        Ok(out)
    }

    fn u32(&mut self, what: &str) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn f64(&mut self, what: &str) -> Result<f64, String> {
        Ok(f64::from_le_bytes(self.array(what)?))
    }
}

/// Parses `.lvxb` bytes; the error says what is wrong (the caller adds the path).
fn decode(bytes: &[u8]) -> Result<Bake, String> {
    let head = &bytes[..bytes.len().min(4)];
    if head != &MAGIC[..head.len()] {
        return Err("not a glint material bake: it does not start with the LVXB magic".into());
    }
    let mut r = Reader { bytes, pos: 0 };
    r.take(4, "header")?;
    let version = r.u32("header")?;
    if version > BAKE_FORMAT_VERSION {
        return Err(format!(
            "written by a newer glint (format version {version}; this build reads versions up to \
             {BAKE_FORMAT_VERSION}): bake again with this build, or update glint"
        ));
    }

    // The structure first: every section's length, read as slices without allocating.
    let cell_size = r.f64("header")?;
    let max_dim = r.u32("header")?;
    let splat_radius = r.u32("header")? as i32;
    let include_hidden = r.array::<1>("header")?[0];
    let dims = [r.u32("header")?, r.u32("header")?, r.u32("header")?];
    // Checked before the grid's length is taken from them: an absurd size is damage, not a
    // file cut short.
    if dims.iter().any(|&d| d > MAX_DIM_LIMIT) || (dims.contains(&0) && dims != [0; 3]) {
        return Err(format!(
            "corrupt: its header gives grid dims {dims:?}, and a bake's dims run from 1 to {MAX_DIM_LIMIT} cells per axis \
             (the file is damaged): bake again"
        ));
    }
    let origin = DVec3::new(r.f64("header")?, r.f64("header")?, r.f64("header")?);
    let cell = r.f64("header")?;
    let fingerprint = u64::from_le_bytes(r.array("header")?);
    let scene = match version >= SCENE_FINGERPRINT_VERSION {
        true => Some(u64::from_le_bytes(r.array("header")?)),
        false => None,
    };
    // A file whose sections do not fit its length is cut short, or its header (its version
    // above all, which decides the layout) is damaged: the message says what the header read.
    let header = |e: String| format!("{e}; its header reads as format version {version} with a {dims:?} grid");
    let npalette = r.u32("palette").map_err(header)?;
    let palette_bytes = r.take(npalette as u64 * MAT_BYTES as u64, "palette").map_err(header)?;
    let ngeom = r.u32("per-geom table").map_err(header)?;
    let geom_bytes = r.take(ngeom as u64 * 3, "per-geom table").map_err(header)?;
    let ncells = dims.iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64));
    let grid_bytes = r.take(ncells.and_then(|n| n.checked_mul(2)).unwrap_or(u64::MAX), "grid").map_err(header)?;
    let body_len = r.pos;
    let stored_crc = r.u32("checksum").map_err(header)?;
    if r.pos != bytes.len() {
        return Err(header(format!(
            "corrupt: {} bytes follow the checksum (the header describes {} bytes in all)",
            bytes.len() - r.pos,
            r.pos
        )));
    }
    if crc32fast::hash(&bytes[..body_len]) != stored_crc {
        return Err("corrupt: checksum mismatch (the file was changed or damaged after it was written)".into());
    }

    // Then the contents: every value must be one a bake can hold.
    let include_hidden = match include_hidden {
        0 => false,
        1 => true,
        v => return Err(format!("corrupt: include_hidden is {v}")),
    };
    let settings = BakeSettings { cell_size, max_dim, splat_radius, include_hidden };
    settings.validate().map_err(|e| format!("corrupt settings: {e}"))?;
    if !(origin.is_finite() && cell.is_finite() && cell > 0.0) {
        return Err(format!("corrupt: grid origin {origin} or cell size {cell} is not usable"));
    }
    let palette = palette_bytes
        .chunks_exact(MAT_BYTES)
        .enumerate()
        .map(|(i, c)| {
            let mut a = [0u8; MAT_BYTES];
            a.copy_from_slice(c);
            let m = NirMaterial::from_bytes(&a)
                .ok_or_else(|| format!("corrupt: palette entry {i} has an unknown class"))?;
            m.validate().map_err(|e| format!("corrupt: palette entry {i}: {e}"))?;
            Ok(m)
        })
        .collect::<Result<Vec<_>, String>>()?;
    let known = |m: u16| m == NONE || (m as usize) < palette.len();
    let geoms = geom_bytes
        .chunks_exact(3)
        .enumerate()
        .map(|(g, c)| {
            let e = GeomEntry { material: u16::from_le_bytes([c[0], c[1]]), flags: c[2] };
            if !known(e.material) || e.flags > (OWN | STATIC) {
                return Err(format!("corrupt: per-geom entry {g} ({} {})", e.material, e.flags));
            }
            Ok(e)
        })
        .collect::<Result<Vec<_>, String>>()?;
    let grid: Vec<u16> = grid_bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    if let Some(i) = grid.iter().position(|&c| !known(c)) {
        return Err(format!("corrupt: grid cell {i} refers to palette entry {} of {}", grid[i], palette.len()));
    }
    Ok(Bake { settings, format_version: version, dims, origin, cell, fingerprint, scene, palette, geoms, grid })
}

impl MaterialLookup for Bake {
    fn palette(&self) -> &[NirMaterial] {
        Bake::palette(self)
    }

    fn index_at(&self, geom: usize, point: DVec3) -> Option<usize> {
        Bake::index_at(self, geom, point)
    }

    // The default's loop with the bake's own lookup written in: through the default, the
    // lookup is not inlined into the loop, even marked `#[inline(always)]`.
    fn indices_at(&self, origin: DVec3, dir: &[DVec3], dist: &[f64], geom: &[i32], out: &mut Vec<u32>) {
        out.clear();
        out.extend(dir.iter().zip(dist).zip(geom).map(|((&d, &t), &g)| {
            let index = usize::try_from(g).ok().and_then(|g| Bake::index_at(self, g, origin + d * t));
            index.map_or(u32::MAX, |i| i as u32)
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Bake {
        Bake {
            settings: BakeSettings::default(),
            format_version: BAKE_FORMAT_VERSION,
            dims: [2, 1, 1],
            origin: DVec3::new(-1.0, 0.0, 0.0),
            cell: 1.0,
            fingerprint: 42,
            scene: Some(7),
            palette: vec![NirMaterial::default()],
            geoms: vec![GeomEntry { material: 0, flags: STATIC }, GeomEntry { material: NONE, flags: 0 }],
            grid: vec![0, NONE],
        }
    }

    #[test]
    fn an_older_version_loads_and_keeps_its_version() {
        let b = small();
        let old = decode(&b.encode(0)).unwrap();
        assert_eq!((old.format_version, old.scene), (0, None), "no scene fingerprint before format 2");
        assert_eq!(Bake { format_version: BAKE_FORMAT_VERSION, scene: b.scene, ..old }, b);
        let one = decode(&b.encode(1)).unwrap();
        assert_eq!((one.format_version, one.scene), (1, None));
        assert_eq!(decode(&b.encode(BAKE_FORMAT_VERSION)).unwrap(), b);
        let err = decode(&b.encode(BAKE_FORMAT_VERSION + 1)).unwrap_err();
        assert!(err.contains("newer glint (format version 3"), "{err}");
    }

    #[test]
    fn lookups_follow_the_table_and_grid() {
        let b = small();
        assert_eq!(b.material_at(0, DVec3::new(-0.5, 0.5, 0.5)), Some(&NirMaterial::default()));
        assert_eq!(b.material_at(1, DVec3::ZERO), None);
        assert_eq!(b.material_at(2, DVec3::ZERO), None);
        assert_eq!(b.grid_material(DVec3::new(0.5, 0.5, 0.5)), None);
        assert_eq!(b.grid_material(DVec3::splat(f64::NAN)), None);
        assert_eq!(b.grid_material(DVec3::new(-1.5, 0.5, 0.5)), None);
    }

    #[test]
    fn batched_lookups_equal_one_by_one() {
        let b = small();
        let (origin, mut dirs, mut dists, mut geoms) = (DVec3::new(-2.0, 0.5, 0.5), vec![], vec![], vec![]);
        for k in 0..40 {
            let a = k as f64 * 0.15;
            dirs.push(DVec3::new(a.cos(), a.sin(), 0.0));
            dists.push([0.5, 1.0, 1.7, 2.5, f64::NAN][k % 5]);
            geoms.push([-1, 0, 1, 2][k % 4]);
        }
        let mut out = Vec::new();
        b.indices_at(origin, &dirs, &dists, &geoms, &mut out);
        for k in 0..40 {
            let one = usize::try_from(geoms[k]).ok().and_then(|g| b.index_at(g, origin + dirs[k] * dists[k]));
            assert_eq!(out[k], one.map_or(u32::MAX, |i| i as u32), "hit {k}");
        }
        assert!(out.contains(&0) && out.contains(&u32::MAX));
    }
}
