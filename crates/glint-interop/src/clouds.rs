//! A lidar's rows gathered into `sensor_msgs/PointCloud2` messages, one per revolution (or
//! per tick): the same for a recording read back and for a live run.

use std::sync::Arc;

use glint_lidar::Bake;
use glint_record::{BeamRow, RowReturn};

use crate::export::CloudSplit;
use crate::layout::{LidarPoint, PointLayout};
use crate::msgs::{PointCloud2, nanoseconds};

/// One lidar's clouds being gathered.
pub(crate) struct Clouds {
    layout: PointLayout,
    split: CloudSplit,
    topic: String,
    frame: String,
    key: Option<u64>,
    stamp: f64,
    /// The cloud being gathered (a message in progress).
    pending: Option<PointCloud2>,
    /// The buffer of the last cloud finished, reused for the next.
    spare: Vec<u8>,
    clouds: u64,
    points: u64,
    /// The material bake the `nir_reflectivity` field reads (glint's layout).
    bake: Option<Arc<Bake>>,
}

impl Clouds {
    /// Clouds of the lidar whose frame (and topic `/<frame>/points`) is `frame`, with room
    /// for `beams` points.
    pub(crate) fn new(layout: PointLayout, split: CloudSplit, frame: &str, beams: usize) -> Clouds {
        Clouds::on_topic(layout, split, frame, beams, format!("/{frame}/points"))
    }

    /// The same, on `topic`.
    pub(crate) fn on_topic(layout: PointLayout, split: CloudSplit, frame: &str, beams: usize, topic: String) -> Clouds {
        Clouds {
            layout,
            split,
            topic,
            frame: frame.to_string(),
            key: None,
            stamp: 0.0,
            pending: None,
            spare: Vec::with_capacity(beams * layout.point_step() as usize + 1024),
            clouds: 0,
            points: 0,
            bake: None,
        }
    }

    /// The same, with `nir_reflectivity` read from `bake`.
    pub(crate) fn with_bake(mut self, bake: Option<Arc<Bake>>) -> Clouds {
        self.bake = bake.filter(|_| self.layout == PointLayout::Glint);
        self
    }

    /// The topic the clouds go to.
    pub(crate) fn topic(&self) -> &str {
        &self.topic
    }

    /// Clouds finished so far.
    pub(crate) fn clouds(&self) -> u64 {
        self.clouds
    }

    /// Points in them.
    pub(crate) fn points(&self) -> u64 {
        self.points
    }

    /// Adds a row's returns; returns the cloud before it (stamp, message) when the row begins
    /// another. The message's buffer is reused once the next cloud finishes: hand it back
    /// with [`Clouds::recycle`].
    pub(crate) fn push(&mut self, row: &BeamRow, returns: &[RowReturn]) -> Option<(u64, Vec<u8>)> {
        let key = match self.split {
            CloudSplit::Revolution => row.revolution,
            CloudSplit::Tick => row.timestamp.to_bits(),
        };
        let done = if self.key != Some(key) {
            let done = self.finish();
            self.key = Some(key);
            self.stamp = row.timestamp;
            let buf = std::mem::take(&mut self.spare);
            let (fields, step) = (self.layout.fields(), self.layout.point_step());
            self.pending = Some(PointCloud2::begin(buf, nanoseconds(row.timestamp), &self.frame, fields, step));
            done
        } else {
            None
        };
        // Only glint's layout has the colour-by fields that cost per point.
        let glint = self.layout == PointLayout::Glint;
        let data = self.pending.as_mut().expect("a cloud begins with its first row").data();
        for r in returns {
            let point = LidarPoint {
                xyz: r.xyz.as_vec3().to_array(),
                range: r.range,
                intensity: r.intensity.max(0.0),
                reflectivity: r.reflectivity.max(0.0),
                channel: row.channel,
                bin: row.bin,
                beam: row.beam,
                geom_id: r.geom_id,
                echo: r.echo,
                offset_s: row.timestamp - self.stamp,
                time_s: row.timestamp,
                height: r.world.z as f32,
                incidence: if glint { r.incidence_deg() } else { -1.0 },
                nir_reflectivity: if glint { nir_at(self.bake.as_deref(), r) } else { -1.0 },
            };
            self.layout.encode(&point, data);
            self.points += 1;
        }
        done
    }

    /// The cloud gathered so far, if a row began one.
    pub(crate) fn finish(&mut self) -> Option<(u64, Vec<u8>)> {
        self.key.take()?;
        let msg = self.pending.take()?.finish();
        self.clouds += 1;
        Some((nanoseconds(self.stamp), msg))
    }

    /// Drops the cloud being gathered (nobody reads it).
    pub(crate) fn discard(&mut self) {
        if let Some(pending) = self.pending.take() {
            self.spare = pending.finish();
        }
        self.key = None;
    }

    /// Takes back a finished message's buffer for the next cloud.
    pub(crate) fn recycle(&mut self, buf: Vec<u8>) {
        self.spare = buf;
    }
}

/// The baked NIR reflectivity at a return (`-1` without a bake or a material there).
fn nir_at(bake: Option<&Bake>, r: &RowReturn) -> f32 {
    let material = bake.zip(usize::try_from(r.geom_id).ok()).and_then(|(b, g)| b.material_at(g, r.world));
    material.map_or(-1.0, |m| m.reflectivity)
}
