//! Cameras against MuJoCo: every pixel's depth and segmentation equal `mj_ray` along that
//! pixel's ray (same geom, distance within 1e-5 relative) on the example scenes and on a
//! random scene with every geom type; batched worlds render as single worlds do; bad camera
//! requests are errors.

use std::path::{Path, PathBuf};

use glint_core::RayFilter;
use glint_mujoco::{MujocoRays, WorldBatch};
use glint_sim::{CameraOptions, SimOptions, Simulation};

fn example(parts: &[&str]) -> PathBuf {
    let mut p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples"].iter().collect();
    p.extend(parts);
    p
}

fn sim_of(path: &Path, nworld: usize) -> Simulation {
    Simulation::from_xml_file(path, Vec::new(), SimOptions { nworld, ..SimOptions::default() }).unwrap()
}

/// Geom `g`'s alpha as MuJoCo's renderer draws it: its material's when its colour is the
/// default, else its own.
fn renderer_alpha(scene: &glint_core::Scene, g: usize) -> f32 {
    match usize::try_from(scene.geom_matid[g]) {
        Ok(m) if scene.geom_rgba[g] == [0.5, 0.5, 0.5, 1.0] => scene.mat_rgba[m][3],
        _ => scene.geom_rgba[g][3],
    }
}

/// Renders camera `name` of the scene at `path` at `w` × `h` and checks every pixel against
/// `mj_ray` from the camera along the pixel's ray (depth passes transparent geoms, as in
/// MuJoCo's renderer).
fn check_against_mj_ray(path: &Path, name: &str, (w, h): (usize, usize)) {
    let mut sim = sim_of(path, 1);
    let cam = sim.camera_index(name).unwrap();
    sim.set_cameras(vec![CameraOptions { resolution: Some((w, h)), ..CameraOptions::new(cam) }]).unwrap();
    let frames = sim.render().unwrap();
    let (model, options) = &frames.layout.cameras[0];
    let reference = WorldBatch::new(sim.model(), 1).unwrap();
    let poses = sim.poses();
    let (pos, mat) = (poses.cam_xpos[cam], poses.cam_xmat[cam]);
    let filter = RayFilter { geomgroup: Some(options.enabled_geom_groups), flg_static: true, exclude_tree: -1 };
    let (mut hits, mut worst, mut ties) = (0, 0.0f64, 0);
    for row in 0..h {
        for col in 0..w {
            let (o, d) = model.pixel_ray(col, row);
            let mj = reference.mj_ray(0, pos + mat * o, mat * d, &filter, -1);
            let i = row * w + col;
            let where_ = format!("{}: pixel ({col}, {row})", path.display());
            let seg = frames.seg[i];
            if seg != mj.geomid && mj.geomid >= 0 && seg > mj.geomid {
                // Coincident surfaces (the showroom's pool rim and water share their top): MuJoCo's
                // renderer shows the geom drawn later, `mj_ray` either. Same body, same depth.
                let body = &sim.scene().geom_bodyid;
                assert_eq!(
                    body[seg as usize], body[mj.geomid as usize],
                    "{where_}: segmentation {seg} vs {}",
                    mj.geomid
                );
                ties += 1;
            } else {
                assert_eq!(seg, mj.geomid, "{where_}: segmentation");
            }
            if mj.geomid < 0 {
                assert_eq!(frames.depth[i], 0.0, "{where_}: no hit reads 0");
                continue;
            }
            hits += 1;
            if renderer_alpha(sim.scene(), mj.geomid as usize) < 0.995 {
                // A transparent geom: in MuJoCo's renderer it writes no depth, so the depth is
                // of what lies behind it.
                assert!(f64::from(frames.depth[i]) > mj.dist, "{where_}: depth stops at a transparent geom");
                continue;
            }
            let err = (f64::from(frames.depth[i]) - mj.dist).abs() / mj.dist;
            worst = worst.max(err);
            assert!(err <= 1e-5, "{where_}: depth {} against mj_ray {}", frames.depth[i], mj.dist);
        }
    }
    assert!(hits > w * h / 4, "{}: the camera sees little ({hits} hits)", path.display());
    assert!(ties <= hits / 50, "{}: {ties} coincident pixels of {hits}", path.display());
    eprintln!(
        "{}: {hits} hits ({ties} on coincident surfaces), worst relative depth difference {worst:.2e}",
        path.display()
    );
}

