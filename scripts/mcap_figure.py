"""Draws the point clouds of an MCAP file that `glint export --format mcap` (or `glint run
--mcap`) wrote, top-down in the world frame, as a PNG: every cloud of one lidar placed by the
`/tf` transforms of its points' ticks, coloured by height. It reads the file with rosbags
only, as any ROS 2 user would.

    python scripts/mcap_figure.py SESSION/mcap/episode_000000.mcap /roof/points out.png
"""

from __future__ import annotations

import struct
import sys
import zlib
from pathlib import Path

import numpy as np
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

NUMPY = {2: "u1", 4: "<u2", 5: "<i4", 6: "<u4", 7: "<f4", 8: "<f8"}


def read(path: Path, topic: str):
    """World-frame points (N×3) and their rings (N) of every cloud on `topic`."""
    store = get_typestore(Stores.ROS2_JAZZY)
    tf, clouds = {}, []
    with AnyReader([path], default_typestore=store) as reader:
        for conn, _, raw in reader.messages():
            msg = store.deserialize_cdr(raw, conn.msgtype)
            if conn.topic == "/tf":
                for t in msg.transforms:
                    stamp = t.header.stamp.sec * 10**9 + t.header.stamp.nanosec
                    r, p = t.transform.rotation, t.transform.translation
                    tf[(t.child_frame_id, stamp)] = (np.array([r.x, r.y, r.z, r.w]), np.array([p.x, p.y, p.z]))
            elif conn.topic == topic:
                dtype = np.dtype({"names": [f.name for f in msg.fields],
                                  "formats": [NUMPY[f.datatype] for f in msg.fields],
                                  "offsets": [f.offset for f in msg.fields], "itemsize": msg.point_step})
                stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
                clouds.append((msg.header.frame_id, stamp, np.frombuffer(bytes(msg.data), dtype=dtype)))
    xyz, rings = [], []
    for frame, stamp, pts in clouds:
        if "t" in pts.dtype.names:  # ouster: ns since the stamp
            ticks = stamp + pts["t"].astype(np.int64)
        elif "time" in pts.dtype.names:  # velodyne, glint: seconds since the stamp
            ticks = stamp + np.round(pts["time"].astype(np.float64) * 1e9).astype(np.int64)
        else:  # livox: absolute nanoseconds
            ticks = np.round(pts["timestamp"]).astype(np.int64)
        for tick in np.unique(ticks):
            sel = ticks == tick
            q, o = tf[(frame, int(tick))]
            v = np.stack([pts["x"][sel], pts["y"][sel], pts["z"][sel]], axis=1).astype(np.float64)
            t = 2.0 * np.cross(q[:3], v)
            xyz.append(v + q[3] * t + np.cross(q[:3], t) + o)
            rings.append(pts["ring"][sel] if "ring" in pts.dtype.names else pts["line"][sel])
    return np.concatenate(xyz), np.concatenate(rings)


def write_png(path: Path, rgb: np.ndarray) -> None:
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))
    chunk = lambda kind, body: struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    path.write_bytes(png + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def draw(xyz: np.ndarray, size: int = 900) -> np.ndarray:
    """Top-down over the points' extent, coloured by height (blue low, yellow high), higher
    points drawn over lower ones."""
    img = np.full((size, size, 3), 16, np.uint8)
    lo, hi = xyz[:, :2].min(axis=0), xyz[:, :2].max(axis=0)
    centre, half = (lo + hi) / 2, (hi - lo).max() / 2 * 1.04
    px = ((xyz[:, 0] - centre[0]) / half * 0.5 + 0.5) * (size - 1)
    py = (0.5 - (xyz[:, 1] - centre[1]) / half * 0.5) * (size - 1)
    order = np.argsort(xyz[:, 2])
    z = xyz[order, 2]
    lo_z, hi_z = np.percentile(z, 0.5), np.percentile(z, 99.9)
    u = np.sqrt(np.clip((z - lo_z) / max(hi_z - lo_z, 1e-9), 0, 1))
    colour = np.stack([255 * u, 60 + 190 * np.sin(np.pi * (0.15 + 0.7 * u)), 255 * (1 - u)], axis=1)
    img[py[order].astype(int), px[order].astype(int)] = colour.clip(0, 255).astype(np.uint8)
    return img


if __name__ == "__main__":
    mcap, topic, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    xyz, _ = read(mcap, topic)
    write_png(out, draw(xyz))
    print(f"{len(xyz)} points of {topic} drawn: {out}")
