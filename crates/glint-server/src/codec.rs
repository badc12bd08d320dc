//! The protobuf codec of glint's services and clients: prost's encoding into a buffer reserved
//! at the message's size (tonic's grows from 8 KiB by doubling, copying a 1 MiB scan several
//! times over), and a decoder that reads a message from its contiguous bytes (prost's own
//! pulls packed floats one at a time through tonic's buffer, each pull advancing a `BytesMut`:
//! a quarter of a 1 MiB scan's round trip, measured).

use std::marker::PhantomData;

use prost::bytes::Buf;
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

/// prost's codec with [`SliceDecoder`]; the generated services and clients name it.
#[derive(Debug, Clone, Copy)]
pub struct ScanCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for ScanCodec<T, U> {
    fn default() -> Self {
        ScanCodec(PhantomData)
    }
}

impl<T, U> Codec for ScanCodec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = SizedEncoder<T>;
    type Decoder = SliceDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        SizedEncoder(PhantomData)
    }

    fn decoder(&mut self) -> Self::Decoder {
        SliceDecoder(PhantomData)
    }
}

/// Encodes a message into a buffer first reserved at its encoded size.
#[derive(Debug, Clone, Copy)]
pub struct SizedEncoder<T>(PhantomData<T>);

impl<T: prost::Message> Encoder for SizedEncoder<T> {
    type Item = T;
    type Error = Status;

    fn encode(&mut self, item: T, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        buf.reserve(item.encoded_len());
        item.encode(buf).map_err(|e| Status::internal(format!("encoding a message: {e}")))
    }
}

/// Decodes a message from the contiguous bytes tonic has gathered for it.
#[derive(Debug, Clone, Copy)]
pub struct SliceDecoder<U>(PhantomData<U>);

impl<U: prost::Message + Default> Decoder for SliceDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        let len = buf.remaining();
        let decoded = if buf.chunk().len() == len {
            let item = U::decode(&buf.chunk()[..len]);
            buf.advance(len);
            item
        } else {
            U::decode(buf)
        };
        decoded.map(Some).map_err(|e| Status::internal(e.to_string()))
    }
}