#[test]
fn depth_and_segmentation_equal_mj_ray_on_the_example_scenes() {
    for (scene, camera) in [
        (example(&["primitives.xml"]), "overview"),
        (example(&["crowded.xml"]), "overview"),
        (example(&["meshes.xml"]), "overview"),
        (example(&["showroom", "showroom.xml"]), "overview"),
        (example(&["lights", "scene.xml"]), "view"),
    ] {
        check_against_mj_ray(&scene, camera, (64, 48));
    }
}

/// A scene of every geom type MuJoCo ray-casts (plane, height field, sphere, capsule,
/// ellipsoid, cylinder, box, mesh) at seeded random poses, seen by one camera.
fn every_geom_type_scene(seed: u64) -> String {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut rand = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut geoms = String::new();
    let kinds = ["sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh"];
    for i in 0..24 {
        let kind = kinds[i % kinds.len()];
        let (x, y, z) = (rand() * 4.0 - 2.0, rand() * 4.0 - 2.0, rand() * 1.0 + 0.2);
        let (a, b, c) = (rand() * 180.0, rand() * 180.0, rand() * 180.0);
        let (s1, s2, s3) = (0.1 + rand() * 0.3, 0.1 + rand() * 0.3, 0.1 + rand() * 0.3);
        let size = match kind {
            "sphere" => format!("{s1}"),
            "capsule" | "cylinder" => format!("{s1} {s2}"),
            "mesh" => String::new(),
            _ => format!("{s1} {s2} {s3}"),
        };
        let shape = if kind == "mesh" { r#"mesh="tetra""#.to_string() } else { format!(r#"size="{size}""#) };
        geoms += &format!(
            r#"<geom name="g{i}" type="{kind}" {shape} pos="{x} {y} {z}" euler="{a} {b} {c}" rgba="{} {} {} 1"/>"#,
            rand(),
            rand(),
            rand()
        );
    }
    format!(
        r#"<mujoco><compiler angle="degree"/>
        <asset>
          <mesh name="tetra" vertex="0 0 0  0.4 0 0  0 0.4 0  0 0 0.4"/>
          <hfield name="bumps" nrow="4" ncol="4" size="1.5 1.5 0.3 0.05"
                  elevation="0 1 0 1  1 0 1 0  0 1 1 0  1 0 0 1"/>
        </asset>
        <worldbody>
          <geom name="floor" type="plane" size="6 6 0.1"/>
          <geom name="terrain" type="hfield" hfield="bumps" pos="2.5 2.5 0"/>
          {geoms}
          <camera name="cam" pos="5 -5 4" xyaxes="0.7071 0.7071 0 -0.4 0.4 0.8246"/>
        </worldbody></mujoco>"#
    )
}

#[test]
fn depth_and_segmentation_equal_mj_ray_on_random_scenes_of_every_geom_type() {
    let dir = std::env::temp_dir().join(format!("glint-camera-random-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for seed in 0..3 {
        let path = dir.join(format!("scene{seed}.xml"));
        std::fs::write(&path, every_geom_type_scene(seed)).unwrap();
        check_against_mj_ray(&path, "cam", (80, 60));
    }
}

#[test]
fn batched_worlds_render_as_single_worlds() {
    let scene = example(&["lights", "scene.xml"]);
    let options = |sim: &Simulation| {
        let cam = sim.camera_index("view").unwrap();
        vec![CameraOptions { resolution: Some((48, 40)), ..CameraOptions::new(cam) }]
    };
    // Three worlds whose lights differ by the light fields (rows of w % 2).
    let mut batch = sim_of(&scene, 3);
    let nlight = batch.scene().nlight();
    let mut diffuse = vec![0.0; 2 * nlight * 3];
    for i in 0..nlight {
        diffuse[i * 3..][..3].copy_from_slice(&[0.2, 0.2, 0.2]);
        diffuse[(nlight + i) * 3..][..3].copy_from_slice(&[0.9, 0.5, 0.1]);
    }
    batch.set_field("light_diffuse", &diffuse, &[2, nlight, 3]).unwrap();
    batch.set_cameras(options(&batch)).unwrap();
    let all = batch.render().unwrap();
    for (world, row) in [(0usize, 0usize), (1, 1), (2, 0)] {
        let mut single = sim_of(&scene, 1);
        single.set_field("light_diffuse", &diffuse[row * nlight * 3..][..nlight * 3], &[1, nlight, 3]).unwrap();
        single.set_cameras(options(&single)).unwrap();
        let one = single.render().unwrap();
        let (rgb, depth, seg, _, _) = all.image(world, 0);
        assert_eq!(rgb, &one.rgb[..], "world {world}: colour");
        assert_eq!(depth, &one.depth[..], "world {world}: depth");
        assert_eq!(seg, &one.seg[..], "world {world}: segmentation");
    }
    assert_ne!(all.image(0, 0).0, all.image(1, 0).0, "the light fields change the picture");
}

#[test]
fn shadows_and_textures_change_the_picture_and_can_be_turned_off() {
    let scene = example(&["lights", "scene.xml"]);
    let mut sim = sim_of(&scene, 1);
    let cam = sim.camera_index("view").unwrap();
    let render = |sim: &mut Simulation, shadows: bool, textures: bool| {
        let o = CameraOptions {
            resolution: Some((64, 64)),
            use_shadows: shadows,
            use_textures: textures,
            ..CameraOptions::new(cam)
        };
        sim.set_cameras(vec![o]).unwrap();
        sim.render().unwrap().rgb
    };
    let full = render(&mut sim, true, true);
    let total = |rgb: &[u8]| rgb.iter().map(|&v| u64::from(v)).sum::<u64>();
    assert!(total(&render(&mut sim, false, true)) > total(&full), "without shadows the floor is brighter");
    assert_ne!(render(&mut sim, true, false), full, "the checker texture shows");
}

#[test]
fn bad_camera_requests_are_errors() {
    let scene = example(&["lights", "scene.xml"]);
    let mut sim = sim_of(&scene, 1);
    let err = sim.camera_index("veiw").unwrap_err().to_string();
    assert!(err.contains("did you mean `view`"), "{err}");
    let err = sim.render().unwrap_err().to_string();
    assert!(err.contains("no cameras are set"), "{err}");
    for (resolution, want) in [((0, 10), "out of range"), ((100_000, 10), "1 to 8192")] {
        let o = CameraOptions { resolution: Some(resolution), ..CameraOptions::new(0) };
        let err = sim.set_cameras(vec![o]).unwrap_err().to_string();
        assert!(err.contains(want), "{resolution:?}: {err}");
    }
    let err = sim.set_cameras(vec![CameraOptions::new(7)]).unwrap_err().to_string();
    assert!(err.contains("camera 7 does not exist"), "{err}");
    // An inactive camera takes no place in the layout; asking for its slot says so.
    sim.set_cameras(vec![CameraOptions { cam_active: false, ..CameraOptions::new(0) }]).unwrap();
    let err = sim.camera_layout().unwrap().slot(sim.scene(), 0).unwrap_err().to_string();
    assert!(err.contains("not active"), "{err}");
    let dir = std::env::temp_dir().join(format!("glint-camera-badtex-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let xml = dir.join("badtex.xml");
    std::fs::write(dir.join("broken.png"), b"not a png").unwrap();
    std::fs::write(
        &xml,
        r#"<mujoco><asset><texture name="t" type="2d" file="broken.png"/><material name="m" texture="t"/></asset>
           <worldbody><geom type="box" size="1 1 1" material="m"/><camera name="c" pos="0 -5 0" xyaxes="1 0 0 0 0 1"/></worldbody></mujoco>"#,
    )
    .unwrap();
    // MuJoCo itself may refuse the file when compiling; either way the message names it.
    match Simulation::from_xml_file(&xml, Vec::new(), SimOptions::default()) {
        Err(e) => assert!(e.to_string().contains("broken.png"), "{e}"),
        Ok(mut sim) => {
            let err = sim.set_cameras(vec![CameraOptions::new(0)]).unwrap_err().to_string();
            assert!(err.contains("texture 0 ('t') cannot be loaded"), "{err}");
        }
    }
}

#[test]
fn cameras_cannot_change_while_a_recording_takes_their_frames() {
    let scene = example(&["lights", "scene.xml"]);
    let mut sim = sim_of(&scene, 1);
    let cam = sim.camera_index("view").unwrap();
    sim.set_cameras(vec![CameraOptions { resolution: Some((16, 16)), ..CameraOptions::new(cam) }]).unwrap();
    let err = sim.set_camera_rate(cam, 7.0).unwrap_err().to_string();
    assert!(err.contains("not a whole fraction"), "{err}");
    let dir = std::env::temp_dir().join(format!("glint-camera-rec-{}", std::process::id()));
    sim.arm_recording(&glint_sim::RecordingOptions { out: Some(dir.clone()), episodes: 1 }).unwrap();
    let err = sim.set_cameras(vec![CameraOptions::new(cam)]).unwrap_err().to_string();
    assert!(err.contains("changing the cameras"), "{err}");
    sim.step(None).unwrap();
    sim.stop_recording(glint_record::EpisodeStatus::Complete).unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn depth_sees_through_glass_as_the_lidar_does_and_colour_and_segmentation_show_the_pane() {
    let dir = std::env::temp_dir().join(format!("glint-camera-glass-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("pane.xml"),
        r#"<mujoco><asset><material name="glass" rgba="0.8 0.9 1 1"/><material name="paint" rgba="0.5 0.5 0.5 1"/></asset>
           <worldbody>
             <geom name="pane" type="box" size="0.01 2 2" pos="1 0 0" material="glass"/>
             <geom name="wall" type="box" size="0.1 3 3" pos="3.1 0 0" material="paint"/>
             <camera name="c" pos="0 0 0" xyaxes="0 -1 0 0 0 1"/>
           </worldbody></mujoco>"#,
    )
    .unwrap();
    let render = |materials: &str| {
        let manifest = dir.join("pane.toml");
        std::fs::write(
            &manifest,
            format!("scene = \"pane.xml\"\n{materials}[[camera]]\ncamera = \"c\"\nwidth = 8\nheight = 6\noutputs = [\"rgb\", \"depth\", \"seg\"]\n"),
        )
        .unwrap();
        let mut sim = Simulation::from_manifest(&manifest, SimOptions::default()).unwrap();
        sim.render().unwrap()
    };
    let glass = render("[materials.glass]\npreset = \"clear-float-glass\"\n");
    let plain = render("");
    for i in 0..48 {
        assert_eq!(glass.seg[i], 0, "the pane is what the pixel shows");
        assert_eq!(glass.seg[i], plain.seg[i]);
        assert_eq!(glass.rgb[i * 3..i * 3 + 3], plain.rgb[i * 3..i * 3 + 3], "colour is the pane's either way");
        assert!((plain.depth[i] - 0.99).abs() < 1e-5, "unauthored glass is a surface: {}", plain.depth[i]);
        assert!((glass.depth[i] - 3.0).abs() < 1e-5, "depth passes the pane to the wall: {}", glass.depth[i]);
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn each_geom_and_material_field_changes_its_world_only() {
    let scene = example(&["lights", "scene.xml"]);
    let mut sim = sim_of(&scene, 2);
    let cam = sim.camera_index("view").unwrap();
    sim.set_cameras(vec![CameraOptions { resolution: Some((48, 40)), ..CameraOptions::new(cam) }]).unwrap();
    let base = sim.render().unwrap();
    let s = sim.scene();
    let (ngeom, nmat) = (s.ngeom(), s.mat_rgba.len());
    let cube = s.geom_name.iter().position(|n| n == "cube").unwrap();
    let floor_mat = s.geom_matid[s.geom_name.iter().position(|n| n == "floor").unwrap()] as usize;
    let red = s.mat_name.iter().position(|n| n == "red").unwrap();
    let blue = s.mat_name.iter().position(|n| n == "blue").unwrap();
    // Two rows: world 0 keeps the model's value, world 1 gets another.
    let two_rows = |model: Vec<f64>, changed: Vec<f64>| model.iter().chain(&changed).copied().collect::<Vec<f64>>();
    let cases: Vec<(&str, Vec<f64>, Vec<usize>)> = {
        let (rgba, _) = sim.field("geom_rgba").unwrap();
        let mut g = rgba.clone();
        g[cube * 4..cube * 4 + 4].copy_from_slice(&[0.0, 1.0, 0.0, 1.0]);
        let (matid, _) = sim.field("geom_matid").unwrap();
        let mut m = matid.clone();
        m[cube] = blue as f64;
        let (mat_rgba, _) = sim.field("mat_rgba").unwrap();
        let mut mr = mat_rgba.clone();
        mr[red * 4..red * 4 + 4].copy_from_slice(&[1.0, 1.0, 0.0, 1.0]);
        let (texid, _) = sim.field("mat_texid").unwrap();
        let mut t = texid.clone();
        t[floor_mat] = -1.0;
        let (repeat, _) = sim.field("mat_texrepeat").unwrap();
        let mut r = repeat.clone();
        r[floor_mat * 2..floor_mat * 2 + 2].copy_from_slice(&[1.0, 1.0]);
        vec![
            ("geom_rgba", two_rows(rgba, g), vec![2, ngeom, 4]),
            ("geom_matid", two_rows(matid, m), vec![2, ngeom]),
            ("mat_rgba", two_rows(mat_rgba, mr), vec![2, nmat, 4]),
            ("mat_texid", two_rows(texid, t), vec![2, nmat]),
            ("mat_texrepeat", two_rows(repeat, r), vec![2, nmat, 2]),
        ]
    };
    for (name, values, shape) in cases {
        let mut sim = sim_of(&scene, 2);
        sim.set_cameras(vec![CameraOptions { resolution: Some((48, 40)), ..CameraOptions::new(cam) }]).unwrap();
        sim.set_field(name, &values, &shape).unwrap();
        let frames = sim.render().unwrap();
        assert_eq!(frames.image(0, 0).0, base.image(0, 0).0, "{name}: world 0 reads the model's row");
        assert_ne!(frames.image(1, 0).0, base.image(1, 0).0, "{name}: world 1 reads its own row");
        assert_eq!(frames.image(1, 0).1, base.image(1, 0).1, "{name}: depth is geometry's");
    }
    for (name, values, shape, want) in [
        ("geom_matid", vec![99.0; ngeom], vec![1, ngeom], "a material id from 0 to"),
        ("mat_texid", vec![-2.0; nmat], vec![1, nmat], "a texture id from 0 to"),
        ("geom_rgba", vec![2.0; ngeom * 4], vec![1, ngeom, 4], "from 0 to 1"),
        ("geom_colour", vec![0.0; ngeom * 4], vec![1, ngeom, 4], "is not a per-world field"),
    ] {
        let err = sim.set_field(name, &values, &shape).unwrap_err().to_string();
        assert!(err.contains(want), "{name}: {err}");
    }
}

#[test]
fn the_mjcf_output_attribute_decides_the_outputs_a_binding_does_not_list() {
    let xml = r#"<mujoco><worldbody><geom type="box" size="1 1 1"/>
        <camera name="plain" pos="0 -5 0" xyaxes="1 0 0 0 0 1"/>
        <camera name="ranging" pos="0 -5 0" xyaxes="1 0 0 0 0 1" output="depth segmentation"/>
        </worldbody></mujoco>"#;
    let sim = Simulation::from_xml(xml, Vec::new(), SimOptions::default()).unwrap();
    let outputs = |o: &CameraOptions| (o.render_rgb, o.render_depth, o.render_seg);
    let plain = CameraOptions::from_mjcf(sim.scene(), 0).unwrap();
    assert_eq!(outputs(&plain), (true, false, false), "MuJoCo's default output is rgb");
    let ranging = CameraOptions::from_mjcf(sim.scene(), 1).unwrap();
    assert_eq!(outputs(&ranging), (false, true, true));
    let dir = std::env::temp_dir().join(format!("glint-camera-output-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("s.xml"), xml).unwrap();
    let manifest = dir.join("m.toml");
    std::fs::write(
        &manifest,
        "scene = \"s.xml\"\n[[camera]]\ncamera = \"ranging\"\n[[camera]]\ncamera = \"plain\"\noutputs = [\"seg\"]\n",
    )
    .unwrap();
    let sim = Simulation::from_manifest(&manifest, SimOptions::default()).unwrap();
    let layout = sim.camera_layout().unwrap();
    assert_eq!(outputs(&layout.cameras[0].1), (false, true, true), "unlisted: the MJCF's");
    assert_eq!(outputs(&layout.cameras[1].1), (false, false, true), "listed: the binding's");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_world_with_its_own_fovy_renders_its_own_rays() {
    let scene = example(&["lights", "scene.xml"]);
    let mut sim = sim_of(&scene, 2);
    let cam = sim.camera_index("view").unwrap();
    let ncam = sim.scene().ncam();
    sim.set_cameras(vec![CameraOptions { resolution: Some((24, 16)), ..CameraOptions::new(cam) }]).unwrap();
    let (mut fovy, _) = sim.field("cam_fovy").unwrap();
    let model_fovy = fovy[cam];
    fovy.extend(vec![20.0; ncam]);
    sim.set_field("cam_fovy", &fovy, &[2, ncam]).unwrap();
    let frames = sim.render().unwrap();
    let reference = WorldBatch::new(sim.model(), 1).unwrap();
    let (pos, mat) = (sim.poses().cam_xpos[cam], sim.poses().cam_xmat[cam]);
    let filter =
        RayFilter { geomgroup: Some([true, true, true, false, false, false]), flg_static: true, exclude_tree: -1 };
    for (world, want) in [(0usize, model_fovy), (1, 20.0)] {
        let model = frames.layout.cameras[0].0.with_fovy(want);
        let (_, depth, seg, w, h) = frames.image(world, 0);
        for row in 0..h {
            for col in 0..w {
                let (o, d) = model.pixel_ray(col, row);
                let mj = reference.mj_ray(0, pos + mat * o, mat * d, &filter, -1);
                let i = row * w + col;
                assert_eq!(seg[i], mj.geomid, "world {world} pixel ({col}, {row})");
                if mj.geomid >= 0 {
                    assert!((f64::from(depth[i]) - mj.dist).abs() <= 1e-5 * mj.dist, "world {world} ({col}, {row})");
                }
            }
        }
    }
    let err = sim.set_field("cam_fovy", &vec![190.0; ncam], &[1, ncam]).unwrap_err().to_string();
    assert!(err.contains("0 to 180 degrees"), "{err}");
}

#[test]
fn render_where_renders_only_the_pairs_it_keeps_and_leaves_the_others() {
    use glint_camera::{Frames, Headlight, Inputs, Layout, Renderer};
    let model = glint_mujoco::Model::from_xml_file(example(&["primitives.xml"])).unwrap();
    let scene = model.scene().clone();
    let worlds = WorldBatch::new(&model, 2).unwrap();
    let caster = glint_core::RayCaster::new(&scene, worlds.poses());
    let layout = Layout::new(&scene, &[CameraOptions { resolution: Some((8, 6)), ..CameraOptions::new(0) }]).unwrap();
    let renderer = Renderer::new(&model.textures().unwrap());
    let n = 2 * layout.pixels_per_world;
    let render = |wanted: &(dyn Fn(usize, usize) -> bool + Sync)| {
        let (mut rgb, mut depth, mut seg) = (vec![7u8; n * 3], vec![-7.0f32; n], vec![-7i32; n]);
        let headlight = Headlight {
            active: true,
            ambient: glam::Vec3::splat(0.1),
            diffuse: glam::Vec3::splat(0.4),
            specular: glam::Vec3::ZERO,
        };
        let lights = vec![Vec::new(), Vec::new()];
        let input = Inputs {
            scene: &scene,
            poses: worlds.poses(),
            caster: &caster,
            lights: &lights,
            headlight,
            fields: &glint_camera::SceneFields(&scene),
            depth_noise: &[],
        };
        let frames = Frames { rgb: Some(&mut rgb), depth: Some(&mut depth), seg: Some(&mut seg) };
        renderer.render_where(input, &layout, frames, wanted).unwrap();
        (rgb, depth, seg)
    };
    let all = render(&|_, _| true);
    let only = render(&|w, _| w == 1);
    let half = layout.pixels_per_world;
    // World 1 as a full render draws it; world 0 untouched.
    assert_eq!(only.1[half..], all.1[half..]);
    assert_eq!(only.2[half..], all.2[half..]);
    assert_eq!(only.0[half * 3..], all.0[half * 3..]);
    assert!(only.1[..half].iter().all(|&d| d == -7.0) && only.2[..half].iter().all(|&s| s == -7));
    assert!(only.0[..half * 3].iter().all(|&c| c == 7));
    assert!(all.1[..half].iter().any(|&d| d > 0.0), "the full render draws world 0");
}

#[test]
fn lidars_say_once_that_they_do_not_see_skins_and_flexes() {
    let xml = r#"<mujoco><worldbody>
        <site name="lidar" pos="0 0 1"/>
        <body name="holder" pos="1 0 0.5">
          <flexcomp name="cloth" type="grid" count="4 4 1" spacing=".1 .1 .1" radius=".01" dim="2"/>
        </body>
        </worldbody></mujoco>"#;
    let lidar = glint_lidar::LidarBinding { attach_site: Some("lidar".into()), ..Default::default() };
    let mut sim = Simulation::from_xml(xml, vec![lidar], SimOptions::default()).unwrap();
    let warnings: Vec<String> = sim
        .take_warnings()
        .iter()
        .filter(|w| matches!(w, glint_sim::Warning::LidarBlindToSkins { .. }))
        .map(|w| w.to_string())
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("1 flexes (cloth)"), "{}", warnings[0]);
    // Without a lidar there is nothing to say.
    let mut bare = Simulation::from_xml(xml, Vec::new(), SimOptions::default()).unwrap();
    assert!(!bare.take_warnings().iter().any(|w| matches!(w, glint_sim::Warning::LidarBlindToSkins { .. })));
}
