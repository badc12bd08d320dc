//! Lidars that opt in (`see_skins`) meet skins as a real lidar meets a dog's skin: each beam
//! toward the sheet reports it (geom `ngeom + skin`) where it lies, the others what `mj_ray`
//! reports; a lidar on the sheet's own body ignores it with its body; the return model reads
//! the skin's material from the bake; lidars that do not opt in are named in one warning.

use glam::DVec3;
use glint_lidar::{LidarBinding, ScanConfig, ScanPreset};
use glint_sim::{SimOptions, Simulation, Warning};

/// A square skin in the plane x = 2 (|y|, |z| < 1), bound to body `holder`, before a wall at
/// x = 3.9; the lidar's site sits at the origin on body `robot`, or on `holder` when
/// `on_holder`.
fn scene(on_holder: bool) -> String {
    let (robot_site, holder_site) =
        if on_holder { ("", r#"<site name="lidar"/>"#) } else { (r#"<site name="lidar"/>"#, "") };
    format!(
        r#"<mujoco><worldbody>
          <body name="robot">{robot_site}<geom type="sphere" size="0.05" contype="0" conaffinity="0"/></body>
          <body name="holder">{holder_site}<geom type="sphere" size="0.01" pos="0 0 -5" contype="0" conaffinity="0"/></body>
          <geom name="wall" type="box" pos="4 0 0" size="0.1 3 3"/>
        </worldbody>
        <deformable>
          <skin name="sheet" rgba="0.8 0.2 0.2 1" vertex="2 -1 -1  2 1 -1  2 1 1  2 -1 1" face="0 1 2  0 2 3">
            <bone body="holder" bindpos="0 0 0" bindquat="1 0 0 0" vertid="0 1 2 3" vertweight="1 1 1 1"/>
          </skin>
        </deformable></mujoco>"#
    )
}

fn lidar(name: &str, see_skins: bool) -> LidarBinding {
    LidarBinding {
        name: name.into(),
        attach_site: Some("lidar".into()),
        scan: ScanConfig::from_preset(ScanPreset::VelodyneVlp16),
        see_skins,
        ..Default::default()
    }
}

/// A whole revolution of every lidar of `sim`, live.
fn revolve(sim: &mut Simulation) {
    sim.set_lidar_live(true);
    for _ in 0..100 {
        sim.step(None).unwrap();
    }
}

/// Per beam of lidar `index` in world 0: its geom and hit point (`None` on a miss).
fn hits(sim: &Simulation, index: usize) -> Vec<Option<(i32, DVec3)>> {
    let scan = sim.lidar(index).unwrap().scan(0).unwrap();
    let surfaces = scan.surfaces.as_ref().unwrap();
    (0..scan.range.len())
        .map(|k| (scan.geomid[k] >= 0).then(|| (scan.geomid[k], DVec3::from(surfaces.point[k].map(f64::from)))))
        .collect()
}

#[test]
fn a_lidar_that_opts_in_meets_the_skin_where_it_lies() {
    let mut sim =
        Simulation::from_xml(&scene(false), vec![lidar("sees", true), lidar("blind", false)], SimOptions::default())
            .unwrap();
    let warnings: Vec<String> = sim
        .take_warnings()
        .iter()
        .filter(|w| matches!(w, Warning::LidarBlindToSkins { .. }))
        .map(|w| w.to_string())
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("'blind'") && !warnings[0].contains("'sees'"), "{}", warnings[0]);
    assert!(warnings[0].contains("1 skins (sheet)") && warnings[0].contains("see_skins"), "{}", warnings[0]);
    revolve(&mut sim);
    let (ngeom, wall) =
        (sim.scene().ngeom() as i32, sim.scene().geom_name.iter().position(|n| n == "wall").unwrap() as i32);
    let (seen, blind) = (hits(&sim, 0), hits(&sim, 1));
    let on_sheet = |p: DVec3| (p.x - 2.0).abs() < 1e-4 && p.y.abs() < 1.0 && p.z.abs() < 1.0;
    let (mut sheet, mut beyond) = (0, 0);
    for (k, (s, b)) in seen.iter().zip(&blind).enumerate() {
        let Some((bg, bp)) = *b else {
            assert_eq!(*s, None, "beam {k}: away from the wall, nothing is met");
            continue;
        };
        assert_eq!(bg, wall, "beam {k}: the blind lidar sees the wall through the sheet");
        let (g, p) = s.unwrap();
        // Where the beam toward the wall crosses x = 2 decides what the seeing lidar meets.
        let cross = bp * (2.0 / bp.x);
        if cross.y.abs() < 1.0 - 1e-3 && cross.z.abs() < 1.0 - 1e-3 {
            assert_eq!(g, ngeom, "beam {k}: the sheet is geom ngeom + 0");
            assert!(on_sheet(p) && (p - cross).length() < 1e-4, "beam {k}: met at {p}, crosses at {cross}");
            sheet += 1;
        } else if cross.y.abs() > 1.0 + 1e-3 || cross.z.abs() > 1.0 + 1e-3 {
            assert_eq!((g, p), (bg, bp), "beam {k}: past the sheet's edge, as mj_ray");
            beyond += 1;
        }
    }
    assert!(sheet > 100 && beyond > 100, "{sheet} beams on the sheet, {beyond} beside it");

    // The return model reads the skin's own colour from the bake: its echoes are where the
    // clean hits are.
    sim.bake(sim.bake_settings()).unwrap();
    revolve(&mut sim);
    let scan = sim.lidar(0).unwrap().scan(0).unwrap();
    let returns = scan.returns.as_ref().unwrap();
    let on = (0..scan.range.len()).filter(|&k| scan.geomid[k] == ngeom).collect::<Vec<_>>();
    assert!(on.len() > 100);
    for &k in &on {
        assert_eq!(returns.geomid[k], ngeom, "beam {k}: the skin returns an echo");
        assert!((returns.range[k] - scan.range[k]).abs() < 0.2, "beam {k}: {} vs {}", returns.range[k], scan.range[k]);
    }
}

#[test]
fn a_lidar_on_the_skins_own_body_ignores_it_with_its_body() {
    let mut sim = Simulation::from_xml(&scene(true), vec![lidar("sees", true)], SimOptions::default()).unwrap();
    assert!(!sim.take_warnings().iter().any(|w| matches!(w, Warning::LidarBlindToSkins { .. })));
    revolve(&mut sim);
    let wall = sim.scene().geom_name.iter().position(|n| n == "wall").unwrap() as i32;
    assert!(hits(&sim, 0).iter().flatten().all(|&(g, _)| g == wall), "the mount body's skin is ignored");
}
