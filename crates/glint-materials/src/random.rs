//! Counter-based random numbers every sensor shares, and the episode seed they are keyed
//! with. A stream is keyed by (episode seed, sensor, tick, unit), the unit a lidar beam or a
//! camera pixel: stateless across units, so any thread draws any unit's numbers and gets the
//! same ones, and the same run seed gives the same episodes bit for bit.

use rand::RngCore;

use crate::ziggurat::ZIGGURAT;

/// The random key of one sensor's tick in one episode (from [`BeamRng::tick_key`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TickKey(u64);

impl TickKey {
    /// The stream of beam `beam`.
    #[inline]
    pub fn beam(self, beam: u64) -> BeamRng {
        BeamRng { key: mix(self.0 ^ beam.wrapping_mul(0xd1b5_4a32_d192_ed03)), counter: 0 }
    }
}

/// Counter-based random numbers for one beam of one tick: a SplitMix64 stream over a key
/// mixed from (episode seed, sensor, beam, tick). Stateless across beams, so any thread can
/// draw any beam's numbers and get the same ones.
#[derive(Clone, Debug)]
pub struct BeamRng {
    key: u64,
    counter: u64,
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The seed of episode `episode` of a run seeded `run_seed`: it keys the return model's
/// randomness and the scene's reset randomization in that episode, so two episodes differ and
/// the same run seed gives the same episodes. Live sensors and re-processing both use it.
pub fn episode_seed(run_seed: u64, episode: u64) -> u64 {
    mix(mix(run_seed ^ 0xbb67_ae85_84ca_a73b) ^ episode.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

impl BeamRng {
    /// The stream of unit `beam` (a beam, a pixel) of sensor `sensor` at tick `tick` of the
    /// episode seeded `seed`.
    pub fn new(seed: u64, sensor: u64, beam: u64, tick: u64) -> BeamRng {
        BeamRng::tick_key(seed, sensor, tick).beam(beam)
    }

    /// The key shared by every beam of one sensor's tick in the episode seeded `seed`
    /// ([`episode_seed`]); [`TickKey::beam`] then costs one mix per beam.
    pub fn tick_key(seed: u64, sensor: u64, tick: u64) -> TickKey {
        let mut key = mix(seed ^ 0x6a09_e667_f3bc_c909);
        for part in [sensor, tick] {
            key = mix(key ^ part.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        }
        TickKey(key)
    }

    /// A uniform number in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A standard normal number.
    pub fn normal(&mut self) -> f64 {
        ZIGGURAT.sample(self)
    }
}

impl RngCore for BeamRng {
    fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    fn next_u64(&mut self) -> u64 {
        self.counter = self.counter.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.key.wrapping_add(self.counter))
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for chunk in dest.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}
