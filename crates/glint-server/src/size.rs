//! One rule for the size of every answer. An RPC whose answer grows with the request or the
//! configuration (scans, beam angles, `Step`'s observation and camera frames, the agent
//! schema, joint names and states, the camera list) reckons the answer's encoded size from
//! its parts *before* building it, and an answer past `--max-message-mib` is refused with
//! `RESOURCE_EXHAUSTED` naming its size, the limit and the two settings that raise it. A
//! client would otherwise get only "Received message larger than max" after the server had
//! built (and held) the whole answer. tonic's own encoding limit stays behind this as a
//! backstop for any answer reckoned wrong.

use std::fmt::Display;

use prost::encoding::encoded_len_varint;
use tonic::Status;

/// Bytes an answer's fixed fields take at most: its numbers, flags, short texts (names,
/// formats, an empty message) and the few named values of `Step`'s maps.
const FIXED: usize = 1024;

/// Bytes of mebibyte, for the limit in the flag's unit.
const MIB: f64 = 1024.0 * 1024.0;

/// An upper bound on a message's encoded size, reckoned from its parts. Every field that
/// grows has a field number below 16, so its tag is one byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Size(usize);

impl Size {
    /// A message whose fixed fields take at most `fixed` bytes, before its growing fields.
    pub const fn of(fixed: usize) -> Size {
        Size(fixed)
    }

    /// An answer's fixed fields (see [`FIXED`]), before its growing fields.
    pub const fn answer() -> Size {
        Size(FIXED)
    }

    /// Adds a length-delimited field of `len` bytes: a string, `bytes`, a nested message
    /// or one packed array.
    pub fn field(self, len: usize) -> Size {
        let prefixed = len.saturating_add(1 + encoded_len_varint(len as u64));
        Size(self.0.saturating_add(prefixed))
    }

    /// Adds a packed array of `n` floats.
    pub fn floats(self, n: usize) -> Size {
        self.field(n.saturating_mul(4))
    }

    /// Adds a repeated string field holding strings of these lengths.
    pub fn strings(self, lengths: impl IntoIterator<Item = usize>) -> Size {
        lengths.into_iter().fold(self, Size::field)
    }

    /// Adds a nested message of size `inner`.
    pub fn message(self, inner: Size) -> Size {
        self.field(inner.0)
    }
}

/// The largest answer glint serve sends (`--max-message-mib`), and the one check every
/// growing answer passes before it is built.
#[derive(Clone, Copy, Debug)]
pub struct Limit {
    max: usize,
}

impl Limit {
    /// Answers of at most `max` bytes.
    pub const fn new(max: usize) -> Limit {
        Limit { max }
    }

    /// `Ok` when `size` fits; otherwise `RESOURCE_EXHAUSTED` saying that `what` (e.g. "a scan
    /// of lidar sensor 0 (65535 beams, 4 arrays)") would take that many bytes, the limit, and how to get
    /// an answer: `smaller` (how to ask for less), or raise both the server's
    /// `--max-message-mib` and the client's receive limit.
    pub fn check(self, what: impl Display, size: Size, smaller: &str) -> Result<(), Status> {
        if size.0 <= self.max {
            return Ok(());
        }
        let needed = (size.0 as f64 / MIB).ceil();
        Err(Status::resource_exhausted(format!(
            "{what} would take {} bytes, above the {} bytes glint serve answers (--max-message-mib {}): {smaller}; or \
             start glint serve with --max-message-mib {needed} or more and raise the client's receive limit to \
             match (the gRPC channel option grpc.max_receive_message_length; 4 MiB unless set)",
            size.0,
            self.max,
            self.max as f64 / MIB,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reckoned_size_is_the_encoded_size_of_the_growing_fields() {
        use prost::Message;
        let angles = crate::proto::LidarBeamAnglesResponse {
            beams: 70_000,
            azimuth: vec![1.0; 70_000],
            elevation: vec![2.0; 70_000],
        };
        let reckoned = Size::of(0).floats(70_000).floats(70_000).0;
        let encoded = angles.encoded_len();
        assert!(reckoned <= encoded && encoded <= reckoned + 8, "{reckoned} vs {encoded}");
        let names: Vec<String> = (0..1000).map(|i| format!("lidar_ranges[{i}]")).collect();
        let schema = crate::proto::AgentSchema { observation_names: names.clone(), ..Default::default() };
        assert_eq!(Size::of(0).strings(names.iter().map(String::len)).0, schema.encoded_len());
    }

    #[test]
    fn a_refusal_names_the_size_the_limit_and_both_settings() {
        let limit = Limit::new(4 * 1024 * 1024);
        assert!(limit.check("small", Size::answer().floats(1000), "ask for less").is_ok());
        let status = limit.check("the beam angles", Size::answer().floats(2_000_000), "ask for less").unwrap_err();
        assert_eq!(status.code(), tonic::Code::ResourceExhausted);
        let m = status.message();
        for part in
            ["the beam angles would take 8001029 bytes", "4194304 bytes", "--max-message-mib 4)", "ask for less"]
        {
            assert!(m.contains(part), "{part:?} not in {m}");
        }
        assert!(m.contains("--max-message-mib 8 or more") && m.contains("grpc.max_receive_message_length"), "{m}");
    }
}
