//! The drawn paths of spatial tendons, as `addSpatialTendonGeoms` in MuJoCo's
//! `engine_vis_visualize.c` makes them: straight pieces between the wrap points of `mj_tendon`,
//! or, for a slack string under gravity, a catenary.

use glam::DVec3;
use glint_core::TendonSegment;
use mujoco_rs::mujoco_c::{mjData, mjModel, mjtConstraint, mjtDisableBit, mjtTrn};

use crate::sensors::arr;

/// MuJoCo's `mjNPOLY`: the high-order stiffness and damping coefficients per tendon.
const NPOLY: usize = 2;
/// MuJoCo's `mjMINVAL`.
const MINVAL: f64 = 1e-15;
/// The default tendon colour, which MuJoCo mixes toward the constraint colour at the limit.
const DEFAULT_GREY: [f32; 4] = [0.5, 0.5, 0.5, 1.0];

/// Replaces `out` with the pieces of every spatial tendon of `d` that MuJoCo draws with its
/// default options (tendon groups 0-2).
pub(crate) fn tendon_segments(m: &mjModel, d: &mjData, out: &mut Vec<TendonSegment>) {
    out.clear();
    let nten = m.ntendon.max(0) as usize;
    if nten == 0 {
        return;
    }
    let group = arr(m.tendon_group, nten);
    let (wrapadr, wrapnum) = (arr(d.ten_wrapadr, nten), arr(d.ten_wrapnum, nten));
    let nwrap = 2 * m.nwrap.max(0) as usize;
    let (wrap_obj, wrap_xpos) = (arr(d.wrap_obj, nwrap), arr(d.wrap_xpos, 3 * nwrap));
    let point = |j: usize| DVec3::new(wrap_xpos[3 * j], wrap_xpos[3 * j + 1], wrap_xpos[3 * j + 2]);
    let width = arr(m.tendon_width, nten);
    let rgba = arr(m.tendon_rgba, 4 * nten);
    let matid = arr(m.tendon_matid, nten);
    for i in 0..nten {
        if !(0..3).contains(&group[i].clamp(0, 5)) {
            continue;
        }
        let mut color = [rgba[4 * i], rgba[4 * i + 1], rgba[4 * i + 2], rgba[4 * i + 3]];
        // mjv_isCatenary does not ask for a spatial tendon: for a fixed one it would hang a
        // string between wrap points it does not have (stale memory). A path of two points
        // is what a catenary hangs from.
        if let Some(length) = catenary_length(m, d, i).filter(|_| wrapnum[i] == 2) {
            let x0 = point(wrapadr[i] as usize);
            let x1 = point(wrapadr[i] as usize + 1);
            let ncatenary = (m.vis.quality.numslices as usize + 1).min(100);
            let points = catenary(x0, x1, gravity(m), length, ncatenary);
            for p in points.windows(2) {
                out.push(TendonSegment { tendon: i, from: p[0], to: p[1], width: width[i], rgba: color });
            }
            continue;
        }
        if matid[i] == -1 && color == DEFAULT_GREY {
            color = mixed_toward_constraint(m, d, i, color);
        }
        let (start, n) = (wrapadr[i].max(0) as usize, wrapnum[i].max(0) as usize);
        for j in start..(start + n).saturating_sub(1) {
            if wrap_obj[j] == -2 || wrap_obj[j + 1] == -2 {
                continue;
            }
            // Thinner inside a wrapping object.
            let w = if wrap_obj[j] >= 0 && wrap_obj[j + 1] >= 0 { 0.5 * width[i] } else { width[i] };
            out.push(TendonSegment { tendon: i, from: point(j), to: point(j + 1), width: w, rgba: color });
        }
    }
}

fn gravity(m: &mjModel) -> DVec3 {
    DVec3::from(m.opt.gravity)
}

/// `color` mixed toward the model's constraint colour by the impedance of tendon `i`'s
/// limit constraint, where it is active.
fn mixed_toward_constraint(m: &mjModel, d: &mjData, i: usize, mut color: [f32; 4]) -> [f32; 4] {
    let nefc = d.nefc.max(0) as usize;
    let (kind, id, kbip) = (arr(d.efc_type, nefc), arr(d.efc_id, nefc), arr(d.efc_KBIP, 4 * nefc));
    let start = (d.ne + d.nf).max(0) as usize;
    let end = (start + d.nl.max(0) as usize).min(nefc);
    let mut imp = 0.0;
    for k in start..end {
        if kind[k] == mjtConstraint::mjCNSTR_LIMIT_TENDON as i32 && id[k] == i as i32 {
            imp = kbip[4 * k + 2];
        }
    }
    let constraint = m.vis.rgba.constraint;
    for c in 0..3 {
        color[c] = ((1.0 - imp) * f64::from(color[c]) + imp * f64::from(constraint[c])) as f32;
    }
    color
}

