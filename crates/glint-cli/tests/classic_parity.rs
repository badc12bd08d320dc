//! What MuJoCo's classic renderer draws, glint's cameras draw: small scenes that each isolate
//! one effect (mesh texture coordinates, an sRGB texture, coincident geoms, a transparent
//! geom, a geom of alpha 0, a site), rendered by glint and by MuJoCo 3.17's own renderer
//! (`mujoco.Renderer` under OSMesa, as `glint bench render` draws it), compared by SSIM and
//! mean luminance. Needs the `mujoco` package (`make pydeps`) and Mesa's OSMesa (`make
//! osmesa`), as `make test` sets up.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use glint_lights::{luminance, ssim};
use glint_sim::{CameraOptions, SimOptions, Simulation, Warning};

const SIDE: usize = 128;

fn root() -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "..", ".."].iter().collect()
}

/// The scene `body` (worldbody elements) with `assets`, a floor, a light without shadows
/// and the camera `cam`, written to a file of its own.
fn scene(tag: &str, assets: &str, body: &str) -> PathBuf {
    scene_with(tag, assets, body, "")
}

/// [`scene`] with `after` (MJCF sections) after the world body.
fn scene_with(tag: &str, assets: &str, body: &str, after: &str) -> PathBuf {
    scene_floor(tag, "", assets, body, after)
}

/// [`scene_with`] with `floor` (attributes) on the floor's material.
fn scene_floor(tag: &str, floor: &str, assets: &str, body: &str, after: &str) -> PathBuf {
    let xml = format!(
        r#"<mujoco>
  <asset>
    <texture name="grid" type="2d" builtin="checker" rgb1="0.3 0.35 0.4" rgb2="0.25 0.25 0.3" width="64" height="64"/>
    <material name="floor" texture="grid" texrepeat="4 4" {floor}/>
    {assets}
  </asset>
  <worldbody>
    <light pos="0.5 -1 3" dir="-0.15 0.3 -1" castshadow="false"/>
    <camera name="cam" pos="0 -2.4 1.6" xyaxes="1 0 0 0 0.55 0.835"/>
    <geom type="plane" size="3 3 0.1" material="floor"/>
    {body}
  </worldbody>
  {after}
</mujoco>"#
    );
    write_scene(tag, &xml)
}

/// Writes `xml` as `scene.xml` in a temporary folder of its own for `tag`.
fn write_scene(tag: &str, xml: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-classic-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("scene.xml");
    std::fs::write(&path, xml).unwrap();
    path
}

/// glint's RGB of camera `cam`, and the warnings the scene gave.
fn glint(path: &Path) -> (Vec<u8>, Vec<Warning>) {
    let mut sim = Simulation::from_xml_file(path, Vec::new(), SimOptions::default()).unwrap();
    let cam = sim.camera_index("cam").unwrap();
    sim.set_cameras(vec![CameraOptions { resolution: Some((SIDE, SIDE)), ..CameraOptions::new(cam) }]).unwrap();
    let frames = sim.render().unwrap();
    (frames.rgb, sim.take_warnings())
}

/// MuJoCo's classic renderer's RGB of camera `cam`.
fn mujoco(path: &Path) -> Vec<u8> {
    let root = root();
    let python =
        std::env::var_os("GLINT_PYTHON").map(PathBuf::from).unwrap_or_else(|| root.join(".deps/venv/bin/python"));
    let osmesa = std::fs::read_dir(root.join(".deps/osmesa/usr/lib"))
        .ok()
        .and_then(|mut d| d.next())
        .and_then(|e| e.ok())
        .map(|e| e.path())
        .expect("Mesa's OSMesa is not in .deps/osmesa: run `make osmesa`");
    let out = path.with_extension("rgb");
    let job = serde_json::json!([{ "mjcf": path, "camera": "cam", "width": SIDE, "height": SIDE, "out": out }]);
    let script = std::fs::read_to_string(root.join("crates/glint-cli/src/mujoco_render.py")).unwrap();
    let mut library_path = format!("{}:{}", root.join(".deps/mujoco/lib").display(), osmesa.display());
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        library_path = format!("{library_path}:{}", old.to_string_lossy());
    }
    let mut child = Command::new(&python)
        .arg("-c")
        .arg(script)
        .env("MUJOCO_GL", "osmesa")
        .env("LD_LIBRARY_PATH", library_path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run '{}' (make pydeps): {e}", python.display()));
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), job.to_string().as_bytes()).unwrap();
    let done = child.wait_with_output().unwrap();
    assert!(done.status.success(), "MuJoCo's renderer failed: {}", String::from_utf8_lossy(&done.stderr));
    std::fs::read(out).unwrap()
}

