//! Runs of up to a packet's worth of rays: cast as one packet, as one packet per octant of
//! directions, or one by one.

use glam::DVec3;

use super::batch::RayBatch;
use super::caster::RayCaster;
use super::hits::HitsMut;
use super::query::Query;
use crate::isa::Isa;
use crate::packet::{PACKET, Packet};

impl RayCaster {
    /// Casts rays `i..` of world `w` (as many as `out` holds, at most `PACKET`), as one packet
    /// when they share an origin and body exclusion and their directions share signs, as one
    /// packet per octant of directions when only the signs differ, else one by one.
    pub(super) fn cast_run<I: Isa>(&self, isa: I, q: &Query, w: usize, i: usize, packet: &mut Packet, out: HitsMut) {
        isa.run(
            #[inline(always)]
            || self.cast_run_on(isa, q, w, i, packet, out),
        )
    }

    /// [`RayCaster::cast_run`]'s body, compiled for `I`.
    #[inline(always)]
    fn cast_run_on<I: Isa>(&self, isa: I, q: &Query, w: usize, i: usize, packet: &mut Packet, mut out: HitsMut) {
        let (batch, run) = (q.batch, out.dist.len());
        let nray = batch.nray;
        let (o, exclude) = (RayBatch::pick(batch.pnt, nray, w, i), q.exclude(w, i));
        // Rays with their own origins carry them into the packet.
        // One origin for the whole batch needs no comparing per ray (unless NaN, which equals
        // nothing, itself included).
        let one_origin = batch.pnt.len() == 1 && !o.is_nan();
        let shared = run > 1
            && (q.own || one_origin || (i..i + run).all(|k| RayBatch::pick(batch.pnt, nray, w, k) == o))
            && (batch.bodyexclude.len() <= 1 || (i..i + run).all(|k| q.exclude(w, k) == exclude));
        let mut one_dir = [DVec3::ZERO; PACKET];
        let dirs = RayBatch::run(batch.vec, nray, w, i, run).unwrap_or_else(|d| {
            one_dir[..run].fill(d);
            &one_dir[..run]
        });
        if shared && packet.set(isa, o, dirs) {
            let best = self.cast_set_packet(isa, q, w, |r| i + r, exclude, packet);
            best.write(run, &mut out, |r| r);
        } else if shared && run > 2 {
            self.cast_octants(isa, q, w, i, exclude, packet, out);
        } else {
            for r in 0..run {
                out.set(r, self.cast(isa, q, w, i + r));
            }
        }
    }

    /// Casts rays `i..` of world `w` that would make one packet but for the signs of their
    /// directions (a fan across an axis): a packet per octant, in ray order within each.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn cast_octants<I: Isa>(
        &self,
        isa: I,
        q: &Query,
        w: usize,
        i: usize,
        exclude: i32,
        packet: &mut Packet,
        mut out: HitsMut,
    ) {
        let (batch, run) = (q.batch, out.dist.len());
        let dir = |r: usize| RayBatch::pick(batch.vec, batch.nray, w, i + r);
        // A zero component counts by its sign bit, as the packet's inverse directions do.
        let octant = |d: DVec3| (0..3).fold(0, |o, a| o | (usize::from(d[a].is_sign_negative()) << a));
        let (mut lanes, mut dirs, mut count) = ([[0u8; PACKET]; 8], [[DVec3::ZERO; PACKET]; 8], [0usize; 8]);
        for r in 0..run {
            let d = dir(r);
            let o = octant(d);
            (lanes[o][count[o]], dirs[o][count[o]]) = (r as u8, d);
            count[o] += 1;
        }
        let o = RayBatch::pick(batch.pnt, batch.nray, w, i);
        for ((lanes, dirs), &n) in lanes.iter().zip(&dirs).zip(&count) {
            let ray = |k: usize| lanes[k] as usize;
            if n > 1 && packet.set(isa, o, &dirs[..n]) {
                let best = self.cast_set_packet(isa, q, w, |k| i + ray(k), exclude, packet);
                best.write(n, &mut out, ray);
            } else {
                for r in lanes[..n].iter().map(|&r| r as usize) {
                    out.set(r, self.cast(isa, q, w, i + r));
                }
            }
        }
    }
}
