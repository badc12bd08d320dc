//! [`Scene::from_arrays`]: glint's scene from a compiled model's arrays ([`ModelArrays`]),
//! whoever read them (`glint-mujoco` from `mjModel`, the Python module from a user's
//! `mujoco.MjModel`).

use std::collections::BTreeMap;

use glam::DVec3;

use crate::model_arrays::ModelArrays;
use crate::{CoreError, GeomType, Hfield, Mesh, Scene, Skin, SkinBone, Texture, TextureKind};

/// `mjNTEXROLE`: textures per material; role 1 is the RGB (base colour) one.
const NTEXROLE: usize = 10;
/// `mjCOLORSPACE_SRGB`.
const COLORSPACE_SRGB: i32 = 2;
/// `mjSENS_RANGEFINDER`.
const SENS_RANGEFINDER: i32 = 7;

fn vec3(v: &[f64], i: usize) -> DVec3 {
    DVec3::new(v[3 * i], v[3 * i + 1], v[3 * i + 2])
}

fn fixed<const N: usize, T: Copy>(v: &[T], i: usize) -> [T; N] {
    std::array::from_fn(|k| v[N * i + k])
}

/// `n` rows of `N` numbers each.
fn rows<const N: usize, T: Copy>(v: &[T], n: usize) -> Vec<[T; N]> {
    (0..n).map(|i| fixed::<N, T>(v, i)).collect()
}

fn geom_types(kinds: &[i32], name: impl Fn(usize) -> String) -> Result<Vec<GeomType>, CoreError> {
    kinds
        .iter()
        .enumerate()
        .map(|(g, &t)| {
            GeomType::from_mujoco(t).ok_or_else(|| CoreError::UnsupportedGeom { geom: g, name: name(g), kind: t })
        })
        .collect()
}

