//! What glint reads of a compiled MuJoCo model, written once: every array by its `mjModel`
//! name, element type and shape. `glint-mujoco` fills [`ModelArrays`] from `mjModel`'s
//! pointers; the Python module fills it from the numpy arrays of a user's own
//! `mujoco.MjModel` (any version with these names). [`crate::Scene::from_arrays`] turns it
//! into a scene.

use std::borrow::Cow;

use crate::CoreError;

/// Calls `$callback!` with every count and array glint reads of an `mjModel`: counts first,
/// then `name: type [count * width]` per array (`mjModel`'s names, types and shapes).
#[macro_export]
macro_rules! for_model_arrays {
    ($callback:ident) => {
        $callback! {
            counts: ngeom, nbody, nmesh, nmeshvert, nmeshface, nmeshnormal, nmeshtexcoord, nhfield,
                nhfielddata, nmat, ntex, ntexdata, nlight, ncam, nsite, ntendon, nsensor, nskin,
                nskinvert, nskintexvert, nskinface, nskinbone, nskinbonevert, nflex, nflexvert,
                nflexelemdata, nflexshelldata, nflextexcoord, nnames, npaths;
            arrays:
            geom_type: i32 [ngeom * 1], geom_size: f64 [ngeom * 3], geom_group: i32 [ngeom * 1],
            geom_bodyid: i32 [ngeom * 1], geom_contype: i32 [ngeom * 1], geom_conaffinity: i32 [ngeom * 1],
            geom_dataid: i32 [ngeom * 1], geom_matid: i32 [ngeom * 1], geom_rgba: f32 [ngeom * 4],
            name_geomadr: i32 [ngeom * 1],
            body_parentid: i32 [nbody * 1], body_rootid: i32 [nbody * 1], body_weldid: i32 [nbody * 1],
            name_bodyadr: i32 [nbody * 1],
            mesh_vertadr: i32 [nmesh * 1], mesh_vertnum: i32 [nmesh * 1], mesh_faceadr: i32 [nmesh * 1],
            mesh_facenum: i32 [nmesh * 1], mesh_normaladr: i32 [nmesh * 1], mesh_normalnum: i32 [nmesh * 1],
            mesh_texcoordadr: i32 [nmesh * 1], mesh_texcoordnum: i32 [nmesh * 1], name_meshadr: i32 [nmesh * 1],
            mesh_vert: f32 [nmeshvert * 3], mesh_face: i32 [nmeshface * 3], mesh_normal: f32 [nmeshnormal * 3],
            mesh_facenormal: i32 [nmeshface * 3], mesh_texcoord: f32 [nmeshtexcoord * 2],
            mesh_facetexcoord: i32 [nmeshface * 3],
            hfield_nrow: i32 [nhfield * 1], hfield_ncol: i32 [nhfield * 1], hfield_adr: i32 [nhfield * 1],
            hfield_size: f64 [nhfield * 4], hfield_data: f32 [nhfielddata * 1], name_hfieldadr: i32 [nhfield * 1],
            mat_rgba: f32 [nmat * 4], mat_emission: f32 [nmat * 1], mat_specular: f32 [nmat * 1],
            mat_shininess: f32 [nmat * 1], mat_reflectance: f32 [nmat * 1], mat_texid: i32 [nmat * 10],
            mat_texrepeat: f32 [nmat * 2], mat_texuniform: bool [nmat * 1], name_matadr: i32 [nmat * 1],
            tex_type: i32 [ntex * 1], tex_width: i32 [ntex * 1], tex_height: i32 [ntex * 1],
            tex_nchannel: i32 [ntex * 1], tex_adr: i64 [ntex * 1], tex_pathadr: i32 [ntex * 1],
            tex_colorspace: i32 [ntex * 1], name_texadr: i32 [ntex * 1], tex_data: u8 [ntexdata * 1],
            light_bodyid: i32 [nlight * 1], light_type: i32 [nlight * 1], light_castshadow: bool [nlight * 1],
            light_active: bool [nlight * 1], light_diffuse: f32 [nlight * 3], light_ambient: f32 [nlight * 3],
            light_specular: f32 [nlight * 3], light_attenuation: f32 [nlight * 3], light_cutoff: f32 [nlight * 1],
            light_exponent: f32 [nlight * 1], light_pos: f64 [nlight * 3], light_dir: f64 [nlight * 3],
            name_lightadr: i32 [nlight * 1],
            cam_bodyid: i32 [ncam * 1], cam_fovy: f64 [ncam * 1], cam_resolution: i32 [ncam * 2],
            cam_projection: i32 [ncam * 1], cam_output: i32 [ncam * 1], cam_sensorsize: f32 [ncam * 2],
            cam_intrinsic: f32 [ncam * 4], name_camadr: i32 [ncam * 1],
            site_bodyid: i32 [nsite * 1], site_type: i32 [nsite * 1], site_size: f64 [nsite * 3],
            site_group: i32 [nsite * 1], site_rgba: f32 [nsite * 4], site_matid: i32 [nsite * 1],
            name_siteadr: i32 [nsite * 1],
            tendon_group: i32 [ntendon * 1], tendon_matid: i32 [ntendon * 1],
            sensor_type: i32 [nsensor * 1], name_sensoradr: i32 [nsensor * 1],
            skin_vertadr: i32 [nskin * 1], skin_vertnum: i32 [nskin * 1], skin_texcoordadr: i32 [nskin * 1],
            skin_faceadr: i32 [nskin * 1], skin_facenum: i32 [nskin * 1], skin_boneadr: i32 [nskin * 1],
            skin_bonenum: i32 [nskin * 1], skin_rgba: f32 [nskin * 4], skin_matid: i32 [nskin * 1],
            skin_group: i32 [nskin * 1], skin_inflate: f32 [nskin * 1], name_skinadr: i32 [nskin * 1],
            skin_vert: f32 [nskinvert * 3], skin_texcoord: f32 [nskintexvert * 2], skin_face: i32 [nskinface * 3],
            skin_bonevertadr: i32 [nskinbone * 1], skin_bonevertnum: i32 [nskinbone * 1],
            skin_bonebindpos: f32 [nskinbone * 3], skin_bonebindquat: f32 [nskinbone * 4],
            skin_bonebodyid: i32 [nskinbone * 1], skin_bonevertid: i32 [nskinbonevert * 1],
            skin_bonevertweight: f32 [nskinbonevert * 1],
            flex_dim: i32 [nflex * 1], flex_interp: i32 [nflex * 1], flex_vertadr: i32 [nflex * 1],
            flex_vertnum: i32 [nflex * 1], flex_elemnum: i32 [nflex * 1], flex_elemdataadr: i32 [nflex * 1],
            flex_shellnum: i32 [nflex * 1], flex_shelldataadr: i32 [nflex * 1], flex_texcoordadr: i32 [nflex * 1],
            flex_centered: bool [nflex * 1], flex_radius: f64 [nflex * 1], flex_rgba: f32 [nflex * 4],
            flex_matid: i32 [nflex * 1], flex_group: i32 [nflex * 1], flex_flatskin: bool [nflex * 1],
            name_flexadr: i32 [nflex * 1],
            flex_elem: i32 [nflexelemdata * 1], flex_elemtexcoord: i32 [nflexelemdata * 1],
            flex_shell: i32 [nflexshelldata * 1], flex_vert: f64 [nflexvert * 3],
            flex_vertbodyid: i32 [nflexvert * 1], flex_texcoord: f32 [nflextexcoord * 2],
        }
    };
}

