//! Which geoms rays can hit: MuJoCo's group and static filters, and the tree a lidar ignores.

use crate::Scene;

/// Number of geom groups a ray filter distinguishes (MuJoCo's `mjNGROUP`).
pub const NGROUP: usize = 6;

/// Which geoms rays can hit, as `mj_ray`'s `geomgroup` and `flg_static` arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RayFilter {
    /// Groups whose geoms are included (groups outside 0..6 count as the nearest end);
    /// `None` includes every group.
    pub geomgroup: Option<[bool; NGROUP]>,
    /// Whether static geoms (on bodies welded to the world) are included.
    pub flg_static: bool,
    /// A root body (MuJoCo's `body_rootid`) whose whole kinematic tree rays pass through, or
    /// `-1`. Not an `mj_ray` argument: lidars use it to ignore their own robot.
    pub exclude_tree: i32,
}

impl Default for RayFilter {
    fn default() -> Self {
        RayFilter { geomgroup: None, flg_static: true, exclude_tree: -1 }
    }
}

impl RayFilter {
    /// A filter from a bit mask over the six groups (bit `i` includes group `i`).
    pub fn from_group_mask(mask: u8, flg_static: bool) -> Self {
        RayFilter { geomgroup: Some(std::array::from_fn(|i| mask & (1 << i) != 0)), flg_static, exclude_tree: -1 }
    }

    /// Per geom, whether it passes the filter's group, tree and static tests.
    pub(super) fn eligible(&self, scene: &Scene) -> Vec<bool> {
        (0..scene.ngeom())
            .map(|g| {
                let body = scene.geom_bodyid[g] as usize;
                let group_ok =
                    self.geomgroup.is_none_or(|gg| gg[scene.geom_group[g].clamp(0, NGROUP as i32 - 1) as usize]);
                let tree_ok = self.exclude_tree < 0 || scene.body_rootid[body] != self.exclude_tree;
                group_ok && tree_ok && (self.flg_static || scene.body_weldid[body] != 0)
            })
            .collect()
    }
}