impl Scene {
    /// The scene of a compiled model; with `assets` false its meshes and height fields are
    /// left empty (a variant's, which shares the base model's). Fails naming a geom of a type
    /// glint cannot cast against, or a mesh or height field it cannot build.
    pub fn from_arrays(a: &ModelArrays, assets: bool) -> Result<Scene, CoreError> {
        let c = a.counts;
        let geom_name = a.names_of(&a.name_geomadr);
        let geom_type = geom_types(&a.geom_type, |g| geom_name[g].clone())?;
        let site_name = a.names_of(&a.name_siteadr);
        // MuJoCo compiles sites only as spheres, capsules, ellipsoids, cylinders and boxes.
        let site_type = geom_types(&a.site_type, |s| format!("site {}", site_name[s]))?;
        let (mesh_texcoord, mesh_facetexcoord) = if assets { texcoords(a) } else { (Vec::new(), Vec::new()) };
        let (emission, specular, shininess, reflectance) =
            (&a.mat_emission, &a.mat_specular, &a.mat_shininess, &a.mat_reflectance);
        Ok(Scene {
            geom_type,
            geom_size: (0..c.ngeom).map(|g| vec3(&a.geom_size, g)).collect(),
            geom_group: a.geom_group.to_vec(),
            geom_bodyid: a.geom_bodyid.to_vec(),
            geom_contype: a.geom_contype.to_vec(),
            geom_conaffinity: a.geom_conaffinity.to_vec(),
            geom_dataid: a.geom_dataid.to_vec(),
            geom_matid: a.geom_matid.to_vec(),
            geom_rgba: rows::<4, f32>(&a.geom_rgba, c.ngeom),
            geom_name,
            body_parentid: a.body_parentid.to_vec(),
            body_rootid: a.body_rootid.to_vec(),
            body_weldid: a.body_weldid.to_vec(),
            body_name: a.names_of(&a.name_bodyadr),
            mesh: if assets { meshes(a)? } else { Vec::new() },
            hfield: if assets { hfields(a)? } else { Vec::new() },
            mesh_texcoord,
            mesh_facetexcoord,
            mesh_facenormal: facenormals(a),
            mat_rgba: rows::<4, f32>(&a.mat_rgba, c.nmat),
            mat_texid: (0..c.nmat).map(|i| a.mat_texid[NTEXROLE * i + 1]).collect(),
            mat_texrepeat: rows::<2, f32>(&a.mat_texrepeat, c.nmat),
            mat_texuniform: a.mat_texuniform.to_vec(),
            mat_shading: (0..c.nmat).map(|i| [emission[i], specular[i], shininess[i], reflectance[i]]).collect(),
            mat_name: a.names_of(&a.name_matadr),
            tex_type: a.tex_type.to_vec(),
            tex_size: (0..c.ntex).map(|i| [a.tex_width[i], a.tex_height[i]]).collect(),
            tex_file: a.tex_pathadr.iter().map(|&p| a.path_at(p)).collect(),
            tex_name: a.names_of(&a.name_texadr),
            tex_srgb: a.tex_colorspace.iter().map(|&s| s == COLORSPACE_SRGB).collect(),
            light_bodyid: a.light_bodyid.to_vec(),
            light_type: a.light_type.to_vec(),
            light_castshadow: a.light_castshadow.to_vec(),
            light_active: a.light_active.to_vec(),
            light_diffuse: rows::<3, f32>(&a.light_diffuse, c.nlight),
            light_ambient: rows::<3, f32>(&a.light_ambient, c.nlight),
            light_specular: rows::<3, f32>(&a.light_specular, c.nlight),
            light_attenuation: rows::<3, f32>(&a.light_attenuation, c.nlight),
            light_spot: (0..c.nlight).map(|i| [a.light_cutoff[i], a.light_exponent[i]]).collect(),
            light_name: a.names_of(&a.name_lightadr),
            light_pos: (0..c.nlight).map(|i| vec3(&a.light_pos, i)).collect(),
            light_dir: (0..c.nlight).map(|i| vec3(&a.light_dir, i)).collect(),
            cam_bodyid: a.cam_bodyid.to_vec(),
            cam_fovy: a.cam_fovy.to_vec(),
            cam_resolution: rows::<2, i32>(&a.cam_resolution, c.ncam),
            cam_projection: a.cam_projection.to_vec(),
            cam_output: a.cam_output.to_vec(),
            cam_sensorsize: rows::<2, f32>(&a.cam_sensorsize, c.ncam),
            cam_intrinsic: rows::<4, f32>(&a.cam_intrinsic, c.ncam),
            cam_name: a.names_of(&a.name_camadr),
            site_bodyid: a.site_bodyid.to_vec(),
            site_name,
            site_type,
            site_size: (0..c.nsite).map(|i| vec3(&a.site_size, i)).collect(),
            site_group: a.site_group.to_vec(),
            site_rgba: rows::<4, f32>(&a.site_rgba, c.nsite),
            site_matid: a.site_matid.to_vec(),
            tendon_group: a.tendon_group.to_vec(),
            tendon_matid: a.tendon_matid.to_vec(),
            offsamples: a.visual.offsamples,
            zfar: f64::from(a.visual.zfar) * a.visual.extent,
            haze: f64::from(a.visual.haze),
            haze_rgba: a.visual.haze_rgba,
            skin: [skins(a), flexes(a)].concat(),
            undrawn: undrawn(a),
        })
    }
}

/// Every texture's pixels from `tex_data` (as the compiled model holds them). Fails naming a
/// texture whose type or size does not fit.
pub fn textures_from_arrays(a: &ModelArrays) -> Result<Vec<Texture>, CoreError> {
    let names = a.names_of(&a.name_texadr);
    (0..a.counts.ntex)
        .map(|t| {
            let bad = |reason: String| CoreError::BadShape { kind: "texture", name: names[t].clone(), reason };
            let kind = TextureKind::from_mujoco(a.tex_type[t])
                .ok_or_else(|| bad(format!("its type {} is not 2d, cube or skybox", a.tex_type[t])))?;
            let (width, height, nchannel) =
                (a.tex_width[t].max(0) as usize, a.tex_height[t].max(0) as usize, a.tex_nchannel[t].max(0) as usize);
            let start = usize::try_from(a.tex_adr[t]).map_err(|_| bad("its data address is negative".into()))?;
            let data = a
                .tex_data
                .get(start..start + width * height * nchannel)
                .filter(|_| (1..=4).contains(&nchannel))
                .ok_or_else(|| {
                    bad(format!("tex_data does not hold {width} x {height} x {nchannel} bytes at {start}"))
                })?;
            Ok(Texture {
                kind,
                width,
                height,
                nchannel,
                data: data.to_vec(),
                srgb: a.tex_colorspace[t] == COLORSPACE_SRGB,
            })
        })
        .collect()
}

