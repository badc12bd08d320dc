//! The instruction sets the lane loops run on, and the choice among them at run time.
//!
//! glint is built for x86-64-v2 (SSE4.2), so that one binary and one Python wheel run on any
//! x86-64 CPU. The packet casts, whose box and slab tests run eight `f64` lanes at a time, are
//! compiled twice more: for AVX2 (x86-64-v3) and for AVX-512 (x86-64-v4), through `pulp`'s
//! tokens. A token exists only once the CPU was found to have its features; the code it runs
//! ([`Isa::run`]) is compiled with them, and its intrinsics are safe to call. Every path makes
//! the same IEEE operations one at a time (no fused multiply-add), so the choice changes the
//! speed only, never a bit of an answer.
//!
//! `GLINT_ISA` (`base`, `avx2` or `avx512`) caps the choice for a process: to compare the
//! paths in tests, or to measure one.

use std::ops::{Add, BitAnd, BitOr, Div, Mul, Neg, Not, Sub};
use std::sync::OnceLock;

use wide::f64x8;

/// Lanes per vector.
pub(crate) const LANES: usize = 8;

/// An instruction set the lane loops are compiled for. A value is the proof that the CPU
/// running the process has it.
pub(crate) trait Isa: Copy {
    /// Eight `f64` lanes.
    type F: Lanes<M = Self::M>;
    /// A mask of eight lanes.
    type M: Mask<F = Self::F>;
    /// `x` in every lane.
    fn splat(self, x: f64) -> Self::F;
    /// The lanes `x`.
    fn vector(self, x: [f64; LANES]) -> Self::F;
    /// The mask of the lanes whose bit is set in `bits` (lane `l`: bit `l`).
    fn of_bits(self, bits: u32) -> Self::M;
    /// Runs `f` compiled for this instruction set: what `f` inlines (the lane operations
    /// among it) uses its instructions; the functions it calls out of line do not. So `f` is
    /// a closure marked `#[inline(always)]`: one left out of line would be compiled for the
    /// build's CPU, and each lane operation in it would become a call (`nm` on the binary
    /// then shows `core_arch` functions).
    fn run<R>(self, f: impl FnOnce() -> R) -> R;
}

/// Eight `f64` lanes, with `wide`'s operations and their IEEE results.
pub(crate) trait Lanes:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self> + Neg<Output = Self>
{
    /// Its masks.
    type M: Mask<F = Self>;
    /// The lanes as an array.
    fn to_array(self) -> [f64; LANES];
    /// `|x|` per lane.
    fn abs(self) -> Self;
    /// The square root per lane.
    fn sqrt(self) -> Self;
    /// Lanes whose sign bit is set (`-0.0` too).
    fn is_sign_negative(self) -> Self::M;
    /// `self < o` per lane (false where either is NaN); likewise the other comparisons.
    fn simd_lt(self, o: Self) -> Self::M;
    /// `self <= o` per lane.
    fn simd_le(self, o: Self) -> Self::M;
    /// `self > o` per lane.
    fn simd_gt(self, o: Self) -> Self::M;
    /// `self >= o` per lane.
    fn simd_ge(self, o: Self) -> Self::M;
    /// `self == o` per lane.
    fn simd_eq(self, o: Self) -> Self::M;
    /// The hardware's minimum, `self < o ? self : o` (so `o` where either is NaN).
    fn fast_min(self, o: Self) -> Self;
    /// The hardware's maximum, `self > o ? self : o` (so `o` where either is NaN).
    fn fast_max(self, o: Self) -> Self;
}

/// A mask of eight lanes.
pub(crate) trait Mask: Copy + BitAnd<Output = Self> + BitOr<Output = Self> + Not<Output = Self> {
    /// The lanes it selects among.
    type F;
    /// `t` in the lanes set, `f` in the others.
    fn select(self, t: Self::F, f: Self::F) -> Self::F;
    /// Bit `l` set for each lane `l` set.
    fn to_bitmask(self) -> u32;
}

/// The instruction set the build targets (SSE4.2 on x86-64), on `wide`'s vectors; it needs
/// no proof.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Base;

