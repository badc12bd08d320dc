//! Inputs a simulation used to accept without a word and then ran into nonsense with: action
//! files with negative, repeated or backward times or no rows; joint noise wider than a turn
//! or than the joint's range; a three-element waypoint; non-finite MJCF geometry; an empty
//! range of hits. Each is refused when the simulation is built (or the call made), naming the
//! file, key, line or value, and what to give instead.

use std::path::{Path, PathBuf};

use glint_lidar::ScanConfig;
use glint_sim::{SimOptions, Simulation};

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-inputs-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A base on two slide joints (x limited to [-1, 2]) and a hinge, driven by velocity
/// actuators, with a lidar site; `geom` is extra attributes of a static post.
fn scene(geom: &str) -> String {
    format!(
        r#"<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="10 10 0.1"/>
    <geom name="post" type="box" size="0.2 0.2 1" pos="3 0 1" {geom}/>
    <body name="robot" pos="0 0 0.2">
      <joint name="base_x" type="slide" axis="1 0 0" range="-1 2" limited="true"/>
      <joint name="base_y" type="slide" axis="0 1 0"/>
      <joint name="base_yaw" type="hinge" axis="0 0 1"/>
      <geom name="chassis" type="box" size="0.3 0.2 0.1" contype="0" conaffinity="0"/>
      <site name="lidar" pos="0 0 0.2"/>
    </body>
  </worldbody>
  <actuator>
    <velocity name="vx" joint="base_x" kv="100"/>
    <velocity name="vy" joint="base_y" kv="100"/>
    <velocity name="wz" joint="base_yaw" kv="50"/>
  </actuator>
</mujoco>"#
    )
}

/// A manifest in its own folder over [`scene`] with `geom` on the post, one lidar, and
/// `extra` manifest text.
fn manifest(tag: &str, geom: &str, extra: &str) -> PathBuf {
    let dir = temp_dir(tag);
    std::fs::write(dir.join("scene.xml"), scene(geom)).unwrap();
    let path = dir.join("scene.toml");
    let text =
        format!("scene = \"scene.xml\"\n\n[[lidar]]\nattach_site = \"lidar\"\npreset = \"velodyne-vlp16\"\n\n{extra}");
    std::fs::write(&path, text).unwrap();
    path
}

fn build(path: &Path) -> Result<Simulation, String> {
    Simulation::from_manifest(path, SimOptions::default()).map_err(|e| e.to_string())
}

fn refused(tag: &str, geom: &str, extra: &str) -> String {
    let path = manifest(tag, geom, extra);
    let err = build(&path).err().unwrap_or_else(|| panic!("accepted: {extra}"));
    std::fs::remove_dir_all(path.parent().unwrap()).ok();
    err
}

#[test]
fn the_plain_scene_builds() {
    let path = manifest("plain", "", "[reset.joints]\nbase_x = 0.5\nbase_yaw = 3.14159\n");
    build(&path).unwrap();
    std::fs::remove_dir_all(path.parent().unwrap()).ok();
}

/// The action file `csv` replayed; the error.
fn replay(tag: &str, csv: &str) -> (String, PathBuf) {
    let path = manifest(tag, "", "[controller]\nkind = \"replay\"\nactions = \"actions.csv\"\n");
    let actions = path.parent().unwrap().join("actions.csv");
    std::fs::write(&actions, csv).unwrap();
    let err = build(&path).err().unwrap_or_else(|| panic!("accepted:\n{csv}"));
    (err, actions)
}

#[test]
fn action_files_with_bad_times_or_no_rows_are_refused_naming_the_file_and_line() {
    for (tag, csv, line, expect) in [
        (
            "negative",
            "time,vx\n-0.5,0.2\n1.0,0.0\n",
            Some(2),
            "time -0.5 is negative: times are seconds from the episode's start, 0 or more",
        ),
        (
            "repeated",
            "time,vx\n0.0,0.2\n0.5,0.1\n0.5,0.0\n",
            Some(4),
            "time 0.5 does not come after the previous row's 0.5: times must increase from row to row",
        ),
        (
            "backward",
            "time,vx,wz\n# a comment\n0.0,0.2,0\n1.0,0.1,0\n0.25,0.0,0\n",
            Some(5),
            "time 0.25 does not come after the previous row's 1: times must increase from row to row",
        ),
        (
            "header-only",
            "time,vx,wz\n",
            None,
            "has a header but no rows: add one row per change, `time,vx,wz` from time 0",
        ),
        ("header-and-comments", "time,vx\n# nothing yet\n\n", None, "has a header but no rows"),
    ] {
        let (err, file) = replay(tag, csv);
        let at = match line {
            Some(n) => format!("{}:{n}: ", file.display()),
            None => format!("the action file '{}' ", file.display()),
        };
        assert!(err.contains(&format!("{at}{expect}")), "{tag}: {err}");
        std::fs::remove_dir_all(file.parent().unwrap()).ok();
    }
    // Good files still replay.
    let path = manifest("good-actions", "", "[controller]\nkind = \"replay\"\nactions = \"actions.csv\"\n");
    std::fs::write(path.parent().unwrap().join("actions.csv"), "time,vx\n0,0.2\n0.5,0\n").unwrap();
    build(&path).unwrap();
    std::fs::remove_dir_all(path.parent().unwrap()).ok();
}

