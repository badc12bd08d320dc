//! The `GetLidarScan` answer, written straight from the loop's shared snapshot: the readers of
//! one tick share its copy ([`crate::Engine::fresh`]), and each answer is encoded into tonic's
//! buffer with one bulk copy per array, never cloned into a message of its own first.
//! Clients (the benchmark's) decode it into the plain message, [`LidarScanResponse`], reading
//! packed floats in bulk. The bytes are prost's for the same message.

use std::fmt;
use std::sync::Arc;

use prost::Message;
use prost::bytes::{Buf, BufMut};
use prost::encoding::{DecodeContext, WireType, encode_key, encode_varint, encoded_len_varint, key_len};

use crate::engine::Snapshot;

mod plain {
    #![allow(missing_docs, clippy::all, clippy::pedantic)]
    include!(concat!(env!("OUT_DIR"), "/plain/hazel.rpc.rs"));
}

/// `hazel.rpc.LidarScanResponse` as prost generates it from `lidar.proto`.
pub use plain::LidarScanResponse;

/// The field numbers of `LidarScanResponse` (`lidar.proto`).
const BEAMS: u32 = 1;
const RANGES: u32 = 2;
const SECONDARY: u32 = 3;
const INTENSITY: u32 = 4;
const REFLECTIVITY: u32 = 5;

/// A `LidarScanResponse` on the wire: the plain message (what a client decodes, or an empty
/// answer), or a view of a sensor's scan in a shared snapshot (what the server sends).
#[derive(Clone)]
pub enum ScanAnswer {
    /// The message's own fields.
    Message(LidarScanResponse),
    /// A sensor of a snapshot, with the arrays a request asked for.
    Shared(SharedScan),
}

/// A sensor's scan in a snapshot and the arrays asked of it (see `docs/grpc.md`).
#[derive(Clone)]
pub struct SharedScan {
    snapshot: Arc<Snapshot>,
    sensor: usize,
    material: bool,
    secondary: bool,
    intensity: bool,
}

/// One packed array of an answer.
enum Floats<'a> {
    Slice(&'a [f32]),
    /// `-1` (not resolvable) for each of so many beams.
    Unresolved(usize),
}

impl Floats<'_> {
    fn len(&self) -> usize {
        match self {
            Floats::Slice(s) => s.len(),
            Floats::Unresolved(n) => *n,
        }
    }
}

impl SharedScan {
    /// Sensor `sensor` of `snapshot` (which must have it), with the arrays asked for:
    /// `material` ranges, `secondary` ranges, `intensity` and calibrated reflectivity.
    pub fn new(snapshot: Arc<Snapshot>, sensor: usize, material: bool, secondary: bool, intensity: bool) -> SharedScan {
        debug_assert!(sensor < snapshot.sensors.len());
        SharedScan { snapshot, sensor, material, secondary, intensity }
    }