impl Isa for Base {
    type F = f64x8;
    type M = f64x8;
    #[inline(always)]
    fn splat(self, x: f64) -> f64x8 {
        f64x8::splat(x)
    }
    #[inline(always)]
    fn vector(self, x: [f64; LANES]) -> f64x8 {
        f64x8::new(x)
    }
    #[inline(always)]
    fn of_bits(self, bits: u32) -> f64x8 {
        let on = f64::from_bits(u64::MAX);
        f64x8::new(std::array::from_fn(|l| if (bits >> l) & 1 != 0 { on } else { 0.0 }))
    }
    #[inline(always)]
    fn run<R>(self, f: impl FnOnce() -> R) -> R {
        f()
    }
}

impl Lanes for f64x8 {
    type M = f64x8;
    #[inline(always)]
    fn to_array(self) -> [f64; LANES] {
        f64x8::to_array(self)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        f64x8::abs(self)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        f64x8::sqrt(self)
    }
    #[inline(always)]
    fn is_sign_negative(self) -> Self {
        f64x8::is_sign_negative(self)
    }
    #[inline(always)]
    fn simd_lt(self, o: Self) -> Self {
        f64x8::simd_lt(self, o)
    }
    #[inline(always)]
    fn simd_le(self, o: Self) -> Self {
        f64x8::simd_le(self, o)
    }
    #[inline(always)]
    fn simd_gt(self, o: Self) -> Self {
        f64x8::simd_gt(self, o)
    }
    #[inline(always)]
    fn simd_ge(self, o: Self) -> Self {
        f64x8::simd_ge(self, o)
    }
    #[inline(always)]
    fn simd_eq(self, o: Self) -> Self {
        f64x8::simd_eq(self, o)
    }
    #[inline(always)]
    fn fast_min(self, o: Self) -> Self {
        f64x8::fast_min(self, o)
    }
    #[inline(always)]
    fn fast_max(self, o: Self) -> Self {
        f64x8::fast_max(self, o)
    }
}

impl Mask for f64x8 {
    type F = f64x8;
    #[inline(always)]
    fn select(self, t: f64x8, f: f64x8) -> f64x8 {
        f64x8::select(self, t, f)
    }
    #[inline(always)]
    fn to_bitmask(self) -> u32 {
        f64x8::to_bitmask(self)
    }
}

/// The instruction sets this CPU offers the lane loops, within `GLINT_ISA`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Chosen {
    /// The build's own.
    Base(Base),
    /// AVX2, FMA, BMI1/2, LZCNT (x86-64-v3).
    #[cfg(target_arch = "x86_64")]
    Avx2(x86::Avx2),
    /// AVX-512 F, BW, CD, DQ, VL (x86-64-v4).
    #[cfg(target_arch = "x86_64")]
    Avx512(x86::Avx512),
}

impl Chosen {
    /// The set's name, as `GLINT_ISA` spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Chosen::Base(_) => "base",
            #[cfg(target_arch = "x86_64")]
            Chosen::Avx2(_) => "avx2",
            #[cfg(target_arch = "x86_64")]
            Chosen::Avx512(_) => "avx512",
        }
    }
}

/// The widest instruction set the CPU has, capped by `GLINT_ISA`; found once per process.
#[inline]
pub(crate) fn chosen() -> Chosen {
    static CHOSEN: OnceLock<Chosen> = OnceLock::new();
    *CHOSEN.get_or_init(|| detect(std::env::var("GLINT_ISA").ok().as_deref()))
}

/// The name of the instruction set glint's lane loops use in this process (`base`, `avx2` or
/// `avx512`): the widest the CPU has, or narrower where `GLINT_ISA` says so.
pub fn lane_isa() -> &'static str {
    chosen().name()
}

