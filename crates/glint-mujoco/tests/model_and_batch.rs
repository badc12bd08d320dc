//! Scene extraction from MuJoCo's compiled model, and stepping batches of worlds.

use glam::DVec3;
use glint_core::GeomType;
use glint_mujoco::{Model, MujocoError, WorldBatch};

const SCENE: &str = r#"
<mujoco>
  <option timestep="0.002"/>
  <asset>
    <texture name="grid" type="2d" builtin="checker" width="64" height="32" rgb1="1 1 1" rgb2="0 0 0"/>
    <material name="floor" texture="grid" texrepeat="4 2" rgba="0.5 0.6 0.7 1" specular="0.3"/>
    <mesh name="tetra" vertex="0 0 0  1 0 0  0 1 0  0 0 1"/>
    <hfield name="hill" nrow="3" ncol="4" size="2 1 0.5 0.1" elevation="0 1 2 3  4 5 6 7  8 9 10 11"/>
  </asset>
  <worldbody>
    <light name="sun" directional="true" pos="0 0 5" dir="0 0 -1" diffuse="0.8 0.7 0.6" castshadow="false"/>
    <camera name="front" pos="3 0 1" xyaxes="0 1 0 -0.3 0 1" fovy="60" resolution="320 240"/>
    <geom name="floor" type="plane" size="5 5 0.1" material="floor" contype="1" conaffinity="3"/>
    <geom name="terrain" type="hfield" hfield="hill" pos="3 3 0"/>
    <body name="robot" pos="0 0 1">
      <freejoint/>
      <geom name="base" type="box" size="0.2 0.1 0.05" group="2" rgba="1 0 0 1"/>
      <site name="lidar" pos="0 0 0.1"/>
      <body name="arm" pos="0.2 0 0">
        <joint type="hinge" axis="0 1 0"/>
        <geom name="link" type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
        <body name="hand" pos="0.3 0 0">
          <joint type="hinge" axis="0 0 1"/>
          <geom name="tool" type="mesh" mesh="tetra"/>
        </body>
      </body>
    </body>
    <body name="pillar" pos="-2 0 0.5">
      <geom name="post" type="cylinder" size="0.1 0.5"/>
    </body>
  </worldbody>
</mujoco>"#;

#[test]
fn scene_holds_every_kind_of_object() {
    let model = Model::from_xml_str(SCENE).unwrap();
    let s = model.scene();
    assert_eq!(s.ngeom(), 6);
    let names: Vec<&str> = s.geom_name.iter().map(String::as_str).collect();
    assert_eq!(names, ["floor", "terrain", "base", "link", "tool", "post"]);
    let kinds =
        [GeomType::Plane, GeomType::Hfield, GeomType::Box, GeomType::Capsule, GeomType::Mesh, GeomType::Cylinder];
    assert_eq!(s.geom_type, kinds);
    assert_eq!(s.geom_group[2], 2);
    assert_eq!((s.geom_contype[0], s.geom_conaffinity[0]), (1, 3));
    assert_eq!(s.geom_rgba[2], [1.0, 0.0, 0.0, 1.0]);
    assert_eq!(s.geom_size[2], DVec3::new(0.2, 0.1, 0.05));

    // Body tree: world, robot, arm, hand, pillar.
    assert_eq!(s.body_name, ["world", "robot", "arm", "hand", "pillar"]);
    assert_eq!(s.body_parentid, [0, 0, 1, 2, 0]);
    assert_eq!(s.body_rootid, [0, 1, 1, 1, 4]);
    assert_eq!(s.body_weldid[4], 0, "the pillar has no joint: welded to the world");
    assert_eq!(s.geom_bodyid, [0, 0, 1, 2, 3, 4]);

    // Meshes and height fields.
    assert_eq!(s.mesh.len(), 1);
    assert_eq!(s.mesh[0].name, "tetra");
    assert_eq!(s.mesh[0].nface(), 4, "MuJoCo makes a hull of a vertex-only mesh: 4 faces");
    assert_eq!(s.geom_dataid[4], 0);
    let hf = &s.hfield[0];
    assert_eq!((hf.nrow, hf.ncol), (3, 4));
    assert_eq!(hf.size, [2.0, 1.0, 0.5, 0.1]);
    assert_eq!(hf.data.len(), 12);
    // MuJoCo normalizes elevations to [0, 1], and the first row given in MJCF is the last
    // row in the model (rows run along +Y).
    assert_eq!(hf.data[8], 0.0);
    assert_eq!(hf.data[3], 1.0);
    assert!((hf.data[0] - 8.0 / 11.0).abs() < 1e-6);

    // Materials, textures, lights, cameras, sites.
    assert_eq!(s.mat_name, ["floor"]);
    assert_eq!(s.mat_rgba[0], [0.5, 0.6, 0.7, 1.0]);
    assert_eq!(s.mat_texrepeat[0], [4.0, 2.0]);
    assert_eq!(s.mat_texid[0], 0);
    assert_eq!(s.tex_name, ["grid"]);
    assert_eq!(s.tex_size[0], [64, 32]);
    assert_eq!(s.light_name, ["sun"]);
    assert_eq!(s.light_type[0], 1, "directional");
    assert!(!s.light_castshadow[0]);
    assert_eq!(s.light_diffuse[0], [0.8, 0.7, 0.6]);
    assert_eq!(s.cam_name, ["front"]);
    assert_eq!(s.cam_fovy[0], 60.0);
    assert_eq!(s.cam_resolution[0], [320, 240]);
    assert_eq!(s.site_name, ["lidar"]);
    assert_eq!(s.site_id("lidar"), Some(0));
    assert_eq!(s.site_bodyid[0], 1);
}

