//! The memory pre-flight: before worlds are allocated or a recording opens its files, their
//! estimated size is compared with what this process may still take, so that a run too big
//! for the machine is refused up front with the estimate and the limit, instead of dying in
//! an allocation (Rust's abort, MuJoCo's "Could not allocate memory") with its files
//! half-written.
//!
//! What the process may take is the smallest of three limits, each read where the system
//! has it: the kernel's `MemAvailable`; the memory cgroup's limit less its usage (cgroup v2
//! `memory.max`, v1 `memory.limit_in_bytes`: a container's or a systemd unit's); and the
//! address-space limit (`RLIMIT_AS`, `ulimit -v`) less what the process maps already. The
//! first two bound resident memory; the third bounds every mapping, so it is compared with
//! what the worlds reserve (MuJoCo's whole arena), not with what they touch.

use glint_lidar::LidarBinding;
use glint_mujoco::{Model, WorldBatch};

use crate::SimError;

/// Bytes one world costs beyond MuJoCo's own: per lidar beam, the live scan (range, geom,
/// point, normal), its secondary capture and its return-model report, at most.
const LIDAR_BYTES_PER_BEAM: u64 = 32 + 40 + 24;

/// Bytes a recording holds per (world, sensor) whatever its length (file and pose buffers,
/// compressor contexts, two ticks' rows), and per row of the row group being filled, once
/// encoded and compressed: measured on the showroom's OS1-64 (docs/performance.md, issue 34).
const RECORDING_FIXED_BYTES: u64 = 6 << 20;
const RECORDING_BYTES_PER_ROW: u64 = 11;

/// Room left on top of an estimate for what it does not count (thread stacks, the
/// allocator's own books): a tenth, and 64 MiB.
fn with_headroom(bytes: u64) -> u64 {
    bytes.saturating_add(bytes / 10).saturating_add(64 << 20)
}

/// One limit on what the process may still take.
#[derive(Clone, Debug, PartialEq)]
struct Limit {
    /// Bytes it leaves.
    room: u64,
    /// Whether it bounds address space (every mapping) rather than resident memory.
    address_space: bool,
    /// What it is, in words, for the message.
    what: String,
}

/// Every limit this system reports, in the order of the module's docs.
fn limits() -> Vec<Limit> {
    let mut found = Vec::new();
    let mb = |b: u64| b / 1_000_000;
    if let Some(available) = meminfo_available() {
        found.push(Limit { room: available, address_space: false, what: "MemAvailable".into() });
    }
    if let Some((max, usage)) = cgroup_memory() {
        found.push(Limit {
            room: max.saturating_sub(usage),
            address_space: false,
            what: format!("the memory cgroup's limit of {} MB less the {} MB it uses", mb(max), mb(usage)),
        });
    }
    if let (Some(limit), Some(mapped)) = (address_space_limit(), mapped_bytes()) {
        found.push(Limit {
            room: limit.saturating_sub(mapped),
            address_space: true,
            what: format!(
                "the address-space limit (ulimit -v) of {} MB less the {} MB already mapped",
                mb(limit),
                mb(mapped)
            ),
        });
    }
    found
}

/// The tightest limit for an estimate of `resident` bytes touched and `reserved` bytes
/// mapped: the one with the least room over what it bounds. `None` when all fit.
fn exceeded(resident: u64, reserved: u64) -> Option<(Limit, u64)> {
    limits()
        .into_iter()
        .map(|l| {
            let need = with_headroom(if l.address_space { reserved } else { resident });
            (l, need)
        })
        .filter(|(l, need)| need > &l.room)
        .max_by_key(|(l, need)| need - l.room)
}