    /// The beam count and the four arrays, in field order.
    fn fields(&self) -> (u32, [Floats<'_>; 4]) {
        let s = &self.snapshot.sensors[self.sensor];
        let n = s.ranges.len();
        let model = if self.material { s.returns.as_ref() } else { None };
        let ranges = Floats::Slice(model.map_or(&s.ranges, |m| &m.range));
        let secondary = match (self.secondary, s.returns.as_ref()) {
            (false, _) => Floats::Slice(&[]),
            (true, Some(m)) if self.snapshot.params.max_returns >= 2 => Floats::Slice(&m.secondary),
            (true, _) => Floats::Unresolved(n),
        };
        let [intensity, reflectivity] = match (self.intensity, model) {
            (false, _) => [Floats::Slice(&[]), Floats::Slice(&[])],
            (true, Some(m)) => [Floats::Slice(&m.intensity), Floats::Slice(&m.reflectivity)],
            (true, None) => [Floats::Unresolved(n), Floats::Unresolved(n)],
        };
        (s.config.beam_count() as u32, [ranges, secondary, intensity, reflectivity])
    }
}

/// The tags of the four arrays, in field order.
const ARRAYS: [u32; 4] = [RANGES, SECONDARY, INTENSITY, REFLECTIVITY];

fn packed_len(tag: u32, floats: &Floats) -> usize {
    match floats.len() {
        0 => 0,
        n => key_len(tag) + encoded_len_varint(4 * n as u64) + 4 * n,
    }
}

/// Writes `floats` as a packed field, as prost does (an empty array is left out).
fn put_packed(tag: u32, floats: &Floats, buf: &mut impl BufMut) {
    let n = floats.len();
    if n == 0 {
        return;
    }
    encode_key(tag, WireType::LengthDelimited, buf);
    encode_varint(4 * n as u64, buf);
    match floats {
        Floats::Slice(values) => put_floats(values, buf),
        Floats::Unresolved(n) => {
            const CHUNK: [f32; 1024] = [-1.0; 1024];
            let mut left = *n;
            while left > 0 {
                let k = left.min(CHUNK.len());
                put_floats(&CHUNK[..k], buf);
                left -= k;
            }
        }
    }
}

/// `values` as little-endian bytes: one copy where the machine is little-endian.
fn put_floats(values: &[f32], buf: &mut impl BufMut) {
    if cfg!(target_endian = "little") {
        buf.put_slice(bytemuck::cast_slice(values));
    } else {
        for &v in values {
            buf.put_f32_le(v);
        }
    }
}

impl Default for ScanAnswer {
    fn default() -> ScanAnswer {
        ScanAnswer::Message(LidarScanResponse::default())
    }
}

impl From<LidarScanResponse> for ScanAnswer {
    fn from(message: LidarScanResponse) -> ScanAnswer {
        ScanAnswer::Message(message)
    }
}

impl ScanAnswer {
    /// The plain message (a shared scan's arrays copied into it).
    pub fn into_message(self) -> LidarScanResponse {
        match self {
            ScanAnswer::Message(m) => m,
            ScanAnswer::Shared(s) => {
                let (beams, arrays) = s.fields();
                let [ranges, secondary_ranges, intensity, reflectivity_calibrated] = arrays.map(|f| match f {
                    Floats::Slice(v) => v.to_vec(),
                    Floats::Unresolved(n) => vec![-1.0; n],
                });
                LidarScanResponse { beams, ranges, secondary_ranges, intensity, reflectivity_calibrated }
            }
        }
    }

    /// The plain message to decode into (a shared scan is dropped).
    fn message_mut(&mut self) -> &mut LidarScanResponse {
        if let ScanAnswer::Shared(_) = self {
            *self = ScanAnswer::default();
        }
        match self {
            ScanAnswer::Message(m) => m,
            ScanAnswer::Shared(_) => unreachable!("replaced above"),
        }
    }
}

impl fmt::Debug for ScanAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScanAnswer::Message(m) => m.fmt(f),
            ScanAnswer::Shared(s) => f
                .debug_struct("SharedScan")
                .field("tick", &s.snapshot.tick)
                .field("sensor", &s.sensor)
                .field("material", &s.material)
                .field("secondary", &s.secondary)
                .field("intensity", &s.intensity)
                .finish(),
        }
    }
}

impl Message for ScanAnswer {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        match self {
            ScanAnswer::Message(m) => m.encode_raw(buf),
            ScanAnswer::Shared(s) => {
                let (beams, arrays) = s.fields();
                if beams != 0 {
                    encode_key(BEAMS, WireType::Varint, buf);
                    encode_varint(beams as u64, buf);
                }
                for (tag, floats) in ARRAYS.iter().zip(&arrays) {
                    put_packed(*tag, floats, buf);
                }
            }
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        let m = self.message_mut();
        let values = match tag {
            RANGES => &mut m.ranges,
            SECONDARY => &mut m.secondary_ranges,
            INTENSITY => &mut m.intensity,
            REFLECTIVITY => &mut m.reflectivity_calibrated,
            _ => return m.merge_field(tag, wire_type, buf, ctx),
        };
        // A packed array in contiguous bytes (what the codec hands over) is read in bulk;
        // anything else as prost reads it.
        if wire_type == WireType::LengthDelimited {
            let mut peek = buf.chunk();
            let len = prost::encoding::decode_varint(&mut peek)?;
            let head = buf.chunk().len() - peek.len();
            if len % 4 == 0 && (len as usize) <= peek.len() {
                let bytes = &peek[..len as usize];
                values.extend(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
                buf.advance(head + len as usize);
                return Ok(());
            }
        }
        prost::encoding::float::merge_repeated(wire_type, values, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        match self {
            ScanAnswer::Message(m) => m.encoded_len(),
            ScanAnswer::Shared(s) => {
                let (beams, arrays) = s.fields();
                let head = if beams != 0 { key_len(BEAMS) + encoded_len_varint(beams as u64) } else { 0 };
                head + ARRAYS.iter().zip(&arrays).map(|(tag, floats)| packed_len(*tag, floats)).sum::<usize>()
            }
        }
    }

    fn clear(&mut self) {
        *self = ScanAnswer::default();
    }
}

#[cfg(test)]
mod tests {
    use glint_lidar::{BakeStatus, ReturnParams, ScanConfig};