fn mean_luma(rgb: &[u8]) -> f64 {
    rgb.chunks_exact(3).map(|p| luminance([p[0], p[1], p[2]])).sum::<f64>() / (rgb.len() / 3) as f64
}

/// Renders `path` both ways and checks SSIM ≥ 0.95 and mean luma within 3 %; returns
/// glint's image and warnings.
fn compare(tag: &str, path: &Path) -> (Vec<u8>, Vec<Warning>) {
    let (ours, warnings) = glint(path);
    let theirs = mujoco(path);
    let s = ssim(&ours, &theirs, SIDE, SIDE).unwrap();
    let (a, b) = (mean_luma(&ours), mean_luma(&theirs));
    let diff = (a - b) / b;
    eprintln!("{tag}: SSIM {s:.4}, mean luma glint {a:.1} MuJoCo {b:.1} ({:+.2} %)", 100.0 * diff);
    assert!(s >= 0.95 && diff.abs() <= 0.03, "{tag}: SSIM {s:.4}, luma {a:.1} against MuJoCo's {b:.1}");
    (ours, warnings)
}

/// [`compare`], and SSIM at least `bound` (a test's own, tighter than the shared 0.95).
fn compare_strict(tag: &str, path: &Path, bound: f64) -> (Vec<u8>, Vec<Warning>) {
    let (ours, warnings) = compare(tag, path);
    let s = ssim(&ours, &mujoco(path), SIDE, SIDE).unwrap();
    assert!(s >= bound, "{tag}: SSIM {s:.4} below {bound}");
    (ours, warnings)
}

/// The pixel at (column, row) of `rgb`.
fn at(rgb: &[u8], (c, r): (usize, usize)) -> [u8; 3] {
    let i = (r * SIDE + c) * 3;
    [rgb[i], rgb[i + 1], rgb[i + 2]]
}

/// A box mesh of half-size `h` with four vertices per side and texture coordinates that
/// map the checker once per side, turned so that u runs 0 to `u` across each side.
fn cube_mesh(h: f64, u: f64) -> String {
    let sides: [([f64; 3], [f64; 3], [f64; 3]); 6] = [
        ([0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
        ([0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]),
        ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]),
        ([-1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]),
        ([0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]),
        ([0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]),
    ];
    let (mut vert, mut tex, mut face) = (Vec::new(), Vec::new(), Vec::new());
    for (k, (n, a, b)) in sides.iter().enumerate() {
        for (i, (sa, sb)) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)].iter().enumerate() {
            let p: Vec<String> = (0..3).map(|j| format!("{}", h * (n[j] + sa * a[j] + sb * b[j]))).collect();
            vert.push(p.join(" "));
            tex.push(format!("{} {}", if i == 1 || i == 2 { u } else { 0.0 }, if i >= 2 { 1.0 } else { 0.0 }));
        }
        let o = 4 * k;
        face.push(format!("{o} {} {} {o} {} {}", o + 1, o + 2, o + 2, o + 3));
    }
    format!(r#"vertex="{}" texcoord="{}" face="{}""#, vert.join("  "), tex.join("  "), face.join("  "))
}

#[test]
fn mesh_texture_coordinates_map_as_mujoco_maps_them() {
    let assets = format!(
        r#"<texture name="stripes" type="2d" builtin="checker" rgb1="0.9 0.2 0.1" rgb2="0.1 0.3 0.9" width="8" height="512"/>
           <material name="painted" texture="stripes"/>
           <mesh name="crate" {}/>"#,
        cube_mesh(0.4, 3.0)
    );
    compare(
        "texcoords",
        &scene(
            "texcoords",
            &assets,
            r#"<geom type="mesh" mesh="crate" material="painted" pos="0 0 0.4" euler="0 0 30"/>"#,
        ),
    );
}