/// The widest set the CPU has, no wider than `cap` (a `GLINT_ISA` value; anything else is no
/// cap).
fn detect(cap: Option<&str>) -> Chosen {
    #[cfg(target_arch = "x86_64")]
    {
        let rank = match cap.map(str::trim) {
            Some("base") => 0,
            Some("avx2") => 1,
            _ => 2,
        };
        if rank >= 2
            && let Some(isa) = x86::Avx512::new()
        {
            return Chosen::Avx512(isa);
        }
        if rank >= 1
            && let Some(isa) = x86::Avx2::new()
        {
            return Chosen::Avx2(isa);
        }
    }
    let _ = cap;
    Chosen::Base(Base)
}

/// Binds `$isa` to the chosen instruction set's token and evaluates `$body`, once compiled
/// for each set: `$body` calls the lane loops generic over [`Isa`], which run their bodies
/// through [`Isa::run`].
macro_rules! with_isa {
    ($isa:ident => $body:expr) => {
        $crate::isa::with_chosen!($crate::isa::chosen(), $isa => $body)
    };
}
pub(crate) use with_isa;

/// [`with_isa!`] for the set `$chosen`.
macro_rules! with_chosen {
    ($chosen:expr, $isa:ident => $body:expr) => {
        match $chosen {
            $crate::isa::Chosen::Base($isa) => $body,
            #[cfg(target_arch = "x86_64")]
            $crate::isa::Chosen::Avx2($isa) => $body,
            #[cfg(target_arch = "x86_64")]
            $crate::isa::Chosen::Avx512($isa) => $body,
        }
    };
}
pub(crate) use with_chosen;

/// Every instruction set this CPU has, the build's own first.
#[cfg(test)]
pub(crate) fn all() -> Vec<Chosen> {
    let mut all = vec![Chosen::Base(Base)];
    #[cfg(target_arch = "x86_64")]
    {
        all.extend(x86::Avx2::new().map(Chosen::Avx2));
        all.extend(x86::Avx512::new().map(Chosen::Avx512));
    }
    all
}

/// Evaluates `$body` once for each instruction set this CPU has, with `$isa` bound to its
/// token (tests: every path gives the same bits).
#[cfg(test)]
macro_rules! for_each_isa {
    ($isa:ident => $body:expr) => {
        for chosen in $crate::isa::all() {
            $crate::isa::with_chosen!(chosen, $isa => $body)
        }
    };
}
#[cfg(test)]
pub(crate) use for_each_isa;