/// The length tendon `i` hangs with where MuJoCo draws it as a catenary (`mjv_isCatenary`):
/// two sites, gravity on, a deadband spring or a slack length limit, no damping, friction or
/// actuator.
fn catenary_length(m: &mjModel, d: &mjData, i: usize) -> Option<f64> {
    let nten = m.ntendon as usize;
    let poly = |p: *const f64| arr(p, NPOLY * nten)[NPOLY * i..NPOLY * (i + 1)].iter().any(|&c| c != 0.0);
    let has_stiffness = arr(m.tendon_stiffness, nten)[i] != 0.0 || poly(m.tendon_stiffnesspoly);
    let spring = &arr(m.tendon_lengthspring, 2 * nten)[2 * i..2 * i + 2];
    let range = &arr(m.tendon_range, 2 * nten)[2 * i..2 * i + 2];
    let limited_spring = has_stiffness && spring[0] == 0.0 && spring[1] > 0.0;
    let limited_constraint =
        !has_stiffness && arr(m.tendon_limited, nten)[i] && range[0] == 0.0 && arr(d.ten_length, nten)[i] < range[1];
    let has_damping = arr(m.tendon_damping, nten)[i] != 0.0 || poly(m.tendon_dampingpoly);
    let gravity_on = m.opt.disableflags & mjtDisableBit::mjDSBL_GRAVITY as i32 == 0;
    let drawn = gravity_on
        && gravity(m).length() > MINVAL
        && arr(m.tendon_num, nten)[i] == 2
        && limited_spring != limited_constraint
        && !has_damping
        && arr(m.tendon_frictionloss, nten)[i] == 0.0;
    let nu = m.nu.max(0) as usize;
    let (trntype, trnid) = (arr(m.actuator_trntype, nu), arr(m.actuator_trnid, 2 * nu));
    let actuated = (0..nu).any(|j| trntype[j] == mjtTrn::mjTRN_TENDON as i32 && trnid[2 * j] == i as i32);
    (drawn && !actuated).then(|| if limited_constraint { range[1] } else { spring[1] })
}

/// Points along a string of `length` hanging between `x0` and `x1` under `gravity`
/// (`mjv_catenary`): the two ends when it is taut, a bead's three points when it hangs
/// nearly vertically, else `n` points of the catenary.
pub(crate) fn catenary(x0: DVec3, x1: DVec3, gravity: DVec3, length: f64, n: usize) -> Vec<DVec3> {
    if x0.distance(x1) > length {
        return vec![x0, x1];
    }
    let up = (-gravity).normalize_or_zero();
    let x01 = x1 - x0;
    let across = x01 - up * up.dot(x01);
    let across = if across.length() < MINVAL { DVec3::ZERO } else { across.normalize() };
    let (h, v) = (x01.dot(across), x01.dot(up));
    if length > 100.0 * h {
        let d_up = -0.5 * ((length * length - h * h).sqrt() - v);
        let d_across = h * d_up / (2.0 * d_up - v);
        return vec![x0, x0 + up * d_up + across * d_across, x1];
    }
    let bh = solve_catenary(v, h, length) * h;
    let h_offset = -0.5 * (((length + v) / (length - v)).ln() * bh - h);
    let v_offset = -(h_offset / bh).cosh() * bh;
    let mut points = vec![x0];
    for i in 1..n - 1 {
        let horizontal = i as f64 * h / n as f64;
        let vertical = bh * ((horizontal - h_offset) / bh).cosh() + v_offset;
        points.push(x0 + across * horizontal + up * vertical);
    }
    points.push(x1);
    points
}

/// The residual of the catenary equation in MuJoCo's change of variables, and its gradient.
fn catenary_residual(b: f64, intercept: f64) -> (f64, f64) {
    let a = 0.5 / b;
    let (sinh, cosh) = (a.sinh(), a.cosh());
    let grad = (a * cosh - sinh) * (2.0 * b * sinh - 1.0).powf(-1.5);
    (1.0 / (2.0 * b * sinh - 1.0).sqrt() - intercept, grad)
}

/// MuJoCo's `solve_catenary`: Newton steps with a backtracking line search.
fn solve_catenary(v: f64, h: f64, length: f64) -> f64 {
    let intercept = 1.0 / (((length * length - v * v).sqrt() / h) - 1.0).sqrt();
    let mut b = intercept / 24f64.sqrt();
    for _ in 0..50 {
        let (res, grad) = catenary_residual(b, intercept);
        if res.abs() < 1e-9 {
            break;
        }
        let mut step = -res / grad;
        for _ in 0..10 {
            if catenary_residual(b + step, intercept).0.abs() < res.abs() {
                break;
            }
            step *= 0.5;
        }
        b += step;
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_tendon_with_a_slack_limit_has_no_path_to_draw() {
        // Two joints, limited from 0, no stiffness: mjv_isCatenary's conditions hold, but a
        // fixed tendon has no wrap points to hang a string between.
        let xml = r#"<mujoco><worldbody><body><joint name="a" axis="0 0 1"/><joint name="b" axis="0 1 0"/>
            <geom size="0.1"/></body></worldbody>
            <tendon><fixed limited="true" range="0 1"><joint joint="a" coef="1"/><joint joint="b" coef="1"/></fixed>
            </tendon></mujoco>"#;
        let model = crate::Model::from_xml_str(xml).unwrap();
        let batch = crate::WorldBatch::new(&model, 1).unwrap();
        assert!(batch.poses().tendon_segments[0].is_empty());
    }

    #[test]
    fn a_taut_string_is_straight_and_a_slack_one_hangs_to_its_length() {
        let g = DVec3::new(0.0, 0.0, -9.81);
        let (x0, x1) = (DVec3::ZERO, DVec3::new(1.0, 0.0, 0.0));
        assert_eq!(catenary(x0, x1, g, 0.9, 20), vec![x0, x1]);
        let hanging = catenary(x0, x1, g, 1.5, 40);
        assert_eq!(hanging.len(), 40);
        assert!(hanging.iter().all(|p| p.z <= 1e-12 && p.y == 0.0));
        // Nearly its length along the points (the last piece spans a wider step).
        let along: f64 = hanging.windows(2).map(|p| p[0].distance(p[1])).sum();
        assert!((along - 1.5).abs() < 0.05, "{along}");
        let bead = catenary(x0, DVec3::new(0.001, 0.0, 0.0), g, 1.0, 40);
        assert_eq!(bead.len(), 3);
        assert!((bead[1].z + 0.5).abs() < 1e-3, "{:?}", bead[1]);
    }
}