/// Refuses `nworld` worlds of `model` with `bindings` when their estimate exceeds a limit
/// (nothing is checked where the system reports none).
pub(crate) fn check_worlds(model: &Model, bindings: &[LidarBinding], nworld: usize) -> Result<(), SimError> {
    let beams: u64 = bindings.iter().map(|b| b.scan.beam_count() as u64).sum();
    let ours = beams * LIDAR_BYTES_PER_BEAM + model.scene().ngeom() as u64 * 128;
    let n = nworld as u64;
    let mut probe = WorldBatch::new(model, 1)?;
    let reserved = probe.bytes_reserved();
    // Twice the whole arena bounds what the stepped estimate below can give: when even that
    // fits, no world need be stepped at start-up.
    if exceeded((reserved * 2 + ours).saturating_mul(n), (reserved + ours).saturating_mul(n)).is_none() {
        return Ok(());
    }
    // A world stepped a while shows how much of its arena contacts and constraints take;
    // twice that leaves room for a busier moment.
    probe.step(100);
    let touched = (probe.bytes_in_use() * 2).min(reserved);
    let Some((limit, need)) = exceeded((touched + ours).saturating_mul(n), (reserved + ours).saturating_mul(n)) else {
        return Ok(());
    };
    let per_world = need / n.max(1);
    let mb = |b: u64| b as f64 / 1e6;
    Err(SimError::Memory(format!(
        "{nworld} worlds need about {:.0} MB ({:.1} MB each: MuJoCo's data, {beams} lidar beams and headroom), and \
         this process may take {:.0} MB more ({}): use at most {} worlds, or raise the limit",
        mb(need),
        mb(per_world),
        mb(limit.room),
        limit.what,
        (limit.room / per_world.max(1)).max(1)
    )))
}

/// Refuses a recording of `sensors` lidars in each of `nworld` worlds, episodes of
/// `rows_per_episode` rows per sensor (`None`: unbounded), when its writers' estimate exceeds
/// a limit. Checked before the session folder is made, so a refusal leaves nothing behind.
pub(crate) fn check_recording(nworld: usize, rows: &[Option<u64>]) -> Result<(), SimError> {
    let group = glint_record::ROW_GROUP_ROWS as u64;
    let per_world: u64 =
        rows.iter().map(|r| RECORDING_FIXED_BYTES + RECORDING_BYTES_PER_ROW * r.unwrap_or(group).min(group)).sum();
    let bytes = per_world.saturating_mul(nworld as u64);
    let Some((limit, need)) = exceeded(bytes, bytes) else { return Ok(()) };
    let mb = |b: u64| b as f64 / 1e6;
    Err(SimError::Memory(format!(
        "recording {} lidar(s) in each of {nworld} worlds needs about {:.0} MB for its writers ({:.1} MB a world), \
         and this process may take {:.0} MB more ({}): record fewer worlds, or raise the limit",
        rows.len(),
        mb(need),
        mb(need / (nworld as u64).max(1)),
        mb(limit.room),
        limit.what
    )))
}

/// The kernel's `MemAvailable`, bytes.
fn meminfo_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    kib_field(&text, "MemAvailable:")
}

/// The process's mapped address space (`VmSize`), bytes.
fn mapped_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    kib_field(&text, "VmSize:")
}

/// A `Name:   N kB` line's value, in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

/// The soft address-space limit (`ulimit -v`), bytes; `None` when unlimited.
fn address_space_limit() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max address space"))?;
    line.trim_start_matches("Max address space").split_whitespace().next()?.parse().ok()
}

/// The memory cgroup's limit and usage, bytes; `None` without a limit.
fn cgroup_memory() -> Option<(u64, u64)> {
    let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let read = |path: String| std::fs::read_to_string(path).ok()?.trim().parse::<u64>().ok();
    // cgroup v2: one line `0::/path`; v1: a `memory` controller line.
    for line in membership.lines() {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if id == "0" && controllers.is_empty() {
            let dir = format!("/sys/fs/cgroup{path}");
            if let (Some(max), Some(usage)) = (read(format!("{dir}/memory.max")), read(format!("{dir}/memory.current")))
            {
                return Some((max, usage));
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            let dir = format!("/sys/fs/cgroup/memory{path}");
            let max = read(format!("{dir}/memory.limit_in_bytes"))?;
            // v1 reports "no limit" as a huge number.
            if max < (1 << 60) {
                return Some((max, read(format!("{dir}/memory.usage_in_bytes"))?));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_as_the_kernel_writes_them() {
        let status = "Name:\tglint\nVmPeak:\t  200 kB\nVmSize:\t  123 kB\n";
        assert_eq!(kib_field(status, "VmSize:"), Some(123 * 1024));
        assert_eq!(kib_field(status, "VmRSS:"), None);
    }

    #[test]
    fn this_process_reports_its_limits() {
        // Linux always has MemAvailable; the others depend on how the tests are run.
        assert!(limits().iter().any(|l| l.what == "MemAvailable" && l.room > 0));
        assert!(mapped_bytes().is_some_and(|b| b > 0));
    }
}