/// One array of [`ModelArrays`]: its `mjModel` name, element type, the count that sizes it
/// and the numbers per element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArraySpec {
    /// `mjModel`'s name ("geom_size").
    pub name: &'static str,
    /// numpy's name for the element type ("float64", "int32", "uint8", ...).
    pub dtype: &'static str,
    /// The count ("ngeom").
    pub count: &'static str,
    /// Numbers per element (3 for `geom_size`).
    pub width: usize,
}

/// An element type of a model array.
pub trait Element: Copy + Default + 'static {
    /// numpy's name for it.
    const DTYPE: &'static str;
    /// The numbers in `bytes` (native byte order; a trailing partial number is dropped).
    fn from_ne_bytes(bytes: &[u8]) -> Vec<Self>;
}

macro_rules! element {
    ($($ty:ty => $dtype:literal),*) => {$(
        impl Element for $ty {
            const DTYPE: &'static str = $dtype;
            fn from_ne_bytes(bytes: &[u8]) -> Vec<Self> {
                bytes
                    .chunks_exact(std::mem::size_of::<$ty>())
                    .map(|c| <$ty>::from_ne_bytes(c.try_into().expect("chunks of the element's size")))
                    .collect()
            }
        }
    )*};
}
element!(i32 => "int32", i64 => "int64", u8 => "uint8", f32 => "float32", f64 => "float64");