#[test]
fn joint_noise_is_held_to_a_turn_and_to_the_joints_range() {
    let err = refused("hinge", "", "[reset.joints]\nbase_yaw = 7.0\n");
    assert!(
        err.contains("[reset.joints] base_yaw = 7: a hinge's noise half-width is in radians, at most 6.2832"),
        "{err}"
    );
    let err = refused("limited", "", "[reset.joints]\nbase_x = 1.5\n");
    assert!(
        err.contains(
            "[reset.joints] base_x = 1.5: draws from -1.5 to 1.5 would start outside the joint's range [-1, 2]; \
             give at most 1 (its initial position is 0)"
        ),
        "{err}"
    );
    // An absurd half-width is refused by the manifest, with its bound, before the model is read.
    let err = refused("huge", "", "[reset.joints]\nbase_y = 1e300\n");
    assert!(err.contains("[reset.joints] base_y = 1"), "{err}");
    assert!(err.contains("a number from 0 to 10000 (metres for a slide joint, radians for a hinge)"), "{err}");
}

#[test]
fn a_three_element_waypoint_is_refused_saying_it_takes_two() {
    let controller = "[controller]\nkind = \"waypoints\"\nbody = \"robot\"\npoints = [[1.0, 0.0], [1.0, 1.0, 0.5]]\n\
                      actuators = { x = \"vx\", y = \"vy\" }\n";
    let err = refused("waypoint", "", controller);
    assert!(
        err.contains(
            "[controller] has `points[1]` = [1.0, 1.0, 0.5], an array of 3 elements; expected an array of exactly 2 \
             values, [x, y]"
        ),
        "{err}"
    );
}

#[test]
fn non_finite_mjcf_geometry_is_refused_naming_the_file_and_geom() {
    let err = refused("inf-geom", r#"euler="0 0 nan""#, "");
    assert!(err.contains("scene.xml': geom 1 ('post') has geom_quat[0] = NaN, which is not a finite number"), "{err}");
}

#[test]
fn an_empty_range_of_hits_is_refused_from_the_manifest_and_from_set_config() {
    let path = manifest("empty-range-2", "", "");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("preset = \"velodyne-vlp16\"\n", "preset = \"velodyne-vlp16\"\nmin_range = 5.0\nmax_range = 5.0\n");
    std::fs::write(&path, text).unwrap();
    let err = build(&path).err().unwrap();
    assert!(err.contains("[[lidar]] 0: lidar fields conflict: min_range (5) equals max_range (5)"), "{err}");
    // The same rule on the route gRPC's SetLidarConfig and Python's set_config take.
    let good = manifest("empty-range-3", "", "");
    let mut sim = build(&good).unwrap();
    let config = ScanConfig { min_range: 5.0, max_range: 5.0, ..sim.lidar(0).unwrap().config() };
    let err = sim.lidar_mut(0).unwrap().set_config(config).unwrap_err().to_string();
    assert!(err.contains("min_range (5) equals max_range (5)"), "{err}");
    for p in [path, good] {
        std::fs::remove_dir_all(p.parent().unwrap()).ok();
    }
}

#[test]
fn the_physical_return_model_is_chosen_in_the_manifest_and_bad_terms_are_named() {
    let seed = build(&manifest("seed-model", "", "")).unwrap();
    assert_eq!(seed.physical_model(), None, "the seed's model is the default");
    let path = manifest(
        "physical-model",
        "",
        "[return_model]\nmodel = \"physical\"\n[return_model.physical]\nfresnel = false\nbeam_divergence_deg = 0.3\n\
         footprint_rays = 7\n",
    );
    let physical = build(&path).unwrap().physical_model().expect("the physical model");
    assert!(!physical.fresnel && physical.detection && physical.beam_divergence_deg == 0.3);
    assert_eq!(physical.footprint_rays, 7);
    let unknown = refused("model-name", "", "[return_model]\nmodel = \"fancy\"\n");
    assert!(unknown.contains("fancy") && unknown.contains("physical") && unknown.contains("seed"), "{unknown}");
    let wide = refused(
        "divergence",
        "",
        "[return_model]\nmodel = \"physical\"\n[return_model.physical]\nbeam_divergence_deg = 45.0\n",
    );
    assert!(wide.contains("beam_divergence_deg") && wide.contains("0 to 10"), "{wide}");
    let many = refused(
        "footprints",
        "",
        "[return_model]\nmodel = \"physical\"\n[return_model.physical]\nfootprint_rays = 64\n",
    );
    assert!(many.contains("footprint_rays") && many.contains("1 (off) to 32"), "{many}");
    let stray = refused("stray-table", "", "[return_model.physical]\nnoise = false\n");
    assert!(stray.contains("model = \"physical\""), "{stray}");
    let typo = refused("typo", "", "[return_model]\nmodel = \"physical\"\n[return_model.physical]\nfresnell = false\n");
    assert!(typo.contains("fresnell") && typo.contains("fresnel"), "{typo}");
}
