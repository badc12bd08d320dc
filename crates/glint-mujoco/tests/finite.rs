//! Compiled model fields that feed the ray core and physics are finite: MJCF that MuJoCo
//! compiles with an infinite or NaN position, size, orientation or mass (it does, with at most
//! a warning) is refused, naming the element, the field, the value and the attribute to fix.

use glint_mujoco::{Model, MujocoError};

/// A scene with one free body: `body` and `geom` are extra attributes of the body and of its
/// box geom, `extra` more elements inside the body.
fn scene(body: &str, geom: &str, extra: &str) -> String {
    format!(
        r#"<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="crate" {body}>
      <freejoint/>
      <geom name="box" type="box" {geom}/>
      {extra}
    </body>
  </worldbody>
</mujoco>"#
    )
}

fn refused(xml: &str) -> String {
    match Model::from_xml_str(xml) {
        Ok(_) => panic!("accepted:\n{xml}"),
        Err(e) => {
            assert!(matches!(e, MujocoError::NotFinite { .. }), "{e}");
            e.to_string()
        }
    }
}

#[test]
fn the_plain_scene_loads() {
    Model::from_xml_str(&scene(r#"pos="0 0 1""#, r#"size="0.1 0.1 0.1""#, "")).unwrap();
}

#[test]
fn infinite_and_nan_geom_positions_are_refused_naming_the_geom() {
    let err = refused(&scene(r#"pos="0 0 1""#, r#"size="0.1 0.1 0.1" pos="inf 0 0""#, ""));
    assert_eq!(
        err,
        "the MJCF string: geom 1 ('box') has geom_pos[0] = inf, which is not a finite number; \
         fix the MJCF geom's `pos (or fromto, its mesh)`"
    );
    // (MuJoCo itself refuses a NaN in a free body's only geom; a static geom it compiles.)
    let xml = r#"<mujoco><worldbody><geom name="post" type="sphere" size="0.1" pos="0 nan 0"/></worldbody></mujoco>"#;
    let err = refused(xml);
    assert!(err.contains("geom 0 ('post') has geom_pos[1] = NaN, which is not a finite number"), "{err}");
}

#[test]
fn lengths_past_mujocos_limit_are_refused_with_the_limit() {
    let err = refused(&scene(r#"pos="0 0 1""#, r#"size="0.1 0.1 0.1" pos="1e300 0 0""#, ""));
    assert!(err.contains("geom 1 ('box') has geom_pos[0] = 1e300, beyond"), "{err}");
    assert!(
        err.contains("beyond MuJoCo's limit of ±1e10 (mjMAXVAL); fix the MJCF geom's `pos (or fromto, its mesh)`"),
        "{err}"
    );
}

#[test]
fn bodies_sizes_orientations_masses_sites_and_meshes_are_checked_too() {
    for (body, geom, extra, expect) in [
        (r#"pos="0 0 inf""#, r#"size="0.1 0.1 0.1""#, "", "body 1 ('crate') has body_pos[2] = inf"),
        (r#"pos="0 0 1" quat="nan 0 0 1""#, r#"size="0.1 0.1 0.1""#, "", "body 1 ('crate') has body_quat[0] = NaN"),
        (r#"pos="0 0 1""#, r#"size="0.1 inf 0.1""#, "", "geom 1 ('box') has geom_size[1] = inf"),
        (r#"pos="0 0 1""#, r#"size="0.1 0.1 0.1" euler="0 nan 0""#, "", "geom 1 ('box') has geom_quat"),
        (r#"pos="0 0 1""#, r#"size="0.1 0.1 0.1" mass="inf""#, "", "body 1 ('crate') has body_mass[0] = inf"),
        (
            r#"pos="0 0 1""#,
            r#"size="0.1 0.1 0.1""#,
            r#"<site name="lidar" pos="nan 0 0"/>"#,
            "site 0 ('lidar') has site_pos[0] = NaN",
        ),
        (
            r#"pos="0 0 1""#,
            r#"size="0.1 0.1 0.1""#,
            r#"<body name="arm"><joint name="elbow" type="hinge" ref="inf"/><geom size="0.1"/></body>"#,
            "joint 1 ('elbow') has qpos0[0] = inf",
        ),
    ] {
        let err = refused(&scene(body, geom, extra));
        assert!(err.contains(expect), "{body} {geom} {extra}: {err}");
    }
}

#[test]
fn mesh_vertices_are_checked_naming_the_mesh() {
    let xml = r#"<mujoco>
  <asset><mesh name="tetra" vertex="0 0 0  1 0 0  0 1 0  0 0 1" scale="1 inf 1"/></asset>
  <worldbody><geom name="rock" type="mesh" mesh="tetra"/></worldbody>
</mujoco>"#;
    match Model::from_xml_str(xml) {
        // MuJoCo may refuse the mesh itself; if it compiles it, glint names the mesh.
        Err(MujocoError::Load { .. }) => {}
        Err(e) => {
            let err = e.to_string();
            assert!(err.contains("('tetra')") || err.contains("('rock')"), "{err}");
        }
        Ok(_) => panic!("a mesh scaled by inf was accepted"),
    }
}