impl Element for bool {
    const DTYPE: &'static str = "bool";
    fn from_ne_bytes(bytes: &[u8]) -> Vec<Self> {
        bytes.iter().map(|&b| b != 0).collect()
    }
}

/// Where [`ModelArrays::from_source`] gets each array (the Python module's numpy arrays).
pub trait ArraySource<'a> {
    /// The array `spec` as `len` numbers of type `T`; an error naming `spec.name` when it is
    /// missing or of another length.
    fn array<T: Element>(&mut self, spec: &ArraySpec, len: usize) -> Result<Cow<'a, [T]>, CoreError>;
}

/// The visual settings a scene reads besides arrays (`mjModel.vis`, `mjModel.stat`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Visual {
    /// `vis.quality.offsamples`.
    pub offsamples: i32,
    /// `vis.map.zfar`.
    pub zfar: f32,
    /// `stat.extent`.
    pub extent: f64,
    /// `vis.map.haze`.
    pub haze: f32,
    /// `vis.rgba.haze`.
    pub haze_rgba: [f32; 4],
}

macro_rules! define_model_arrays {
    (counts: $($count:ident),* ; arrays: $($field:ident : $ty:ty [$n:ident * $w:literal]),* $(,)?) => {
        /// The element counts of a model (`mjModel`'s `n*` fields).
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        #[allow(missing_docs)]
        pub struct ModelCounts { $(pub $count: usize,)* }

        impl ModelCounts {
            /// Every count's name.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($count)),*];

            /// Sets the count called `name`; false for a name that is not a count.
            pub fn set(&mut self, name: &str, value: usize) -> bool {
                match name {
                    $(stringify!($count) => self.$count = value,)*
                    _ => return false,
                }
                true
            }
        }

        /// Every array glint reads of a compiled model, by `mjModel`'s names, flat (row-major),
        /// borrowed where the source allows.
        #[allow(missing_docs)]
        pub struct ModelArrays<'a> {
            pub counts: ModelCounts,
            pub visual: Visual,
            /// `mjModel.names`: every name, NUL-terminated, at `name_*adr`.
            pub names: Cow<'a, [u8]>,
            /// `mjModel.paths`: asset file paths, NUL-terminated, at `*_pathadr`.
            pub paths: Cow<'a, [u8]>,
            $(pub $field: Cow<'a, [$ty]>,)*
        }

        /// Every array of [`ModelArrays`], in order.
        pub const MODEL_ARRAYS: &[ArraySpec] = &[
            $(ArraySpec { name: stringify!($field), dtype: <$ty as Element>::DTYPE, count: stringify!($n), width: $w }),*
        ];

        impl<'a> ModelArrays<'a> {
            /// Every array from `source`, each checked to hold `count × width` numbers.
            pub fn from_source(
                counts: ModelCounts,
                visual: Visual,
                names: Cow<'a, [u8]>,
                paths: Cow<'a, [u8]>,
                source: &mut impl ArraySource<'a>,
            ) -> Result<ModelArrays<'a>, CoreError> {
                let mut specs = MODEL_ARRAYS.iter();
                Ok(ModelArrays {
                    counts,
                    visual,
                    names,
                    paths,
                    $($field: source.array::<$ty>(specs.next().expect("one spec per array"), counts.$n * $w)?,)*
                })
            }
        }
    };
}

for_model_arrays!(define_model_arrays);

impl ModelArrays<'_> {
    /// The name at `adr` in `names` (empty when `adr` is out of range).
    pub fn name_at(&self, adr: i32) -> String {
        c_string_at(&self.names, adr)
    }

    /// Per element, its name from `adr` (a `name_*adr` array).
    pub fn names_of(&self, adr: &[i32]) -> Vec<String> {
        adr.iter().map(|&a| self.name_at(a)).collect()
    }

    /// The asset path at `adr` in `paths` (empty when there is none).
    pub fn path_at(&self, adr: i32) -> String {
        c_string_at(&self.paths, adr)
    }
}

/// The NUL-terminated string at `adr` in `buffer`.
fn c_string_at(buffer: &[u8], adr: i32) -> String {
    let Some(rest) = usize::try_from(adr).ok().and_then(|a| buffer.get(a..)) else { return String::new() };
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    String::from_utf8_lossy(&rest[..end]).into_owned()
}
