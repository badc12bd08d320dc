//! Memory stays flat however long an episode runs: the writer never holds more than the row
//! group it fills, encoded as it goes. (A test file of its own, so the process's peak memory is this test's.)

use glam::{DMat3, DVec3};
use glint_lidar::{LidarBinding, Scan, ScanConfig, ScanPreset, SecondaryCapture, SecondaryHits, Surfaces};
use glint_record::{EpisodeStatus, MAX_BUFFERED_ROWS, ROW_GROUP_ROWS, Session, SessionInfo, TickData, check_session};

/// A synthetic OS1-64 scan with pass-through geometry: hits and misses, varied ranges and
/// normals, so the encoder does real work.
fn os1_scan(seed: u32) -> Scan {
    let beams = ScanConfig::from_preset(ScanPreset::OusterOs1_64).beam_count();
    let mut scan = Scan::default();
    let mut surfaces = Surfaces::default();
    let mut pass = SecondaryHits::default();
    for k in 0..beams as u32 {
        let h = (k ^ seed).wrapping_mul(2_654_435_761);
        let hit = !h.is_multiple_of(7);
        let range = if hit { 0.5 + (h % 100_000) as f32 * 1e-3 } else { -1.0 };
        let n = [(h % 13) as f32 / 13.0, (h % 17) as f32 / 17.0, 0.5];
        scan.range.push(range);
        scan.geomid.push(if hit { (h % 50) as i32 } else { -1 });
        surfaces.normal.push(if hit { n } else { [0.0; 3] });
        surfaces.point.push([0.0; 3]);
        scan.time.push(0.0);
        pass.range.push(if hit && h.is_multiple_of(3) { range + 2.0 } else { -1.0 });
        pass.geomid.push(if hit && h.is_multiple_of(3) { 3 } else { -1 });
        pass.normal.push(if hit && h.is_multiple_of(3) { n } else { [0.0; 3] });
    }
    scan.pass_through = Some(pass);
    scan.surfaces = Some(surfaces);
    scan
}

/// Peak resident memory of this process, bytes (Linux), if known.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Records `ticks` whole OS1-64 revolutions in one episode; returns the rows written and the
/// most rows the writer ever held.
fn record(tag: &str, ticks: usize) -> (u64, usize) {
    let out = std::env::temp_dir().join(format!("glint-record-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let binding = LidarBinding {
        name: "os1".into(),
        attach_site: Some("lidar".into()),
        scan: ScanConfig::from_preset(ScanPreset::OusterOs1_64),
        secondary_capture: SecondaryCapture::PassThrough,
        ..LidarBinding::default()
    };
    let info = SessionInfo {
        manifest: "robot.toml".into(),
        manifest_text: String::new(),
        scene: "robot.xml".into(),
        seed: 0,
        episodes: 1,
        seconds_per_episode: ticks as f64 / 10.0,
        worlds: 1,
        physics_timestep: 0.002,
        lidar_runner_hz: 10.0,
        controller: "zero".into(),
        mujoco_version: "3.17.0".into(),
        sensors: vec![binding],
    };
    let scans = [os1_scan(1), os1_scan(2), os1_scan(3)];
    let beams: Vec<u32> = (0..scans[0].len() as u32).collect();
    let mut session = Session::create(&out, &info).unwrap();
    let mut episode = session.begin_episode(0, 0).unwrap();
    let mut most = 0;
    for t in 0..ticks {
        let tick = TickData {
            timestamp: t as f64 * 0.1,
            scan: &scans[t % 3],
            beams: &beams,
            sensor_rot: DMat3::IDENTITY,
            sensor_pos: DVec3::ZERO,
        };
        episode.write_tick(0, &tick).unwrap();
        most = most.max(episode.buffered_rows());
    }
    let summary = episode.finish(EpisodeStatus::Complete, ticks as f64 / 10.0).unwrap();
    let rows = summary.sensors[0].rows;
    assert!(check_session(session.dir()).unwrap().ok());
    std::fs::remove_dir_all(&out).ok();
    (rows, most)
}

#[test]
fn five_million_rows_never_buffer_more_than_a_few_row_groups() {
    // 77 revolutions of 65 536 beams: 5 046 272 rows, 5 row groups.
    let (rows, most) = record("memory", 77);
    assert_eq!(rows, 77 * 65_536);
    assert!(most <= MAX_BUFFERED_ROWS, "the writer held {most} rows");
    assert!(most > ROW_GROUP_ROWS / 2, "rows are buffered up to a row group ({most})");
    if let Some(peak) = peak_rss() {
        assert!(peak < 200 << 20, "peak memory {} MB", peak >> 20);
    }
}

/// The seed's long case: a 60 s episode of an OS1-64 at 10 Hz, 39 million rows with the
/// pass-through columns (a few seconds). Peak memory is the whole process's, both tests
/// included.
#[test]
fn a_sixty_second_os1_episode_stays_under_300_mb() {
    let (rows, most) = record("memory-60s", 600);
    assert_eq!(rows, 600 * 65_536);
    assert!(most <= MAX_BUFFERED_ROWS);
    let peak = peak_rss().unwrap_or(0);
    eprintln!("60 s OS1-64 episode: {rows} rows, peak memory {} MB", peak >> 20);
    assert!(peak < 300 << 20, "peak memory {} MB", peak >> 20);
}
