mod common;
use common::*;
use glint_core::RayFilter;

#[test]
fn explore() {
    let geoms = [
        ("plane", "<geom type='plane' size='3 2 0.1' euler='20 10 5'/>"),
        ("sphere", "<geom type='sphere' size='0.7' pos='0.1 0.2 0.3'/>"),
        ("capsule", "<geom type='capsule' size='0.4 0.6' euler='30 40 50'/>"),
        ("ellipsoid", "<geom type='ellipsoid' size='0.4 0.6 0.9' euler='30 40 50'/>"),
        ("cylinder", "<geom type='cylinder' size='0.5 0.7' euler='10 70 20'/>"),
        ("box", "<geom type='box' size='0.3 0.6 0.9' euler='15 25 35'/>"),
        ("mesh", "<geom type='mesh' mesh='m' euler='15 25 35'/>"),
        ("hfield", "<geom type='hfield' hfield='h' euler='5 10 15'/>"),
    ];
    for (name, g) in geoms {
        let xml = format!(
            "<mujoco><asset><mesh name='m' vertex='0 0 0  1 0 0  0 1 0  0 0 1  1 1 1' scale='1 0.7 1.3'/><hfield name='h' nrow='3' ncol='4' size='1 1.5 0.5 0.2' elevation='0.1 0.5 0.9 0.2  0.3 1 0.2 0.4  0 0.6 0.3 0.8'/></asset><worldbody>{g}</worldbody></mujoco>"
        );
        let s = setup_xml(&xml);
        let mut r = rng(1);
        let rays: Vec<_> = (0..20000)
            .map(|i| {
                let p = if i % 4 == 0 { point_in(&mut r, 0.5) } else { point_in(&mut r, 3.0) };
                let target = point_in(&mut r, 0.8);
                let v = if i % 2 == 0 { (target - p).normalize() } else { unit(&mut r) };
                (p, v)
            })
            .collect();
        let rep = compare(&s, &rays, &RayFilter::default(), -1);
        eprintln!(
            "{name}: {} rays, {} hits, {} ties, {} geom, {} dist, {} normal",
            rep.rays, rep.hits, rep.geom_tie, rep.geom_mismatch, rep.dist_mismatch, rep.normal_mismatch
        );
        for e in rep.examples.iter().take(3) {
            eprintln!("   {e}");
        }
    }
}

#[test]
fn explore_crowded() {
    use glam::DVec3;
    for sc in ["crowded", "primitives", "meshes"] {
        let model =
            glint_mujoco::Model::from_xml_file(format!("{}/../../examples/{sc}.xml", env!("CARGO_MANIFEST_DIR")))
                .unwrap();
        let s = setup(model);
        let o = DVec3::new(0.0, 0.0, 1.5);
        let mut rays = vec![];
        for b in 0..1024 {
            for c in 0..64 {
                let az = std::f64::consts::TAU * b as f64 / 1024.0;
                let el = (-22.5f64 + 45.0 * c as f64 / 63.0).to_radians();
                rays.push((o, DVec3::new(el.cos() * az.cos(), el.cos() * az.sin(), el.sin())));
            }
        }
        let rep = compare(&s, &rays, &RayFilter::default(), -1);
        eprintln!(
            "{sc}: {} rays, {} hits, {} ties, {} geom, {} dist, {} normal",
            rep.rays, rep.hits, rep.geom_tie, rep.geom_mismatch, rep.dist_mismatch, rep.normal_mismatch
        );
        for e in rep.examples.iter().take(5) {
            eprintln!("   {e}");
        }
    }
}