/// The AVX2 and AVX-512 sets, on `pulp`'s tokens and the same intrinsics `wide` uses where
/// the build targets them.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{__m256d, __m512d, __mmask8};
    use std::ops::{Add, BitAnd, BitOr, Div, Mul, Neg, Not, Sub};

    use pulp::x86::{V3, V4};

    use super::{Isa, LANES, Lanes, Mask};

    /// AVX2 and the rest of x86-64-v3.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Avx2(V3);

    impl Avx2 {
        /// The token, where the CPU has the set.
        pub(crate) fn new() -> Option<Avx2> {
            V3::try_new().map(Avx2)
        }
    }

    /// Eight lanes as two AVX vectors.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct F4x2 {
        s: V3,
        v: [__m256d; 2],
    }

    /// A mask of eight lanes as two AVX vectors (all bits set in a lane that is set).
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct M4x2 {
        s: V3,
        v: [__m256d; 2],
    }

    impl F4x2 {
        #[inline(always)]
        fn map(self, o: F4x2, f: impl Fn(V3, __m256d, __m256d) -> __m256d) -> F4x2 {
            F4x2 { s: self.s, v: [f(self.s, self.v[0], o.v[0]), f(self.s, self.v[1], o.v[1])] }
        }
        #[inline(always)]
        fn cmp<const P: i32>(self, o: F4x2) -> M4x2 {
            let s = self.s;
            M4x2 { s, v: [s.avx._mm256_cmp_pd::<P>(self.v[0], o.v[0]), s.avx._mm256_cmp_pd::<P>(self.v[1], o.v[1])] }
        }
    }

    impl Isa for Avx2 {
        type F = F4x2;
        type M = M4x2;
        #[inline(always)]
        fn splat(self, x: f64) -> F4x2 {
            let v = self.0.avx._mm256_set1_pd(x);
            F4x2 { s: self.0, v: [v, v] }
        }
        #[inline(always)]
        fn vector(self, x: [f64; LANES]) -> F4x2 {
            F4x2 { s: self.0, v: pulp::cast(x) }
        }
        #[inline(always)]
        fn of_bits(self, bits: u32) -> M4x2 {
            let on = f64::from_bits(u64::MAX);
            let lanes: [f64; LANES] = std::array::from_fn(|l| if (bits >> l) & 1 != 0 { on } else { 0.0 });
            M4x2 { s: self.0, v: pulp::cast(lanes) }
        }
        #[inline(always)]
        fn run<R>(self, f: impl FnOnce() -> R) -> R {
            self.0.vectorize(f)
        }
    }

    impl Add for F4x2 {
        type Output = F4x2;
        #[inline(always)]
        fn add(self, o: F4x2) -> F4x2 {
            self.map(o, |s, a, b| s.avx._mm256_add_pd(a, b))
        }
    }
    impl Sub for F4x2 {
        type Output = F4x2;
        #[inline(always)]
        fn sub(self, o: F4x2) -> F4x2 {
            self.map(o, |s, a, b| s.avx._mm256_sub_pd(a, b))
        }
    }
    impl Mul for F4x2 {
        type Output = F4x2;
        #[inline(always)]
        fn mul(self, o: F4x2) -> F4x2 {
            self.map(o, |s, a, b| s.avx._mm256_mul_pd(a, b))
        }
    }
    impl Div for F4x2 {
        type Output = F4x2;
        #[inline(always)]
        fn div(self, o: F4x2) -> F4x2 {
            self.map(o, |s, a, b| s.avx._mm256_div_pd(a, b))
        }
    }
    impl Neg for F4x2 {
        type Output = F4x2;
        #[inline(always)]
        fn neg(self) -> F4x2 {
            let sign = self.s.avx._mm256_set1_pd(-0.0);
            F4x2 { s: self.s, v: self.v.map(|a| self.s.avx._mm256_xor_pd(a, sign)) }
        }
    }

    impl Lanes for F4x2 {
        type M = M4x2;
        #[inline(always)]
        fn to_array(self) -> [f64; LANES] {
            pulp::cast(self.v)
        }
        #[inline(always)]
        fn abs(self) -> F4x2 {
            let magnitude = self.s.avx._mm256_set1_pd(f64::from_bits(u64::MAX >> 1));
            F4x2 { s: self.s, v: self.v.map(|a| self.s.avx._mm256_and_pd(a, magnitude)) }
        }
        #[inline(always)]
        fn sqrt(self) -> F4x2 {
            F4x2 { s: self.s, v: self.v.map(|a| self.s.avx._mm256_sqrt_pd(a)) }
        }
        #[inline(always)]
        fn is_sign_negative(self) -> M4x2 {
            // The sign bit spread over the lane: an arithmetic shift would need AVX-512, a
            // comparison of the lane as an integer with zero does not.
            let s = self.s;
            let zero = s.avx._mm256_setzero_si256();
            let v = self
                .v
                .map(|a| s.avx._mm256_castsi256_pd(s.avx2._mm256_cmpgt_epi64(zero, s.avx._mm256_castpd_si256(a))));
            M4x2 { s, v }
        }
        #[inline(always)]
        fn simd_lt(self, o: F4x2) -> M4x2 {
            self.cmp::<{ std::arch::x86_64::_CMP_LT_OQ }>(o)
        }
        #[inline(always)]
        fn simd_le(self, o: F4x2) -> M4x2 {
            self.cmp::<{ std::arch::x86_64::_CMP_LE_OQ }>(o)
        }
        #[inline(always)]
        fn simd_gt(self, o: F4x2) -> M4x2 {
            self.cmp::<{ std::arch::x86_64::_CMP_GT_OQ }>(o)
        }
        #[inline(always)]
        fn simd_ge(self, o: F4x2) -> M4x2 {
            self.cmp::<{ std::arch::x86_64::_CMP_GE_OQ }>(o)
        }
        #[inline(always)]
        fn simd_eq(self, o: F4x2) -> M4x2 {
            self.cmp::<{ std::arch::x86_64::_CMP_EQ_OQ }>(o)
        }
        #[inline(always)]
        fn fast_min(self, o: F4x2) -> F4x2 {
            self.map(o, |s, a, b| s.avx._mm256_min_pd(a, b))
        }
        #[inline(always)]
        fn fast_max(self, o: F4x2) -> F4x2 {
            self.map(o, |s, a, b| s.avx._mm256_max_pd(a, b))
        }
    }

    impl M4x2 {
        #[inline(always)]
        fn map(self, o: M4x2, f: impl Fn(V3, __m256d, __m256d) -> __m256d) -> M4x2 {
            M4x2 { s: self.s, v: [f(self.s, self.v[0], o.v[0]), f(self.s, self.v[1], o.v[1])] }
        }
    }
    impl BitAnd for M4x2 {
        type Output = M4x2;
        #[inline(always)]
        fn bitand(self, o: M4x2) -> M4x2 {
            self.map(o, |s, a, b| s.avx._mm256_and_pd(a, b))
        }
    }
    impl BitOr for M4x2 {
        type Output = M4x2;
        #[inline(always)]
        fn bitor(self, o: M4x2) -> M4x2 {
            self.map(o, |s, a, b| s.avx._mm256_or_pd(a, b))
        }
    }
    impl Not for M4x2 {
        type Output = M4x2;
        #[inline(always)]
        fn not(self) -> M4x2 {
            let on = self.s.avx._mm256_set1_pd(f64::from_bits(u64::MAX));
            M4x2 { s: self.s, v: self.v.map(|a| self.s.avx._mm256_xor_pd(a, on)) }
        }
    }
    impl Mask for M4x2 {
        type F = F4x2;
        #[inline(always)]
        fn select(self, t: F4x2, f: F4x2) -> F4x2 {
            let s = self.s;
            F4x2 {
                s,
                v: [
                    s.avx._mm256_blendv_pd(f.v[0], t.v[0], self.v[0]),
                    s.avx._mm256_blendv_pd(f.v[1], t.v[1], self.v[1]),
                ],
            }
        }
        #[inline(always)]
        fn to_bitmask(self) -> u32 {
            let s = self.s;
            let (lo, hi) = (s.avx._mm256_movemask_pd(self.v[0]), s.avx._mm256_movemask_pd(self.v[1]));
            (lo | (hi << 4)) as u32
        }
    }

    /// AVX-512 F, BW, CD, DQ and VL (x86-64-v4).
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Avx512(V4);

    impl Avx512 {
        /// The token, where the CPU has the set.
        pub(crate) fn new() -> Option<Avx512> {
            V4::try_new().map(Avx512)
        }
    }

    /// Eight lanes in one AVX-512 vector.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct F8 {
        s: V4,
        v: __m512d,
    }

    /// A mask of eight lanes in a mask register.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct M8 {
        s: V4,
        k: __mmask8,
    }

    impl F8 {
        #[inline(always)]
        fn with(self, v: __m512d) -> F8 {
            F8 { s: self.s, v }
        }
        #[inline(always)]
        fn cmp<const P: i32>(self, o: F8) -> M8 {
            M8 { s: self.s, k: self.s.avx512f._mm512_cmp_pd_mask::<P>(self.v, o.v) }
        }
    }

    impl Isa for Avx512 {
        type F = F8;
        type M = M8;
        #[inline(always)]
        fn splat(self, x: f64) -> F8 {
            F8 { s: self.0, v: self.0.avx512f._mm512_set1_pd(x) }
        }
        #[inline(always)]
        fn vector(self, x: [f64; LANES]) -> F8 {
            F8 { s: self.0, v: pulp::cast(x) }
        }
        #[inline(always)]
        fn of_bits(self, bits: u32) -> M8 {
            M8 { s: self.0, k: bits as u8 }
        }
        #[inline(always)]
        fn run<R>(self, f: impl FnOnce() -> R) -> R {
            self.0.vectorize(f)
        }
    }

    impl Add for F8 {
        type Output = F8;
        #[inline(always)]
        fn add(self, o: F8) -> F8 {
            self.with(self.s.avx512f._mm512_add_pd(self.v, o.v))
        }
    }
    impl Sub for F8 {
        type Output = F8;
        #[inline(always)]
        fn sub(self, o: F8) -> F8 {
            self.with(self.s.avx512f._mm512_sub_pd(self.v, o.v))
        }
    }
    impl Mul for F8 {
        type Output = F8;
        #[inline(always)]
        fn mul(self, o: F8) -> F8 {
            self.with(self.s.avx512f._mm512_mul_pd(self.v, o.v))
        }
    }
    impl Div for F8 {
        type Output = F8;
        #[inline(always)]
        fn div(self, o: F8) -> F8 {
            self.with(self.s.avx512f._mm512_div_pd(self.v, o.v))
        }
    }
    impl Neg for F8 {
        type Output = F8;
        #[inline(always)]
        fn neg(self) -> F8 {
            let sign = self.s.avx512f._mm512_set1_pd(-0.0);
            self.with(self.s.avx512dq._mm512_xor_pd(self.v, sign))
        }
    }

    impl Lanes for F8 {
        type M = M8;
        #[inline(always)]
        fn to_array(self) -> [f64; LANES] {
            pulp::cast(self.v)
        }
        #[inline(always)]
        fn abs(self) -> F8 {
            self.with(self.s.avx512f._mm512_abs_pd(self.v))
        }
        #[inline(always)]
        fn sqrt(self) -> F8 {
            self.with(self.s.avx512f._mm512_sqrt_pd(self.v))
        }
        #[inline(always)]
        fn is_sign_negative(self) -> M8 {
            let s = self.s;
            M8 { s, k: s.avx512dq._mm512_movepi64_mask(s.avx512f._mm512_castpd_si512(self.v)) }
        }
        #[inline(always)]
        fn simd_lt(self, o: F8) -> M8 {
            self.cmp::<{ std::arch::x86_64::_CMP_LT_OQ }>(o)
        }
        #[inline(always)]
        fn simd_le(self, o: F8) -> M8 {
            self.cmp::<{ std::arch::x86_64::_CMP_LE_OQ }>(o)
        }
        #[inline(always)]
        fn simd_gt(self, o: F8) -> M8 {
            self.cmp::<{ std::arch::x86_64::_CMP_GT_OQ }>(o)
        }
        #[inline(always)]
        fn simd_ge(self, o: F8) -> M8 {
            self.cmp::<{ std::arch::x86_64::_CMP_GE_OQ }>(o)
        }
        #[inline(always)]
        fn simd_eq(self, o: F8) -> M8 {
            self.cmp::<{ std::arch::x86_64::_CMP_EQ_OQ }>(o)
        }
        #[inline(always)]
        fn fast_min(self, o: F8) -> F8 {
            self.with(self.s.avx512f._mm512_min_pd(self.v, o.v))
        }
        #[inline(always)]
        fn fast_max(self, o: F8) -> F8 {
            self.with(self.s.avx512f._mm512_max_pd(self.v, o.v))
        }
    }

    impl BitAnd for M8 {
        type Output = M8;
        #[inline(always)]
        fn bitand(self, o: M8) -> M8 {
            M8 { s: self.s, k: self.k & o.k }
        }
    }
    impl BitOr for M8 {
        type Output = M8;
        #[inline(always)]
        fn bitor(self, o: M8) -> M8 {
            M8 { s: self.s, k: self.k | o.k }
        }
    }
    impl Not for M8 {
        type Output = M8;
        #[inline(always)]
        fn not(self) -> M8 {
            M8 { s: self.s, k: !self.k }
        }
    }
    impl Mask for M8 {
        type F = F8;
        #[inline(always)]
        fn select(self, t: F8, f: F8) -> F8 {
            t.with(self.s.avx512f._mm512_mask_blend_pd(self.k, f.v, t.v))
        }
        #[inline(always)]
        fn to_bitmask(self) -> u32 {
            u32::from(self.k)
        }
    }
}