    use super::*;
    use crate::engine::{ReturnChannels, SensorSnapshot};

    fn snapshot(returns: bool, max_returns: u32) -> Arc<Snapshot> {
        let config = ScanConfig { channels: 3, azimuth_bins: 7, ..ScanConfig::default() };
        let n = config.beam_count();
        let ramp = |k: f32| (0..n).map(|i| i as f32 * k - 1.0).collect::<Vec<f32>>();
        let sensor = SensorSnapshot {
            config,
            ranges: ramp(0.5),
            returns: returns.then(|| ReturnChannels {
                range: ramp(0.25),
                secondary: ramp(2.0),
                intensity: ramp(0.125),
                reflectivity: ramp(3.0),
            }),
            ..SensorSnapshot::default()
        };
        let params = ReturnParams { max_returns, ..ReturnParams::default() };
        Arc::new(Snapshot { tick: 9, sensors: vec![sensor], params, bake: BakeStatus::none() })
    }

    /// The message the server built before answers were shared: each array cloned.
    fn cloned(s: &SharedScan) -> LidarScanResponse {
        let sensor = &s.snapshot.sensors[s.sensor];
        let n = sensor.ranges.len();
        let model = if s.material { sensor.returns.as_ref() } else { None };
        let unresolved = || vec![-1.0; n];
        LidarScanResponse {
            beams: sensor.config.beam_count() as u32,
            ranges: model.map_or_else(|| sensor.ranges.clone(), |m| m.range.clone()),
            secondary_ranges: match (s.secondary, sensor.returns.as_ref()) {
                (false, _) => Vec::new(),
                (true, Some(m)) if s.snapshot.params.max_returns >= 2 => m.secondary.clone(),
                (true, _) => unresolved(),
            },
            intensity: match (s.intensity, model) {
                (false, _) => Vec::new(),
                (true, Some(m)) => m.intensity.clone(),
                (true, None) => unresolved(),
            },
            reflectivity_calibrated: match (s.intensity, model) {
                (false, _) => Vec::new(),
                (true, Some(m)) => m.reflectivity.clone(),
                (true, None) => unresolved(),
            },
        }
    }

    #[test]
    fn a_shared_answer_is_prosts_bytes_for_every_request() {
        for returns in [false, true] {
            for max_returns in [1, 2] {
                let snap = snapshot(returns, max_returns);
                for flags in 0..8u8 {
                    let (material, secondary, intensity) = (flags & 1 != 0, flags & 2 != 0, flags & 4 != 0);
                    let shared = SharedScan::new(snap.clone(), 0, material, secondary, intensity);
                    let expected = cloned(&shared);
                    let answer = ScanAnswer::Shared(shared);
                    let bytes = answer.encode_to_vec();
                    assert_eq!(bytes, expected.encode_to_vec(), "returns {returns}, max {max_returns}, flags {flags}");
                    assert_eq!(answer.encoded_len(), bytes.len());
                    assert_eq!(answer.clone().into_message(), expected);
                    // Decoded in bulk as prost decodes it.
                    let decoded = ScanAnswer::decode(bytes.as_slice()).unwrap().into_message();
                    assert_eq!(decoded, LidarScanResponse::decode(bytes.as_slice()).unwrap());
                    assert_eq!(decoded, expected);
                }
            }
        }
    }

    #[test]
    fn unpacked_and_split_arrays_decode_as_prost_decodes_them() {
        // Floats sent one by one (proto3 parsers accept both), and a packed array whose bytes
        // arrive in two pieces.
        let mut bytes = Vec::new();
        for v in [1.5f32, -1.0] {
            encode_key(RANGES, WireType::ThirtyTwoBit, &mut bytes);
            bytes.put_f32_le(v);
        }
        let message = LidarScanResponse { intensity: vec![0.5; 300], ..LidarScanResponse::default() };
        message.encode_raw(&mut bytes);
        let (a, b) = bytes.split_at(40);
        let decoded = ScanAnswer::decode(a.chain(b)).unwrap().into_message();
        assert_eq!(decoded, LidarScanResponse::decode(bytes.as_slice()).unwrap());
        assert_eq!(decoded.ranges, vec![1.5, -1.0]);
        assert_eq!(decoded.intensity.len(), 300);
    }
}
