//! ROS 2's wire format: OMG CDR (XCDR1), little-endian, as `rmw` writes it and MCAP's `cdr`
//! message encoding names it. A message is a 4-byte encapsulation header (`00 01 00 00`:
//! CDR, little-endian) and its fields in order, each primitive aligned to its own size
//! (at most 8) counted from the end of the header; strings are a `uint32` length that counts
//! the closing NUL, then the bytes and the NUL; sequences are a `uint32` count, then the
//! elements; fixed arrays are the elements alone. Nothing pads the end.

/// A CDR message being written.
pub struct Cdr {
    buf: Vec<u8>,
}

/// The encapsulation header: plain CDR, little-endian.
const HEADER: [u8; 4] = [0, 1, 0, 0];

impl Cdr {
    /// An empty message with room for `capacity` bytes of fields.
    pub fn with_capacity(capacity: usize) -> Cdr {
        let mut buf = Vec::with_capacity(capacity + HEADER.len());
        buf.extend_from_slice(&HEADER);
        Cdr { buf }
    }

    /// An empty message written into `buf` (its contents dropped, its capacity kept).
    pub fn reusing(mut buf: Vec<u8>) -> Cdr {
        buf.clear();
        buf.extend_from_slice(&HEADER);
        Cdr { buf }
    }

    /// The finished message.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// Writes a `uint32` to be filled in later with [`Cdr::patch_u32`]; returns where it is.
    pub fn u32_slot(&mut self) -> usize {
        self.u32(0);
        self.buf.len() - 4
    }

    /// Fills in the `uint32` at `at` (from [`Cdr::u32_slot`]).
    pub fn patch_u32(&mut self, at: usize, v: u32) {
        self.buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }

    /// The bytes written so far, for appending raw payload (the elements of a sequence whose
    /// count was written).
    pub fn raw(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    fn align(&mut self, n: usize) {
        let offset = self.buf.len() - HEADER.len();
        let pad = (n - offset % n) % n;
        self.buf.resize(self.buf.len() + pad, 0);
    }

    /// A `uint8` (or `byte`, `char`).
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    /// A `bool`.
    pub fn bool(&mut self, v: bool) {
        self.buf.push(u8::from(v));
    }

    /// A `uint32`.
    pub fn u32(&mut self, v: u32) {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// An `int32`.
    pub fn i32(&mut self, v: i32) {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A `float64`.
    pub fn f64(&mut self, v: f64) {
        self.align(8);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A `string`.
    pub fn string(&mut self, s: &str) {
        self.u32(s.len() as u32 + 1);
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
    }

    /// A `uint8[]`.
    pub fn bytes(&mut self, data: &[u8]) {
        self.u32(data.len() as u32);
        self.buf.extend_from_slice(data);
    }

    /// A `float64[]`.
    pub fn f64_seq(&mut self, values: &[f64]) {
        self.u32(values.len() as u32);
        self.f64_array(values);
    }

    /// A fixed `float64[N]`.
    pub fn f64_array(&mut self, values: &[f64]) {
        for &v in values {
            self.f64(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_align_from_the_end_of_the_header() {
        let mut c = Cdr::with_capacity(0);
        c.u8(1);
        c.u32(2);
        c.string("ab");
        c.f64(0.5);
        let b = c.into_bytes();
        // header, u8 at 0, pad to 4, u32, length 3, "ab\0", pad to 16, f64.
        assert_eq!(&b[..4], &[0, 1, 0, 0]);
        assert_eq!(&b[4..8], &[1, 0, 0, 0]);
        assert_eq!(&b[8..12], &2u32.to_le_bytes());
        assert_eq!(&b[12..16], &3u32.to_le_bytes());
        assert_eq!(&b[16..19], b"ab\0");
        assert_eq!(b.len(), 4 + 16 + 8);
        assert_eq!(&b[20..28], &0.5f64.to_le_bytes());
    }
}