fn meshes(a: &ModelArrays) -> Result<Vec<Mesh>, CoreError> {
    let names = a.names_of(&a.name_meshadr);
    (0..a.counts.nmesh)
        .map(|i| {
            let span = |adr: i32, num: i32| adr.max(0) as usize..(adr.max(0) + num.max(0)) as usize;
            let v = span(a.mesh_vertadr[i], a.mesh_vertnum[i]).map(|k| fixed::<3, f32>(&a.mesh_vert, k)).collect();
            let f = span(a.mesh_faceadr[i], a.mesh_facenum[i])
                .map(|k| fixed::<3, i32>(&a.mesh_face, k).map(|x| x as u32))
                .collect();
            let n =
                span(a.mesh_normaladr[i], a.mesh_normalnum[i]).map(|k| fixed::<3, f32>(&a.mesh_normal, k)).collect();
            Mesh::new(names[i].clone(), v, f, n)
        })
        .collect()
}

/// Per mesh, each face's indices into its own normals (empty where one is out of range).
fn facenormals(a: &ModelArrays) -> Vec<Vec<[u32; 3]>> {
    (0..a.counts.nmesh)
        .map(|i| {
            let faces: Vec<[u32; 3]> = (0..a.mesh_facenum[i].max(0) as usize)
                .map(|k| fixed::<3, i32>(&a.mesh_facenormal, a.mesh_faceadr[i] as usize + k).map(|x| x.max(0) as u32))
                .collect();
            if faces.iter().flatten().any(|&x| x as i32 >= a.mesh_normalnum[i]) { Vec::new() } else { faces }
        })
        .collect()
}

/// Per mesh, its texture coordinates and each face's indices into them (both empty for a
/// mesh without texture coordinates).
#[allow(clippy::type_complexity)]
fn texcoords(a: &ModelArrays) -> (Vec<Vec<[f32; 2]>>, Vec<Vec<[u32; 3]>>) {
    (0..a.counts.nmesh)
        .map(|i| {
            let (adr, num) = (a.mesh_texcoordadr[i], a.mesh_texcoordnum[i]);
            if adr < 0 || num <= 0 {
                return (Vec::new(), Vec::new());
            }
            let coords = (0..num as usize).map(|k| fixed::<2, f32>(&a.mesh_texcoord, adr as usize + k)).collect();
            // Indices past the mesh's own coordinates are dropped with the whole mapping (the
            // renderer then maps the mesh as it maps one without).
            let faces: Vec<[u32; 3]> = (0..a.mesh_facenum[i] as usize)
                .map(|k| fixed::<3, i32>(&a.mesh_facetexcoord, a.mesh_faceadr[i] as usize + k).map(|x| x.max(0) as u32))
                .collect();
            if faces.iter().flatten().any(|&x| x as i32 >= num) {
                return (Vec::new(), Vec::new());
            }
            (coords, faces)
        })
        .unzip()
}

fn hfields(a: &ModelArrays) -> Result<Vec<Hfield>, CoreError> {
    let names = a.names_of(&a.name_hfieldadr);
    (0..a.counts.nhfield)
        .map(|i| {
            let (r, c) = (a.hfield_nrow[i].max(0) as usize, a.hfield_ncol[i].max(0) as usize);
            let start = a.hfield_adr[i].max(0) as usize;
            let data = a.hfield_data.get(start..start + r * c).ok_or_else(|| CoreError::BadShape {
                kind: "height field",
                name: names[i].clone(),
                reason: format!("hfield_data does not hold its {r}×{c} heights at {start}"),
            })?;
            Hfield::new(names[i].clone(), r, c, fixed::<4, f64>(&a.hfield_size, i), data.to_vec())
        })
        .collect()
}