#[test]
fn poses_follow_mujoco_kinematics() {
    let model = Model::from_xml_str(SCENE).unwrap();
    let batch = WorldBatch::new(&model, 2).unwrap();
    let p = batch.poses();
    assert_eq!(p.nworld, 2);
    let (site, rot) = p.site(0, 0);
    assert!((site - DVec3::new(0.0, 0.0, 1.1)).length() < 1e-12);
    assert!((rot.z_axis - DVec3::Z).length() < 1e-12);
    // The camera looks along its -Z axis; xyaxes put its X axis along world +Y.
    let cam_x = p.cam_xmat[0].x_axis;
    assert!((cam_x - DVec3::Y).length() < 1e-9, "{cam_x:?}");
    assert!((p.light_xdir[0] - DVec3::NEG_Z).length() < 1e-12);
    // The link capsule (fromto along +X from the arm) is centred 0.15 m along X.
    assert!((p.geom_xpos[3] - DVec3::new(0.35, 0.0, 1.0)).length() < 1e-9);
    // Second world's block of the arrays repeats the first at the initial state.
    let n = model.scene().ngeom();
    assert_eq!(p.geom_xpos[..n], p.geom_xpos[n..2 * n]);
}

#[test]
fn parallel_stepping_equals_one_world_at_a_time() {
    let model = Model::from_xml_str(SCENE).unwrap();
    let mut batch = WorldBatch::new(&model, 3).unwrap();
    let mut qpos = batch.qpos(1).to_vec();
    qpos[7] = 0.4; // bend the arm in world 1
    batch.set_qpos(1, &qpos).unwrap();
    batch.step(200);

    let mut single = WorldBatch::new(&model, 1).unwrap();
    single.set_qpos(0, &qpos).unwrap();
    single.step(200);

    let n = model.scene().ngeom();
    assert_eq!(&batch.poses().geom_xpos[n..2 * n], &single.poses().geom_xpos[..]);
    assert_eq!(batch.qpos(1), single.qpos(0));
    assert_ne!(batch.qpos(0), batch.qpos(1));
    assert!((batch.time(0) - 0.4).abs() < 1e-9);
    // The robot fell under gravity; the welded pillar did not move.
    assert!(batch.poses().xpos[1].z < 1.0);
    assert_eq!(batch.poses().xpos[4], DVec3::new(-2.0, 0.0, 0.5));

    batch.reset();
    assert_eq!(batch.time(0), 0.0);
    assert!((batch.poses().xpos[1].z - 1.0).abs() < 1e-12);
}