#[test]
fn a_cube_texture_on_a_mesh_with_texture_coordinates_is_not_drawn() {
    // MuJoCo binds such a mesh's texture to the 2-D target, where a cube map cannot go: with
    // no other 2-D texture bound before it (none in the model), the mesh shows its
    // material's colour (dm_control's model_with_assets.xml, cube.msh).
    let scene = |tag: &str, texture: &str| {
        let xml = format!(
            r#"<mujoco>
  <asset>
    <texture name="blocks" type="cube" builtin="checker" rgb1="0.9 0.2 0.1" rgb2="0.1 0.3 0.9" width="32" height="32"/>
    <material name="painted" {texture} rgba="0.8 0.8 0.6 1"/>
    <mesh name="crate" {}/>
  </asset>
  <worldbody>
    <light pos="0.5 -1 3" dir="-0.15 0.3 -1" castshadow="false"/>
    <camera name="cam" pos="0 -2.4 1.6" xyaxes="1 0 0 0 0.55 0.835"/>
    <geom type="plane" size="3 3 0.1" rgba="0.3 0.35 0.4 1"/>
    <geom type="mesh" mesh="crate" material="painted" pos="0 0 0.4" euler="0 0 30"/>
  </worldbody>
</mujoco>"#,
            cube_mesh(0.4, 1.0)
        );
        write_scene(tag, &xml)
    };
    let (ours, _) = compare("cube-texcoords", &scene("cube-texcoords", r#"texture="blocks""#));
    let plain = glint(&scene("cube-plain", "")).0;
    assert_eq!(ours, plain, "the mesh is drawn in its material's colour alone");
}

#[test]
fn srgb_textures_are_linearised() {
    let assets = r#"<texture name="tile" type="2d" builtin="checker" rgb1="0.8 0.6 0.3" rgb2="0.4 0.7 0.5" width="64" height="64" colorspace="sRGB"/>
                    <material name="tiled" texture="tile" texrepeat="2 2"/>"#;
    let (ours, _) = compare(
        "srgb",
        &scene("srgb", assets, r#"<geom type="box" size="0.5 0.5 0.4" pos="0 0 0.4" material="tiled"/>"#),
    );
    // Linearised, the texture is darker than its bytes say: no pixel is as bright as rgb1 lit
    // straight on would be without the decode.
    assert!(ours.chunks_exact(3).all(|p| p[0] < 235), "an sRGB texel read as linear");
}

#[test]
fn of_coincident_geoms_the_one_drawn_later_shows() {
    // robosuite's pattern: a collision geom (group 0) and a visual geom (group 1) in one place.
    let body = r#"<body pos="0 0 0.3">
        <geom name="collision" type="box" size="0.5 0.3 0.3" rgba="0.8 0.1 0.1 1" group="0"/>
        <geom name="visual" type="box" size="0.5 0.3 0.3" rgba="0.1 0.2 0.8 1" group="1"/>
      </body>"#;
    let path = scene("coincident", "", body);
    let (ours, _) = compare("coincident", &path);
    let centre = at(&ours, (SIDE / 2, SIDE / 2));
    assert!(centre[2] > centre[0], "the visual (blue) geom shows: {centre:?}");
    // With the visual geom's group off, the collision geom shows.
    let mut sim = Simulation::from_xml_file(&path, Vec::new(), SimOptions::default()).unwrap();
    let cam = sim.camera_index("cam").unwrap();
    let groups = [true, false, false, false, false, false];
    let options =
        CameraOptions { resolution: Some((SIDE, SIDE)), enabled_geom_groups: groups, ..CameraOptions::new(cam) };
    sim.set_cameras(vec![options]).unwrap();
    let centre = at(&sim.render().unwrap().rgb, (SIDE / 2, SIDE / 2));
    assert!(centre[0] > centre[2], "the collision (red) geom shows: {centre:?}");
    // Not a twin: a thinner visual box whose front face is the collision box's.
    let body = r#"<body pos="0 0 0.3">
        <geom name="collision" type="box" size="0.5 0.3 0.3" rgba="0.8 0.1 0.1 1" group="0"/>
        <geom name="visual" type="box" size="0.5 0.15 0.3" pos="0 -0.15 0" rgba="0.1 0.2 0.8 1" group="1"/>
      </body>"#;
    let (ours, _) = compare("coincident-face", &scene("coincident-face", "", body));
    let centre = at(&ours, (SIDE / 2, SIDE / 2));
    assert!(centre[2] > centre[0], "the visual (blue) face shows: {centre:?}");
}

#[test]
fn transparent_geoms_blend_over_what_is_behind() {
    let body = r#"<geom type="box" size="0.3 0.3 0.3" pos="0 0.4 0.3" rgba="0.9 0.8 0.1 1"/>
      <geom type="sphere" size="0.35" pos="0 -0.3 0.4" rgba="0.1 0.4 0.9 0.4"/>"#;
    compare("transparent", &scene("transparent", "", body));
}

#[test]
fn geoms_of_alpha_zero_are_not_drawn() {
    // The fruit fly's wings: alpha 0 in the geom's own colour over a material that has alpha.
    let assets = r#"<material name="membrane" rgba="0.2 0.2 0.2 1"/>"#;
    let body = r#"<geom type="box" size="0.3 0.3 0.3" pos="0 0.3 0.3" rgba="0.9 0.8 0.1 1"/>
      <geom name="wing" type="box" size="0.6 0.02 0.5" pos="0 -0.4 0.5" material="membrane" rgba="0 0 0 0"/>"#;
    let path = scene("alpha0", assets, body);
    let (ours, _) = compare("alpha0", &path);
    // glint's depth and segmentation skip it too.
    let mut sim = Simulation::from_xml_file(&path, Vec::new(), SimOptions::default()).unwrap();
    let cam = sim.camera_index("cam").unwrap();
    sim.set_cameras(vec![CameraOptions { resolution: Some((SIDE, SIDE)), ..CameraOptions::new(cam) }]).unwrap();
    let frames = sim.render().unwrap();
    let wing = sim.scene().geom_name.iter().position(|n| n == "wing").unwrap() as i32;
    assert!(!frames.seg.contains(&wing), "the wing is in the segmentation");
    let centre = at(&ours, (SIDE / 2, SIDE / 2));
    assert!(centre[0] > 100, "the box behind the wing shows: {centre:?}");
}

#[test]
fn sites_of_the_default_groups_are_drawn() {
    let body = r#"<body pos="0 0 0.3">
        <geom type="box" size="0.3 0.3 0.3" rgba="0.6 0.6 0.6 1"/>
        <site name="marker" type="sphere" size="0.2" pos="0 -0.4 0.2" rgba="0.9 0.1 0.1 1"/>
        <site name="beam" type="capsule" size="0.05 0.4" pos="0.5 -0.3 0.1" euler="0 90 0" rgba="0.1 0.9 0.2 0.5"/>
        <site name="hidden" type="box" size="0.3 0.3 0.3" pos="-0.7 0 0" group="4" rgba="1 1 1 1"/>
      </body>"#;
    compare("sites", &scene("sites", "", body));
}

#[test]
fn a_reflective_floor_mirrors_the_scene() {
    let body = r#"<geom type="box" size="0.25 0.25 0.25" pos="0.1 0.5 0.6" rgba="0.9 0.8 0.1 1"/>
      <geom type="sphere" size="0.25" pos="-0.5 0 0.4" rgba="0.1 0.4 0.9 1"/>
      <geom type="capsule" size="0.1 0.3" pos="0.6 -0.3 0.5" euler="0 60 0" rgba="0.9 0.2 0.2 0.5"/>"#;
    let mirror = scene_floor("mirror", r#"reflectance="0.5""#, "", body, "");
    let (ours, _) = compare("mirror", &mirror);
    // The reflection is more than the comparison's tolerance: without it the image is darker.
    let (dull, _) = glint(&scene_floor("dull", "", "", body, ""));
    let (a, b) = (mean_luma(&ours), mean_luma(&dull));
    assert!(a > 1.03 * b, "the reflection adds {a:.1} against {b:.1}");
}

#[test]
fn a_reflective_box_mirrors_on_its_top_face() {
    let assets = r#"<material name="top" rgba="0.3 0.3 0.35 1" reflectance="0.6"/>"#;
    let body = r#"<geom type="box" size="0.7 0.5 0.15" pos="0 0.2 0.15" material="top"/>
      <geom type="box" size="0.15 0.15 0.15" pos="0 0.3 0.65" rgba="0.9 0.8 0.1 1"/>
      <geom type="sphere" size="0.15" pos="-0.4 0 0.5" rgba="0.1 0.4 0.9 1"/>"#;
    compare("mirror-box", &scene("mirror-box", assets, body));
}

#[test]
fn a_finite_plane_maps_its_texture_from_corner_to_corner() {
    // dm_control's arenas: `makePlane`'s explicit coordinates run 0 to `texrepeat × size`
    // across a finite plane, so this board shows one square of the checker, not four.
    let assets = r#"<texture name="board" type="2d" builtin="checker" rgb1="0.9 0.9 0.9" rgb2="0.1 0.1 0.1" width="64" height="64"/>
      <material name="board" texture="board" texrepeat="1 1" texuniform="true"/>"#;
    let body = r#"<geom type="plane" size="0.4 0.3 0.1" pos="0 0 0.01" material="board"/>"#;
    compare("board", &scene("board", assets, body));
}

#[test]
fn the_skybox_is_filtered_as_a_mipmapped_cube_map() {
    // dm_control's starry sky: texel-sized marks that MuJoCo's trilinear lookup dims.
    let assets = r#"<texture name="sky" type="skybox" builtin="gradient" rgb1="0.4 0.6 0.8" rgb2="0 0 0" width="800" height="800" mark="random" markrgb="1 1 1"/>"#;
    let body = r#"<geom type="sphere" size="0.2" pos="0 0 0.2" rgba="0.8 0.3 0.2 1"/>"#;
    let path = scene_with("sky", assets, body, "").with_file_name("scene.xml");
    let xml = std::fs::read_to_string(&path)
        .unwrap()
        .replace(r#"pos="0 -2.4 1.6" xyaxes="1 0 0 0 0.55 0.835""#, r#"pos="0 -2.4 0.6" xyaxes="1 0 0 0 0.2 1""#);
    std::fs::write(&path, xml).unwrap();
    compare("sky", &path);
}

#[test]
fn a_skin_is_drawn_posed_by_its_bodies() {
    // A box of skin between two bodies; the upper one stands 0.15 m off its bind pose, so
    // the box leans as it follows.
    let body = r#"<body name="low" pos="0 0 0.2"><geom type="sphere" size="0.05" rgba="0.2 0.2 0.2 1"/></body>
      <body name="high" pos="0.15 0 0.8"><geom type="sphere" size="0.05" rgba="0.2 0.2 0.2 1"/></body>"#;
    let (h, z0, z1) = (0.25, 0.2, 0.8);
    let corners = [(-h, -h), (h, -h), (h, h), (-h, h)];
    let vertex: Vec<String> =
        [z0, z1].iter().flat_map(|z| corners.iter().map(move |(x, y)| format!("{x} {y} {z}"))).collect();
    let faces = "0 2 1 0 3 2 4 5 6 4 6 7 0 1 5 0 5 4 1 2 6 1 6 5 2 3 7 2 7 6 3 0 4 3 4 7";
    let skin = format!(
        r#"<deformable><skin name="box" rgba="0.8 0.5 0.3 1" vertex="{}" face="{faces}">
          <bone body="low" bindpos="0 0 0.2" bindquat="1 0 0 0" vertid="0 1 2 3" vertweight="1 1 1 1"/>
          <bone body="high" bindpos="0 0 0.8" bindquat="1 0 0 0" vertid="4 5 6 7" vertweight="1 1 1 1"/>
        </skin></deformable>"#,
        vertex.join(" ")
    );
    let path = scene_with("skin", "", body, &skin);
    let (_, warnings) = compare("skin", &path);
    assert!(!warnings.iter().any(|w| w.to_string().contains("skin")), "{warnings:?}");
    // Depth and segmentation see it too, numbered after the geoms, where MuJoCo draws it:
    // its pixels are those where the two renders differ from the scene without it.
    let mut sim = Simulation::from_xml_file(&path, Vec::new(), SimOptions::default()).unwrap();
    let cam = sim.camera_index("cam").unwrap();
    sim.set_cameras(vec![CameraOptions { resolution: Some((SIDE, SIDE)), ..CameraOptions::new(cam) }]).unwrap();
    let frames = sim.render().unwrap();
    let ngeom = sim.scene().geom_name.len() as i32;
    let skin: Vec<usize> = (0..SIDE * SIDE).filter(|&p| frames.seg[p] == ngeom).collect();
    assert!(skin.len() > 500, "{} pixels of skin", skin.len());
    assert!(skin.iter().all(|&p| frames.depth[p] > 0.0));
    let bare = mujoco(&scene_with("bare", "", body, ""));
    let theirs = mujoco(&path);
    let changed = (0..SIDE * SIDE).filter(|&p| at(&bare, (p % SIDE, p / SIDE)) != at(&theirs, (p % SIDE, p / SIDE)));
    let outside = changed.filter(|p| frames.seg[*p] != ngeom).count();
    // The skin's shadow and anti-aliased edge change pixels beside it.
    assert!(outside < skin.len() / 2, "{outside} pixels MuJoCo changed are not skin in glint's segmentation");
}

/// The tube's SSIM bound: lit per pixel by its face normals it scores 0.952, per vertex 0.978.
const TUBE_SSIM: f64 = 0.97;

/// An open tube of `sides` faces (radius `r`, height `h`, standing on the origin), whose
/// vertices MuJoCo gives normals averaged over the faces around them.
fn tube_mesh(sides: usize, r: f64, h: f64) -> String {
    let mut vert = Vec::new();
    for z in [0.0, h] {
        for k in 0..sides {
            let a = std::f64::consts::TAU * k as f64 / sides as f64;
            vert.push(format!("{} {} {z}", r * a.cos(), r * a.sin()));
        }
    }
    let face: Vec<String> = (0..sides)
        .map(|k| {
            let (a, b) = (k, (k + 1) % sides);
            format!("{a} {b} {} {a} {} {}", b + sides, b + sides, a + sides)
        })
        .collect();
    format!(r#"vertex="{}" face="{}""#, vert.join("  "), face.join("  "))
}

#[test]
fn meshes_are_lit_at_their_vertices_as_the_fixed_pipeline_lights_them() {
    // A 16-sided tube: lit per pixel by its face normals it shows 16 flat bands; MuJoCo
    // lights each corner by its averaged normal and blends across the face.
    let assets = format!(
        r#"<mesh name="tube" inertia="shell" {}/><material name="shiny" rgba="0.8 0.75 0.7 1" specular="1" shininess="0.3"/>"#,
        tube_mesh(12, 0.35, 0.8)
    );
    let body = r#"<geom type="mesh" mesh="tube" pos="0 0.2 0" material="shiny"/>"#;
    // Closer than the comparison's bound: flat bands score below it.
    compare_strict("tube", &scene("tube", &assets, body), TUBE_SSIM);
}

/// A fence of slanted bright slats, two or three pixels wide, over the floor: most of their
/// pixels are edges.
fn slats() -> String {
    (0..12)
        .map(|k| {
            let x = -0.8 + 0.145 * k as f64;
            let tilt = 5 + 3 * k;
            format!(r#"<geom type="box" size="0.02 0.02 0.5" pos="{x} 0.1 0.5" euler="0 {tilt} 0" rgba="1 1 0.9 1"/>"#)
        })
        .collect()
}

#[test]
fn edges_are_multisampled_as_mujocos_offscreen_buffer_is() {
    // MuJoCo's default offscreen buffer has 4 samples a pixel; glint averages OpenGL's 4x
    // pattern where objects meet: 0.999 against 0.974 drawn at pixel centres alone.
    let (ours, _) = compare("rods", &scene("rods", "", &slats()));
    let theirs = mujoco(&scene("rods", "", &slats()));
    let s = ssim(&ours, &theirs, SIDE, SIDE).unwrap();
    assert!(s >= 0.98, "SSIM {s:.4}");
    // offsamples="0": neither multisamples.
    let plain = scene_with("rods-plain", "", &slats(), r#"<visual><quality offsamples="0"/></visual>"#);
    let (ours, _) = glint(&plain);
    let s = ssim(&ours, &mujoco(&plain), SIDE, SIDE).unwrap();
    assert!(s >= 0.98, "without multisampling: SSIM {s:.4}");
}

#[test]
fn nothing_is_drawn_beyond_the_far_clipping_distance() {
    // An infinite floor under a camera looking to the horizon, MuJoCo's far plane pulled in
    // to 3 × the model's extent: the floor ends there, the background shows beyond.
    let body = r#"<geom type="plane" size="0 0 1" pos="0 0 0.001" rgba="0.6 0.6 0.55 1"/>
      <geom type="sphere" size="0.2" pos="0 0.5 0.2" rgba="0.8 0.3 0.2 1"/>"#;
    let path = scene_with("far", "", body, r#"<visual><map zfar="3"/></visual>"#);
    compare("far", &path);
}

#[test]
fn a_texture_of_odd_size_keeps_its_thin_lines_in_the_distance() {
    // A 255-texel tile texture with 1-texel edge lines (robosuite's floors are 255 × 255):
    // Mesa's mipmaps of an odd size keep such lines bright where a box filter fades them.
    let assets = r#"<texture name="tile" type="2d" builtin="checker" mark="edge" markrgb="1 1 1"
        rgb1="0.45 0.35 0.25" rgb2="0.4 0.32 0.24" width="255" height="255"/>
      <material name="tiles" texture="tile" texrepeat="2 2" texuniform="true"/>"#;
    let body = r#"<geom type="plane" size="3 3 0.1" pos="0 0 0.002" material="tiles"/>"#;
    compare_strict("odd-texture", &scene_with("odd-texture", assets, body, ""), ODD_TEXTURE_SSIM);
}

/// The odd-texture bound: with Mesa's mip generation glint scores 0.998, with box-filtered
/// mipmaps 0.953.
const ODD_TEXTURE_SSIM: f64 = 0.98;

#[test]
fn cloth_and_solid_flexes_are_drawn_as_mujoco_draws_them() {
    // A cloth (two layers either side of its elements, joined at the border) tilted toward
    // the camera, and a solid (its shell), as `mjv_updateActiveFlex` builds them.
    let body = r#"<body name="holder" pos="-0.5 0 0.6" euler="30 0 20">
        <flexcomp name="cloth" type="grid" count="8 8 1" spacing=".09 .09 .09" radius=".01" rgba=".2 .5 .9 1" dim="2">
          <edge equality="true"/></flexcomp></body>
      <flexcomp name="jelly" type="grid" count="4 4 4" spacing=".1 .1 .1" pos="0.5 0 0.3" radius=".01" rgba=".9 .6 .2 1" dim="3">
        <edge equality="true"/></flexcomp>"#;
    let path = scene_with("flex", "", body, "");
    let (_, warnings) = glint(&path);
    assert!(!warnings.iter().any(|w| matches!(w, Warning::Undrawn { .. })), "{warnings:?}");
    compare("flex", &path);
}

#[test]
fn the_horizon_of_an_infinite_floor_is_hazed_and_cut_by_the_sky_as_mujoco_draws_it() {
    // A camera looking level over an infinite checker floor under a gradient skybox: the
    // floor ends at the sky cylinder, and the haze band lies over the horizon.
    let xml = r#"<mujoco>
  <statistic extent="2"/>
  <asset>
    <texture type="skybox" builtin="gradient" rgb1="0.3 0.5 0.7" rgb2="0 0 0" width="64" height="384"/>
    <texture name="grid" type="2d" builtin="checker" rgb1="0.1 0.2 0.3" rgb2="0.2 0.3 0.4" width="64" height="64"/>
    <material name="floor" texture="grid" texrepeat="1 1" texuniform="true"/>
  </asset>
  <worldbody>
    <light pos="0 0 3" dir="0 0.3 -1" directional="true" castshadow="false"/>
    <camera name="cam" pos="0 -2 0.8" xyaxes="1 0 0 0 0.1 1"/>
    <geom type="plane" size="0 0 0.05" material="floor"/>
    <geom type="sphere" size="0.3" pos="0 1 0.3" rgba="0.8 0.5 0.3 1"/>
  </worldbody>
</mujoco>"#;
    compare_strict("haze", &write_scene("haze", xml), HAZE_SSIM);
}

/// The haze scene's bound (glint scores 0.998; without the haze and the sky's cut 0.912).
const HAZE_SSIM: f64 = 0.98;

#[test]
fn spatial_tendons_are_drawn_as_mujoco_draws_them() {
    // A tendon through sites around a wrapping cylinder (thinner inside it), a taut one
    // coloured by its material, and a slack string under gravity (a catenary).
    let assets = r#"<material name="red" rgba="0.9 0.2 0.2 1"/>"#;
    let body = r#"<site name="a" pos="-0.9 0 0.9"/><site name="b" pos="0.9 0 0.9"/>
      <body name="wheel" pos="0 0 0.6"><geom name="drum" type="cylinder" size="0.15 0.2" euler="90 0 0"
        rgba="0.3 0.3 0.3 1"/><site name="side" pos="0 0 0.35"/></body>
      <site name="c" pos="-0.8 0.3 0.3"/><site name="d" pos="0.8 0.3 0.3"/>
      <site name="e" pos="-0.7 -0.3 1.2"/><site name="f" pos="0.7 -0.3 1.2"/>"#;
    let tendons = r#"<tendon>
        <spatial name="belt" width="0.02" rgba="0.2 0.7 0.3 1"><site site="a"/><geom geom="drum" sidesite="side"/>
          <site site="b"/></spatial>
        <spatial name="taut" width="0.015" material="red"><site site="c"/><site site="d"/></spatial>
        <spatial name="string" width="0.01" limited="true" range="0 1.8" rgba="0.9 0.8 0.2 1">
          <site site="e"/><site site="f"/></spatial></tendon>"#;
    let path = scene_with("tendons", assets, body, tendons);
    let (ours, warnings) = compare_strict("tendons", &path, TENDON_SSIM);
    assert!(!warnings.iter().any(|w| matches!(w, Warning::Undrawn { .. })), "{warnings:?}");
    let bare = glint(&scene_with("no-tendons", assets, body, "")).0;
    let drawn =
        (0..SIDE * SIDE).filter(|&p| at(&ours, (p % SIDE, p / SIDE)) != at(&bare, (p % SIDE, p / SIDE))).count();
    assert!(drawn > 300, "the tendons change {drawn} pixels of glint's image");
}

/// The tendon scene's bound (glint scores 0.994; without the tendons 0.828).
const TENDON_SSIM: f64 = 0.97;

#[test]
fn what_the_cameras_cannot_draw_is_named_once() {
    let body = r#"<body name="a" pos="0 0 0.5"><freejoint/><geom type="sphere" size="0.1"/><site name="s1"/></body>
      <body name="b" pos="0.5 0 0.5"><freejoint/><geom type="sphere" size="0.1"/><site name="s2"/></body>"#;
    let cable =
        r#"<flexcomp name="cable" type="grid" count="6 1 1" spacing=".1 .1 .1" pos="0 0.5 0.3" radius=".01" dim="1"/>"#;
    let sensor = r#"<sensor><rangefinder name="range" site="s1"/></sensor>"#;
    let path = scene_with("undrawn", "", &format!("{body}{cable}"), sensor);
    let (_, warnings) = glint(&path);
    let undrawn: Vec<_> = warnings.iter().filter(|w| matches!(w, Warning::Undrawn { .. })).collect();
    assert_eq!(undrawn.len(), 1, "{warnings:?}");
    let text = undrawn[0].to_string();
    assert!(text.contains("1 rangefinder rays (range)"), "{text}");
    assert!(text.contains("1 flexes (1-D or interpolated) (cable)"), "{text}");
    // A scene without any gives none.
    let (_, clean) = glint(&scene("drawn", "", r#"<geom type="sphere" size="0.2" pos="0 0 0.2"/>"#));
    assert!(!clean.iter().any(|w| matches!(w, Warning::Undrawn { .. })), "{clean:?}");
}