/// Every skin: its bind-pose surface and the bones that move it.
fn skins(a: &ModelArrays) -> Vec<Skin> {
    let names = a.names_of(&a.name_skinadr);
    (0..a.counts.nskin)
        .map(|i| {
            let (v0, nv) = (a.skin_vertadr[i] as usize, a.skin_vertnum[i].max(0) as usize);
            let bones = (a.skin_boneadr[i] as usize..(a.skin_boneadr[i] + a.skin_bonenum[i].max(0)) as usize)
                .map(|b| {
                    let verts =
                        a.skin_bonevertadr[b] as usize..(a.skin_bonevertadr[b] + a.skin_bonevertnum[b].max(0)) as usize;
                    SkinBone {
                        body: a.skin_bonebodyid[b].max(0) as usize,
                        bindpos: fixed::<3, f32>(&a.skin_bonebindpos, b),
                        bindquat: fixed::<4, f32>(&a.skin_bonebindquat, b),
                        vert: a.skin_bonevertid[verts.clone()].iter().map(|&v| v.max(0) as u32).collect(),
                        weight: a.skin_bonevertweight[verts].to_vec(),
                    }
                })
                .collect();
            Skin {
                name: names[i].clone(),
                rgba: fixed::<4, f32>(&a.skin_rgba, i),
                matid: a.skin_matid[i],
                group: a.skin_group[i],
                inflate: a.skin_inflate[i],
                vert: (v0..v0 + nv).map(|k| fixed::<3, f32>(&a.skin_vert, k)).collect(),
                texcoord: match usize::try_from(a.skin_texcoordadr[i]) {
                    Ok(t) => (t..t + nv).map(|k| fixed::<2, f32>(&a.skin_texcoord, k)).collect(),
                    Err(_) => Vec::new(),
                },
                face: (a.skin_faceadr[i] as usize..(a.skin_faceadr[i] + a.skin_facenum[i].max(0)) as usize)
                    .map(|f| fixed::<3, i32>(&a.skin_face, f).map(|x| x.max(0) as u32))
                    .collect(),
                bones,
                flex: None,
                sides: 0,
                flat: false,
            }
        })
        .collect()
}

/// The `k`-th entry of `width` indices at `adr` in `data`.
fn corners(data: &[i32], adr: i32, k: usize, width: usize) -> Vec<u32> {
    (0..width).map(|c| data[adr as usize + k * width + c].max(0) as u32).collect()
}

/// The flexes MuJoCo's renderer draws as surfaces with its default options (`mjVIS_FLEXSKIN`
/// on), each as a [`Skin`] whose vertices ride their bodies rigidly, as `mj_flex` places
/// them: a 2-D flex (cloth) as two layers `radius` either side of its elements, each facing
/// out; a 3-D flex as its shell, `radius` out. Built as `mjv_updateActiveFlex` builds them.
/// Interpolated flexes and 1-D flexes (cables, drawn as edge cylinders) are not drawn: see
/// [`undrawn`].
fn flexes(a: &ModelArrays) -> Vec<Skin> {
    let names = a.names_of(&a.name_flexadr);
    (0..a.counts.nflex)
        .filter(|&f| drawn_flex(a.flex_dim[f], a.flex_interp[f]))
        .map(|f| flex(a, f, &names[f]))
        .collect()
}

