//! Per-world assets, as data: a variant of a model is a list of asset swaps on named geoms,
//! bodies and materials (MuJoCo Warp's "per-world assets"). `glint-mujoco` compiles each
//! variant through MuJoCo's model editing; the manifest, Python and Rust front ends build
//! these.

/// What an [`AssetEdit`] applies to, by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EditTarget {
    /// One geom.
    Geom(String),
    /// Every geom of one body (not of its children).
    Body(String),
    /// One material (for a texture swap).
    Material(String),
}

impl EditTarget {
    /// The kind of thing targeted, as a manifest key names it.
    pub fn kind(&self) -> &'static str {
        match self {
            EditTarget::Geom(_) => "geom",
            EditTarget::Body(_) => "body",
            EditTarget::Material(_) => "material",
        }
    }

    /// The target's name.
    pub fn name(&self) -> &str {
        match self {
            EditTarget::Geom(n) | EditTarget::Body(n) | EditTarget::Material(n) => n,
        }
    }
}

/// One swap of a variant. Unset fields leave the target as the base model has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssetEdit {
    /// What the edit applies to.
    pub target: EditTarget,
    /// A mesh asset the geom takes (it becomes a mesh geom).
    pub mesh: Option<String>,
    /// A height-field asset the geom takes (it becomes a height-field geom).
    pub hfield: Option<String>,
    /// A material asset the geom takes.
    pub material: Option<String>,
    /// A texture the material takes as its colour (RGB) texture.
    pub texture: Option<String>,
    /// Whether the geom slot is in use: `false` makes it an empty slot (no contacts, no
    /// mass, invisible to rays and cameras, as MuJoCo Warp's null slots), `true` restores
    /// contacts (`contype` and `conaffinity` 1).
    pub enabled: Option<bool>,
}

impl AssetEdit {
    /// An edit of `target` that changes nothing yet.
    pub fn new(target: EditTarget) -> AssetEdit {
        AssetEdit { target, mesh: None, hfield: None, material: None, texture: None, enabled: None }
    }
}

/// A named variant of a model: the base model with `edits` applied in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variant {
    /// Name (reported in errors and recordings).
    pub name: String,
    /// The swaps, applied in order.
    pub edits: Vec<AssetEdit>,
}
