//! Episodes: what each world's episode is (its index, so its seed, and the lidar ticks it has
//! run), and the rules of an episode's beginning, length and end, each written once here:
//!
//! - **Seed.** World `w`'s episode seed is [`glint_lidar::episode_seed`] of the run seed and
//!   the episode's index ([`Episodes::seed`]). Worlds start as episodes `0..nworld`; a world
//!   whose episode has run takes the next index when it is reset, and a reset with a new run
//!   seed numbers the worlds it resets from 0 again, in order.
//! - **Ticks.** An episode's length is counted in lidar ticks (agent steps) since its first
//!   ([`Episodes::ticks`]); its simulated time is MuJoCo's clock of the world, and its
//!   recorded length is `ticks × dt`.
//! - **End.** An episode ends when it has run its length (`WorldStatus::Ended`: the ticks its
//!   world runs after that, until it is reset, belong to no episode), when its world is reset,
//!   or when a run stops it; [`Episodes::end`] is the one place an episode's end is taken.

use glint_lidar::episode_seed;

use crate::WorldStatus;

/// Where each world is in its episode, and the rules above.
#[derive(Clone, Debug)]
pub(crate) struct Episodes {
    /// The run seed every episode's seed derives from.
    run_seed: u64,
    /// Per world, the index of its episode (what its seed derives from).
    index: Vec<u64>,
    /// Per world, lidar ticks since its episode began.
    ticks: Vec<u64>,
    /// Per world, the episodes it finished before this one.
    finished: Vec<u64>,
    /// Per world, whether its episode was ended (recorded to its end) before its world was
    /// reset: the ticks it runs until then belong to no episode.
    closed: Vec<bool>,
    /// The index the next new episode gets.
    next: u64,
    /// The index of the first episode (and of the first after a reseed).
    first: u64,
    /// Lidar ticks per episode, when episodes have a length.
    length: Option<u64>,
    /// Seconds of simulated time per tick.
    dt: f64,
}

impl Episodes {
    /// `nworld` worlds on episodes `first..first + nworld` of `run_seed`, `length` ticks long
    /// (when they have a length), each tick `dt` seconds.
    pub(crate) fn new(nworld: usize, (run_seed, first): (u64, u64), length: Option<u64>, dt: f64) -> Episodes {
        Episodes {
            run_seed,
            index: (first..first + nworld as u64).collect(),
            ticks: vec![0; nworld],
            finished: vec![0; nworld],
            closed: vec![false; nworld],
            next: first + nworld as u64,
            first,
            length,
            dt,
        }
    }

    /// The index of the first episode.
    pub(crate) fn first(&self) -> u64 {
        self.first
    }

    /// The run seed.
    pub(crate) fn run_seed(&self) -> u64 {
        self.run_seed
    }

    /// World `w`'s episode seed: the one seed rule.
    pub(crate) fn seed(&self, w: usize) -> u64 {
        episode_seed(self.run_seed, self.index[w])
    }

    /// World `w`'s episode index.
    pub(crate) fn index(&self, w: usize) -> u64 {
        self.index[w]
    }

    /// Lidar ticks world `w`'s episode has run: the one tick count.
    pub(crate) fn ticks(&self, w: usize) -> u64 {
        self.ticks[w]
    }

    /// Lidar ticks per episode, when episodes have a length.
    pub(crate) fn length(&self) -> Option<u64> {
        self.length
    }

    /// The simulated length of `ticks` ticks, seconds.
    pub(crate) fn seconds(&self, ticks: u64) -> f64 {
        ticks as f64 * self.dt
    }

    /// Whether world `w`'s ticks belong to an episode that is still open: one that has not
    /// been ended before its world is reset. Only those are written to outputs.
    pub(crate) fn open(&self, w: usize) -> bool {
        !self.closed[w]
    }

    /// Counts one tick in every world.
    pub(crate) fn tick(&mut self) {
        self.ticks.iter_mut().for_each(|t| *t += 1);
    }

    /// How world `w`'s episode stands (`unstable`: MuJoCo found the world unstable).
    pub(crate) fn status(&self, w: usize, unstable: bool) -> WorldStatus {
        if unstable {
            WorldStatus::Unstable
        } else if self.length.is_some_and(|n| self.ticks[w] >= n) {
            WorldStatus::Ended
        } else {
            WorldStatus::Ok
        }
    }

    /// Whether world `w`'s open episode has just run its length: it is to be ended now, so
    /// that no tick past its length is recorded.
    pub(crate) fn due_to_end(&self, w: usize) -> bool {
        !self.closed[w] && self.length.is_some_and(|n| self.ticks[w] >= n)
    }

    /// Makes `run_seed` the run seed, the next episode index the first.
    pub(crate) fn reseed(&mut self, run_seed: u64) {
        self.run_seed = run_seed;
        self.next = self.first;
    }

    /// Numbers world `w`'s next episode: a world whose episode has run (or every world after
    /// a [`Episodes::reseed`], `renumber`) takes the next index.
    pub(crate) fn number(&mut self, w: usize, renumber: bool) {
        if renumber || self.ticks[w] > 0 {
            self.index[w] = self.next;
            self.next += 1;
        }
    }

    /// Ends world `w`'s episode: the one end rule. Returns the episodes the world finished
    /// before it when its episode was open and had run (what outputs are told of), `None`
    /// otherwise. `close` keeps the world's later ticks out of any episode until it is reset;
    /// otherwise its next episode starts counting now.
    pub(crate) fn end(&mut self, w: usize, close: bool) -> Option<u64> {
        let ran = self.ticks[w] > 0 && !self.closed[w];
        if close {
            self.closed[w] = true;
        } else {
            self.ticks[w] = 0;
            self.closed[w] = false;
        }
        ran.then(|| {
            self.finished[w] += 1;
            self.finished[w] - 1
        })
    }

    /// Whether world `w` has an open episode that has run: one an output may be writing.
    pub(crate) fn running(&self, w: usize) -> bool {
        self.ticks[w] > 0 && !self.closed[w]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_follow_the_index_and_the_index_follows_the_runs() {
        let mut e = Episodes::new(2, (7, 0), Some(3), 0.02);
        assert_eq!((e.seed(0), e.seed(1)), (episode_seed(7, 0), episode_seed(7, 1)));
        // A world that has not run keeps its index; one that has run takes the next.
        e.number(0, false);
        assert_eq!(e.index(0), 0);
        e.tick();
        e.number(1, false);
        assert_eq!(e.index(1), 2);
        e.reseed(9);
        e.number(0, true);
        assert_eq!((e.index(0), e.seed(0)), (0, episode_seed(9, 0)));
    }

    #[test]
    fn an_episode_ends_once_and_a_closed_one_records_nothing_more() {
        let mut e = Episodes::new(1, (0, 0), Some(2), 0.5);
        assert_eq!(e.end(0, false), None, "nothing has run");
        e.tick();
        e.tick();
        assert!(e.due_to_end(0) && e.running(0));
        assert_eq!(e.status(0, false), WorldStatus::Ended);
        assert_eq!(e.seconds(e.ticks(0)), 1.0);
        assert_eq!(e.end(0, true), Some(0));
        assert!(!e.open(0) && !e.due_to_end(0) && !e.running(0));
        e.tick();
        assert_eq!(e.end(0, false), None, "a closed episode ends once");
        assert!(e.open(0) && e.ticks(0) == 0, "the reset opens the next");
        e.tick();
        assert_eq!(e.end(0, false), Some(1));
    }
}