#[test]
fn bad_batches_and_states_are_errors() {
    let model = Model::from_xml_str(SCENE).unwrap();
    assert!(matches!(WorldBatch::new(&model, 0), Err(MujocoError::NoWorlds)));
    let mut batch = WorldBatch::new(&model, 2).unwrap();
    let nq = batch.nq();
    let err = batch.set_qpos(0, &vec![0.0; nq + 1]).unwrap_err().to_string();
    assert!(err.contains("qpos") && err.contains(&nq.to_string()), "{err}");
    let err = batch.set_qpos(5, &vec![0.0; nq]).unwrap_err().to_string();
    assert!(err.contains("world 5") && err.contains("2 worlds"), "{err}");
    let mut q = batch.qpos(0).to_vec();
    q[2] = f64::NAN;
    let err = batch.set_qpos(0, &q).unwrap_err().to_string();
    assert!(err.contains("qpos[2]"), "{err}");
}

#[test]
fn unstable_worlds_are_flagged_and_mujoco_writes_no_log_file() {
    // Gravity of 1e12 m/s² makes accelerations MuJoCo calls huge on the first step.
    let xml = r#"<mujoco><option gravity="0 0 -1e12"/><worldbody>
        <body pos="0 0 1"><freejoint/><geom type="box" size="1 1 1"/></body>
    </worldbody></mujoco>"#;
    let model = Model::from_xml_str(xml).unwrap();
    let mut batch = WorldBatch::new(&model, 1).unwrap();
    assert!(!batch.unstable(0));
    for _ in 0..50 {
        batch.step(1);
        if batch.unstable(0) {
            break;
        }
    }
    assert!(batch.unstable(0), "the explosion must be flagged");
    assert!(batch.poses().geom_xpos.iter().all(|p| p.is_finite()), "MuJoCo resets the state");
    assert!(!std::path::Path::new("MUJOCO_LOG.TXT").exists(), "MuJoCo's messages go to stderr, not to a file");
    batch.reset();
    assert!(!batch.unstable(0));
}

#[test]
fn missing_and_malformed_files_name_the_problem() {
    let err = Model::from_xml_file("/no/such/scene.xml").unwrap_err().to_string();
    assert!(err.contains("/no/such/scene.xml"), "{err}");
    let err = Model::from_xml_str("<mujoco><worldbody><geom type='box'/></mujoco>").unwrap_err().to_string();
    assert!(err.contains("MuJoCo could not load the MJCF string"), "{err}");
    let err = Model::from_xml_str("<mujoco><worldbody><geom type='sphere' size='-1'/></worldbody></mujoco>")
        .unwrap_err()
        .to_string();
    assert!(err.to_lowercase().contains("size"), "{err}");
    let err = Model::from_xml_file(env!("CARGO_MANIFEST_DIR")).unwrap_err().to_string();
    assert!(err.contains("not a file"), "{err}");
}

#[test]
fn set_qpos_touches_only_its_world() {
    let model = Model::from_xml_str(SCENE).unwrap();
    let mut batch = WorldBatch::new(&model, 3).unwrap();
    batch.step(50); // poses after a step lag qpos by one integration step
    let before = batch.poses().geom_xpos.clone();
    let mut q = batch.qpos(1).to_vec();
    q[2] += 1.0; // lift the robot in world 1
    batch.set_qpos(1, &q).unwrap();
    let n = model.scene().ngeom();
    let after = &batch.poses().geom_xpos;
    assert_eq!(after[..n], before[..n], "world 0 must not change");
    assert_eq!(after[2 * n..], before[2 * n..], "world 2 must not change");
    assert!((after[n + 2].z - before[n + 2].z - 1.0).abs() < 0.05, "world 1's robot rose by about 1 m");
}

