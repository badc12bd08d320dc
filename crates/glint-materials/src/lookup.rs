//! Where a hit finds its near-infrared material: the interface every sensor reads materials
//! through ([`crate::Bake`] implements it).

use glam::DVec3;

use crate::NirMaterial;

/// The NIR material at a hit, `None` where it is not resolvable (a hole in the bake), as an
/// index into a palette of the materials the lookup hands out.
pub trait MaterialLookup: Send + Sync {
    /// Every material [`MaterialLookup::index_at`] may point to.
    fn palette(&self) -> &[NirMaterial];

    /// The index in [`MaterialLookup::palette`] of the material of geom `geom` at world point
    /// `point`.
    fn index_at(&self, geom: usize, point: DVec3) -> Option<usize>;

    /// The material of geom `geom` at world point `point`.
    fn material_at(&self, geom: usize, point: DVec3) -> Option<NirMaterial> {
        self.palette().get(self.index_at(geom, point)?).copied()
    }

    /// [`MaterialLookup::index_at`] of many hits: `out` gets, per hit `i` on geom `geom[i]`
    /// (`-1`: none) at `origin + dir[i] · dist[i]`, the index as a `u32`, or `u32::MAX` for
    /// none. One call per batch of a scan, so that a lookup can inline its own.
    fn indices_at(&self, origin: DVec3, dir: &[DVec3], dist: &[f64], geom: &[i32], out: &mut Vec<u32>) {
        out.clear();
        out.extend(dir.iter().zip(dist).zip(geom).map(|((&d, &t), &g)| {
            let index = usize::try_from(g).ok().and_then(|g| self.index_at(g, origin + d * t));
            index.map_or(u32::MAX, |i| i as u32)
        }));
    }
}
