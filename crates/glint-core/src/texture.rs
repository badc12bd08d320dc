//! A texture's pixels as MuJoCo holds them (rows top to bottom, `nchannel` bytes per pixel;
//! a cube or skybox texture stacks its six faces, each `width` × `width`, in MuJoCo's order
//! +X, −X, +Y, −Y, +Z, −Z).

/// How a texture is mapped (MuJoCo's `mjtTexture`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextureKind {
    /// A 2D image, mapped by the object's coordinates.
    TwoD,
    /// A cube map on a geom.
    Cube,
    /// The scene's background.
    Skybox,
}

impl TextureKind {
    /// From MuJoCo's `mjtTexture` value (0 2D, 1 cube, 2 skybox).
    pub fn from_mujoco(t: i32) -> Option<TextureKind> {
        match t {
            0 => Some(TextureKind::TwoD),
            1 => Some(TextureKind::Cube),
            2 => Some(TextureKind::Skybox),
            _ => None,
        }
    }
}

/// One texture's pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct Texture {
    /// How it is mapped.
    pub kind: TextureKind,
    /// Columns.
    pub width: usize,
    /// Rows (six faces' worth for cube and skybox textures).
    pub height: usize,
    /// Bytes per pixel (1 to 4).
    pub nchannel: usize,
    /// `width × height × nchannel` bytes.
    pub data: Vec<u8>,
    /// Whether the bytes are sRGB-encoded (MJCF `colorspace="sRGB"`): MuJoCo's classic
    /// renderer uploads such a texture as `GL_SRGB8(_ALPHA8)`, so it is linearised when
    /// sampled.
    pub srgb: bool,
}