/// Writes a binary STL of a closed tetrahedron.
fn write_tetra_stl(path: &std::path::Path) {
    let v = [[0.0f32, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    let faces = [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]];
    let mut bytes = vec![0u8; 80];
    bytes.extend_from_slice(&(faces.len() as u32).to_le_bytes());
    for f in faces {
        bytes.extend_from_slice(&[0u8; 12]); // normal: MuJoCo recomputes it
        for i in f {
            for c in v[i] {
                bytes.extend_from_slice(&c.to_le_bytes());
            }
        }
        bytes.extend_from_slice(&[0u8; 2]);
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn includes_meshes_and_height_fields_resolve_relative_to_the_model_file() {
    let dir = std::env::temp_dir().join(format!("glint-relative-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("parts/assets")).unwrap();
    write_tetra_stl(&dir.join("parts/assets/tetra.stl"));
    // MuJoCo's binary height-field format: nrow, ncol (int32), then nrow*ncol float32.
    let mut hf = Vec::new();
    hf.extend_from_slice(&2i32.to_le_bytes());
    hf.extend_from_slice(&3i32.to_le_bytes());
    for z in [0.0f32, 0.5, 1.0, 0.25, 0.75, 0.5] {
        hf.extend_from_slice(&z.to_le_bytes());
    }
    std::fs::write(dir.join("parts/assets/ground.bin"), hf).unwrap();
    std::fs::write(
        dir.join("parts/robot.xml"),
        r#"<mujoco><worldbody><body name="robot" pos="0 0 1"><geom type="mesh" mesh="tetra"/></body></worldbody></mujoco>"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("scene.xml"),
        r#"<mujoco>
          <compiler meshdir="parts/assets" assetdir="parts/assets"/>
          <asset>
            <mesh name="tetra" file="tetra.stl"/>
            <hfield name="ground" file="ground.bin" size="2 2 0.3 0.1"/>
          </asset>
          <worldbody><geom type="hfield" hfield="ground"/></worldbody>
          <include file="parts/robot.xml"/>
        </mujoco>"#,
    )
    .unwrap();
    // Loaded from another working directory: paths resolve against the model file.
    let model = Model::from_xml_file(dir.join("scene.xml")).unwrap();
    let s = model.scene();
    assert_eq!(s.body_name, ["world", "robot"]);
    assert_eq!(s.mesh[0].nface(), 4);
    assert_eq!((s.hfield[0].nrow, s.hfield[0].ncol), (2, 3));
    assert_eq!(s.geom_type, [GeomType::Hfield, GeomType::Mesh]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn controls_drive_actuators_in_one_world_only() {
    let xml = r#"
<mujoco>
  <worldbody>
    <body name="cart"><joint name="x" type="slide" axis="1 0 0"/><geom type="box" size="0.1 0.1 0.1" mass="1"/></body>
  </worldbody>
  <actuator><velocity name="vx" joint="x" kv="50" ctrlrange="-2 2"/><motor name="free" joint="x"/></actuator>
</mujoco>"#;
    let model = glint_mujoco::Model::from_xml_str(xml).unwrap();
    assert_eq!(model.nu(), 2);
    assert_eq!(model.actuator_names(), ["vx", "free"]);
    assert_eq!(model.actuator_ctrlrange(), [Some([-2.0, 2.0]), None]);
    assert!(glint_mujoco::Model::mujoco_version().starts_with("3.17"));
    let mut batch = glint_mujoco::WorldBatch::new(&model, 2).unwrap();
    batch.set_ctrl(1, &[1.0, 0.0]).unwrap();
    batch.step(500);
    assert_eq!(batch.qpos(0)[0], 0.0);
    assert!((batch.qpos(1)[0] - 1.0).abs() < 0.05, "{}", batch.qpos(1)[0]);
    let err = batch.set_ctrl(0, &[1.0]).unwrap_err().to_string();
    assert!(err.contains("nu = 2"), "{err}");
    assert!(batch.set_ctrl(0, &[f64::NAN, 0.0]).is_err());
    assert!(batch.set_ctrl(2, &[0.0, 0.0]).is_err());
}
