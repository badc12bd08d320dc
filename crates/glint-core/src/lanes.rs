//! Eight rays at a time on vector lanes ([`Lanes`], one type per instruction set in
//! [`crate::isa`]): loading a block of a packet's lanes, storing it back, and folding the
//! lanes. The lanes' arithmetic is IEEE's, operation by operation, so lane code gives the
//! one-ray path's values to the bit on every instruction set.

use glam::DVec3;

pub(crate) use crate::isa::LANES;
use crate::isa::{Isa, Lanes};
use crate::packet::PACKET;

/// Lanes `LANES * block ..` of `x`.
#[inline(always)]
pub(crate) fn load<I: Isa>(isa: I, x: &[f64; PACKET], block: usize) -> I::F {
    let mut v = [0.0; LANES];
    v.copy_from_slice(&x[LANES * block..LANES * (block + 1)]);
    isa.vector(v)
}

/// Writes `v` into lanes `LANES * block ..` of `x`.
#[inline(always)]
pub(crate) fn store<F: Lanes>(x: &mut [f64; PACKET], block: usize, v: F) {
    x[LANES * block..LANES * (block + 1)].copy_from_slice(&v.to_array());
}

/// The least of `v`'s lanes (none NaN), in a tree of comparisons rather than a chain.
#[inline(always)]
pub(crate) fn least<F: Lanes>(v: F) -> f64 {
    fold_tree(v.to_array(), |a, b| if b < a { b } else { a })
}

/// The greatest of `v`'s lanes (none NaN), in a tree of comparisons rather than a chain.
#[inline(always)]
pub(crate) fn greatest<F: Lanes>(v: F) -> f64 {
    fold_tree(v.to_array(), |a, b| if b > a { b } else { a })
}

/// `v` on every lane, by axis.
#[inline(always)]
pub(crate) fn splat3<I: Isa>(isa: I, v: DVec3) -> [I::F; 3] {
    [isa.splat(v.x), isa.splat(v.y), isa.splat(v.z)]
}

/// `a · b` of vectors by axis on lanes, in glam's order (`a.x b.x + a.y b.y + a.z b.z`), so
/// the values equal the one-ray path's.
#[inline(always)]
pub(crate) fn dot<F: Lanes>(a: &[F; 3], b: &[F; 3]) -> F {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// `a × b` of vectors by axis on lanes, in glam's order.
#[inline(always)]
pub(crate) fn cross<F: Lanes>(a: &[F; 3], b: &[F; 3]) -> [F; 3] {
    [a[1] * b[2] - b[1] * a[2], a[2] * b[0] - b[2] * a[0], a[0] * b[1] - b[0] * a[1]]
}

#[inline(always)]
fn fold_tree(x: [f64; LANES], keep: impl Fn(f64, f64) -> f64) -> f64 {
    let four: [f64; 4] = std::array::from_fn(|i| keep(x[i], x[i + 4]));
    keep(keep(four[0], four[2]), keep(four[1], four[3]))
}