fn flex(a: &ModelArrays, f: usize, name: &str) -> Skin {
    let (v0, nv) = (a.flex_vertadr[f] as usize, a.flex_vertnum[f].max(0) as usize);
    let d = a.flex_dim[f] as usize;
    let elements: Vec<Vec<u32>> = (0..a.flex_elemnum[f].max(0) as usize)
        .map(|e| corners(&a.flex_elem, a.flex_elemdataadr[f], e, d + 1))
        .collect();
    let shells =
        || (0..a.flex_shellnum[f].max(0) as usize).map(move |s| corners(&a.flex_shell, a.flex_shelldataadr[f], s, d));
    // Two layers for a cloth (the second a copy of the vertices, its faces turned over), the
    // shell for a solid.
    let mut sides = 0;
    let (layers, face): (usize, Vec<[u32; 3]>) = if d == 2 {
        let below = |v: u32| v + nv as u32;
        let top = elements.iter().map(|e| [e[0], e[1], e[2]]);
        let bottom = elements.iter().map(|e| [e[0], e[2], e[1]].map(below));
        // The border's strips (`makeSide`): per border edge (a, b), the triangles
        // (a top, b bottom, b top) and (b bottom, a top, a bottom).
        let strips: Vec<[u32; 3]> =
            shells().flat_map(|e| [[e[0], below(e[1]), e[1]], [below(e[1]), e[0], below(e[0])]]).collect();
        sides = strips.len();
        (2, top.chain(bottom).chain(strips).collect())
    } else {
        (1, shells().map(|s| [s[0], s[1], s[2]]).collect())
    };
    let local: Vec<[f32; 3]> = (v0..v0 + nv)
        .map(|i| if a.flex_centered[f] { [0.0; 3] } else { fixed::<3, f64>(&a.flex_vert, i).map(|x| x as f32) })
        .collect();
    let mut by_body: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
    for layer in 0..layers {
        for k in 0..nv {
            by_body.entry(a.flex_vertbodyid[v0 + k].max(0) as usize).or_default().push((layer * nv + k) as u32);
        }
    }
    let bones = by_body
        .into_iter()
        .map(|(body, vert)| SkinBone {
            body,
            bindpos: [0.0; 3],
            bindquat: [1.0, 0.0, 0.0, 0.0],
            weight: vec![1.0; vert.len()],
            vert,
        })
        .collect();
    // Per vertex, the texture coordinates its elements give it (a 3-D flex's shell reads them
    // by vertex, as `copyTex` does).
    let texcoord = match usize::try_from(a.flex_texcoordadr[f]) {
        Ok(t) => {
            let mut uv = vec![[0.0f32; 2]; nv];
            if d == 2 {
                for (e, corner) in elements.iter().enumerate() {
                    let tex = corners(&a.flex_elemtexcoord, a.flex_elemdataadr[f], e, d + 1);
                    for (&v, &tc) in corner.iter().zip(&tex) {
                        uv[v as usize] = fixed::<2, f32>(&a.flex_texcoord, t + tc as usize);
                    }
                }
            } else {
                (0..nv).for_each(|k| uv[k] = fixed::<2, f32>(&a.flex_texcoord, t + k));
            }
            (0..layers).flat_map(|_| uv.iter().copied()).collect()
        }
        Err(_) => Vec::new(),
    };
    Skin {
        name: name.to_string(),
        rgba: fixed::<4, f32>(&a.flex_rgba, f),
        matid: a.flex_matid[f],
        group: a.flex_group[f],
        inflate: a.flex_radius[f] as f32,
        vert: (0..layers).flat_map(|_| local.iter().copied()).collect(),
        texcoord,
        face,
        bones,
        flex: Some(f),
        sides,
        flat: a.flex_flatskin[f],
    }
}

/// Whether glint draws a flex of dimension `dim` and interpolation `interp` (see
/// [`flexes`]).
fn drawn_flex(dim: i32, interp: i32) -> bool {
    matches!(dim, 2 | 3) && interp == 0
}

/// What MuJoCo's renderer draws with its default options and glint's cameras do not, one
/// entry per kind with the first few names.
fn undrawn(a: &ModelArrays) -> Vec<String> {
    let listed = |what: &str, ids: Vec<usize>, adr: &[i32]| -> Option<String> {
        if ids.is_empty() {
            return None;
        }
        let shown: Vec<String> = ids
            .iter()
            .take(3)
            .map(|&i| Some(a.name_at(adr[i])).filter(|n| !n.is_empty()).unwrap_or_else(|| format!("#{i}")))
            .collect();
        let more = if ids.len() > 3 { ", ..." } else { "" };
        Some(format!("{} {what} ({}{more})", ids.len(), shown.join(", ")))
    };
    let flexes = (0..a.counts.nflex).filter(|&f| !drawn_flex(a.flex_dim[f], a.flex_interp[f])).collect();
    let rangefinders = (0..a.counts.nsensor).filter(|&s| a.sensor_type[s] == SENS_RANGEFINDER).collect();
    [
        listed("flexes (1-D or interpolated)", flexes, &a.name_flexadr),
        listed("rangefinder rays", rangefinders, &a.name_sensoradr),
    ]
    .into_iter()
    .flatten()
    .collect()
}
