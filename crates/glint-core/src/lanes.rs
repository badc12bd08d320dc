//! Eight rays at a time on `wide`'s vectors (`f64x8`): loading a block of a packet's lanes,
//! storing it back, and masks from lane bits. `wide` lowers to AVX-512 where the build
//! targets it and to narrower vectors elsewhere; its arithmetic is IEEE's, operation by
//! operation, so lane code gives the one-ray path's values to the bit.

use wide::f64x8;

use crate::packet::PACKET;

/// Lanes per vector.
pub(crate) const LANES: usize = 8;

/// Lanes `LANES * block ..` of `x`.
#[inline(always)]
pub(crate) fn load(x: &[f64; PACKET], block: usize) -> f64x8 {
    let mut v = [0.0; LANES];
    v.copy_from_slice(&x[LANES * block..LANES * (block + 1)]);
    f64x8::new(v)
}

/// Writes `v` into lanes `LANES * block ..` of `x`.
#[inline(always)]
pub(crate) fn store(x: &mut [f64; PACKET], block: usize, v: f64x8) {
    x[LANES * block..LANES * (block + 1)].copy_from_slice(v.as_array());
}

/// The mask of the lanes whose bit is set in `bits` (lane `l`: bit `l`).
#[inline(always)]
pub(crate) fn of_bits(bits: u32) -> f64x8 {
    let on = f64::from_bits(u64::MAX);
    f64x8::new(std::array::from_fn(|l| if (bits >> l) & 1 != 0 { on } else { 0.0 }))
}

/// The least of `v`'s lanes (none NaN), in a tree of comparisons rather than a chain.
#[inline(always)]
pub(crate) fn least(v: f64x8) -> f64 {
    fold_tree(v.to_array(), |a, b| if b < a { b } else { a })
}

/// The greatest of `v`'s lanes (none NaN), in a tree of comparisons rather than a chain.
#[inline(always)]
pub(crate) fn greatest(v: f64x8) -> f64 {
    fold_tree(v.to_array(), |a, b| if b > a { b } else { a })
}

#[inline(always)]
fn fold_tree(x: [f64; LANES], keep: impl Fn(f64, f64) -> f64) -> f64 {
    let four: [f64; 4] = std::array::from_fn(|i| keep(x[i], x[i + 4]));
    keep(keep(four[0], four[2]), keep(four[1], four[3]))
}
