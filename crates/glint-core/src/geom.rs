//! The closed set of geom types glint casts rays against, numbered as MuJoCo's `mjtGeom`.

/// A MuJoCo geom type. The discriminants equal MuJoCo's `mjtGeom` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(u8)]
pub enum GeomType {
    /// Infinite (or rectangle-bounded) plane facing local +Z.
    Plane = 0,
    /// Height field: a grid of elevations over a box-shaped base.
    Hfield = 1,
    /// Sphere of radius `size[0]`.
    Sphere = 2,
    /// Capsule of radius `size[0]` and half-length `size[1]` along local Z.
    Capsule = 3,
    /// Ellipsoid with semi-axes `size`.
    Ellipsoid = 4,
    /// Cylinder of radius `size[0]` and half-height `size[1]` along local Z.
    Cylinder = 5,
    /// Box with half-sizes `size`.
    Box = 6,
    /// Triangle mesh.
    Mesh = 7,
}

impl GeomType {
    /// The type for MuJoCo's `mjtGeom` value, or `None` for types glint does not cast against
    /// (SDF plugins, flex and the visual-only types).
    pub fn from_mujoco(value: i32) -> Option<Self> {
        Some(match value {
            0 => Self::Plane,
            1 => Self::Hfield,
            2 => Self::Sphere,
            3 => Self::Capsule,
            4 => Self::Ellipsoid,
            5 => Self::Cylinder,
            6 => Self::Box,
            7 => Self::Mesh,
            _ => return None,
        })
    }

    /// Whether a geom of this type takes its shape from a mesh or height field (`geom_dataid`).
    pub fn has_data(self) -> bool {
        matches!(self, Self::Mesh | Self::Hfield)
    }

    /// MuJoCo's name for the type, as written in MJCF.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plane => "plane",
            Self::Hfield => "hfield",
            Self::Sphere => "sphere",
            Self::Capsule => "capsule",
            Self::Ellipsoid => "ellipsoid",
            Self::Cylinder => "cylinder",
            Self::Box => "box",
            Self::Mesh => "mesh",
        }
    }
}
