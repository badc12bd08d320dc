#!/usr/bin/env python3
"""Deterministic generator for glint's example MuJoCo scenes.

Run as ``python3 examples/generate.py`` (from any directory).  Writes, next to
this script:

  primitives.xml  ~40 mixed primitives, a small height field, some free bodies
  crowded.xml     a warehouse with ~1000 primitive geoms
  meshes.xml      a mesh-heavy scene (>100k triangles) using assets/*.obj|stl

Standard library only.  Every random choice comes from a seeded
``random.Random`` and every number is written with fixed precision, so the
output is byte-identical from run to run.  The generated files must not be
edited by hand; change this script and re-run it instead.
"""

import math
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ASSETS = os.path.join(HERE, "assets")

TIMESTEP = "0.002"


# ---------------------------------------------------------------------------
# number formatting and small vector / quaternion helpers
# ---------------------------------------------------------------------------

def fnum(x, nd=4):
    """Fixed-precision number without trailing zeros ("-0" becomes "0")."""
    s = "%.*f" % (nd, x)
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    if s in ("-0", ""):
        s = "0"
    return s


def fvec(v, nd=4):
    return " ".join(fnum(x, nd) for x in v)


def qmul(a, b):
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw)


def qaxis(axis, deg):
    h = math.radians(deg) / 2.0
    s = math.sin(h)
    return (math.cos(h), axis[0] * s, axis[1] * s, axis[2] * s)


def qnorm(q):
    n = math.sqrt(sum(c * c for c in q))
    q = tuple(c / n for c in q)
    if q[0] < 0:  # canonical sign, purely cosmetic
        q = tuple(-c for c in q)
    return q


def qeuler_xyz(a, b, c):
    """Quaternion of MuJoCo's default euler="a b c" (degrees, eulerseq="xyz",
    intrinsic: q = qx(a) * qy(b) * qz(c))."""
    return qmul(qmul(qaxis((1, 0, 0), a), qaxis((0, 1, 0), b)),
                qaxis((0, 0, 1), c))


def qrandom(rng):
    """Uniformly distributed random rotation (Shoemake)."""
    u1, u2, u3 = rng.random(), rng.random(), rng.random()
    a, b = math.sqrt(1 - u1), math.sqrt(u1)
    return qnorm((b * math.cos(2 * math.pi * u3), a * math.sin(2 * math.pi * u2),
                  a * math.cos(2 * math.pi * u2), b * math.sin(2 * math.pi * u3)))


def qmat(q):
    w, x, y, z = q
    return ((1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)),
            (2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)),
            (2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)))


def zsupport(gtype, size, q):
    """Half extent along world z of a primitive rotated by q (exact)."""
    r = qmat(q)[2]  # world z expressed in the geom frame
    if gtype == "sphere":
        return size[0]
    if gtype == "box":
        return sum(abs(r[i]) * size[i] for i in range(3))
    if gtype == "ellipsoid":
        return math.sqrt(sum((r[i] * size[i]) ** 2 for i in range(3)))
    if gtype == "capsule":
        return abs(r[2]) * size[1] + size[0]
    if gtype == "cylinder":
        return abs(r[2]) * size[1] + size[0] * math.sqrt(max(0.0, 1 - r[2] ** 2))
    raise ValueError(gtype)


def bound_radius(gtype, size):
    """Bounding-sphere radius of a primitive."""
    if gtype == "sphere":
        return size[0]
    if gtype == "box":
        return math.sqrt(sum(s * s for s in size))
    if gtype == "ellipsoid":
        return max(size)
    if gtype == "capsule":
        return size[0] + size[1]
    if gtype == "cylinder":
        return math.hypot(size[0], size[1])
    raise ValueError(gtype)


def look_at(pos, target):
    """MJCF xyaxes of a camera at pos looking at target with +Z up."""
    f = [t - p for t, p in zip(target, pos)]
    n = math.sqrt(sum(c * c for c in f))
    f = [c / n for c in f]
    x = [f[1], -f[0], 0.0]
    n = math.sqrt(sum(c * c for c in x))
    x = [c / n for c in x]
    y = [x[1] * f[2] - x[2] * f[1], x[2] * f[0] - x[0] * f[2], x[0] * f[1] - x[1] * f[0]]
    return fvec(x + y)


def camera(x, name, pos, target, fovy=60, resolution=(320, 240)):
    """A fixed overview camera for glint's renderer and its tests."""
    x.leaf("camera", ("name", name), ("pos", fvec(pos)), ("xyaxes", look_at(pos, target)),
           ("fovy", str(fovy)), ("resolution", "%d %d" % resolution),
           ("output", "rgb depth segmentation"))


def color(rng, base, jitter=0.12):
    return tuple(min(1.0, max(0.0, c + rng.uniform(-jitter, jitter))) for c in base) + (1.0,)


# ---------------------------------------------------------------------------
# tiny MJCF writer
# ---------------------------------------------------------------------------

class Xml:
    def __init__(self):
        self.lines = []
        self.depth = 0
        self.ngeom = 0
        self.names = set()

    def _attrs(self, attrs):
        out = []
        for k, v in attrs:
            if v is None:
                continue
            out.append('%s="%s"' % (k, v))
        return " ".join(out)

    def _check_name(self, attrs):
        for k, v in attrs:
            if k == "name":
                assert v not in self.names, "duplicate name %s" % v
                self.names.add(v)

    def raw(self, text):
        self.lines.append("  " * self.depth + text)

    def comment(self, text):
        assert "--" not in text
        self.raw("<!-- %s -->" % text)

    def open(self, tag, *attrs):
        self._check_name(attrs)
        a = self._attrs(attrs)
        self.raw("<%s%s>" % (tag, " " + a if a else ""))
        self.depth += 1

    def close(self, tag):
        self.depth -= 1
        self.raw("</%s>" % tag)

    def leaf(self, tag, *attrs):
        self._check_name(attrs)
        if tag == "geom":
            self.ngeom += 1
        a = self._attrs(attrs)
        self.raw("<%s%s/>" % (tag, " " + a if a else ""))

    def geom(self, name, gtype, size=None, pos=None, quat=None, euler=None,
             rgba=(0.7, 0.7, 0.7, 1.0), group=None, **extra):
        attrs = [("name", name), ("type", gtype)]
        for k in sorted(extra):
            if k == "mesh":
                attrs.append(("mesh", extra[k]))
            elif k == "hfield":
                attrs.append(("hfield", extra[k]))
        if size is not None:
            attrs.append(("size", fvec(size)))
        if pos is not None:
            attrs.append(("pos", fvec(pos)))
        if quat is not None:
            attrs.append(("quat", fvec(qnorm(quat), 6)))
        if euler is not None:
            attrs.append(("euler", fvec(euler, 2)))
        attrs.append(("rgba", fvec(rgba, 3)))
        if group is not None:
            attrs.append(("group", str(group)))
        self.leaf("geom", *attrs)

    def text(self, header):
        body = "\n".join(self.lines) + "\n"
        return header + body


def header_comment(lines):
    for l in lines:
        assert "--" not in l
    return "<!--\n" + "\n".join("  " + l if l else "" for l in lines) + "\n-->\n"


def write_text(path, text):
    with open(path, "w", newline="\n") as fh:
        fh.write(text)


# ---------------------------------------------------------------------------
# scene 1: primitives.xml
# ---------------------------------------------------------------------------

PRIM_TYPES = ["sphere", "capsule", "ellipsoid", "cylinder", "box"]
PRIM_COLORS = {
    "sphere": (0.85, 0.30, 0.25),
    "capsule": (0.25, 0.65, 0.35),
    "ellipsoid": (0.30, 0.45, 0.85),
    "cylinder": (0.85, 0.70, 0.20),
    "box": (0.60, 0.40, 0.75),
}


def random_prim_size(rng, gtype, free):
    if gtype == "sphere":
        return (rng.uniform(0.2, 0.6),)
    if gtype == "capsule":
        return (rng.uniform(0.1, 0.3), rng.uniform(0.2, 0.8))
    if gtype == "ellipsoid":
        a, b = rng.uniform(0.3, 0.7), rng.uniform(0.3, 0.7)
        c = rng.uniform(0.15, 0.28) if free else rng.uniform(0.15, 0.6)
        return (a, b, c)
    if gtype == "cylinder":
        hh = rng.uniform(0.15, 0.4) if free else rng.uniform(0.2, 1.2)
        return (rng.uniform(0.15, 0.5), hh)
    if gtype == "box":
        return tuple(rng.uniform(0.15, 0.45 if free else 0.8) for _ in range(3))
    raise ValueError(gtype)


def hfield_elevation(n):
    """Gentle off-centre hill, normalised to exactly [0, 1], row-major."""
    vals = []
    for i in range(n):
        y = -1 + 2.0 * i / (n - 1)
        for j in range(n):
            x = -1 + 2.0 * j / (n - 1)
            e = math.exp(-((x - 0.15) ** 2 + (y + 0.1) ** 2) / 0.35)
            e += 0.06 * math.sin(3 * x) * math.cos(2 * y)
            vals.append(e)
    lo, hi = min(vals), max(vals)
    return [(v - lo) / (hi - lo) for v in vals]


def gen_primitives():
    rng = random.Random(20240101)
    x = Xml()
    hf_center = (7.0, -7.0)
    hf_size = (3.0, 3.0, 0.5, 0.1)
    hf_n = 32
    half_area = 10.0
    lidar_clear = 1.5

    # --- choose primitives ---------------------------------------------
    n_prims = 40
    free_idx = set()
    for t in range(5):  # two free bodies of every type
        free_idx.add(t)
        free_idx.add(5 + t)
    placed = []  # (x, y, radius)
    prims = []
    counters = {t: 0 for t in PRIM_TYPES}
    for i in range(n_prims):
        gtype = PRIM_TYPES[i % 5]
        free = i in free_idx
        size = random_prim_size(rng, gtype, free)
        counters[gtype] += 1
        # orientation
        if free:
            yaw = rng.uniform(-180, 180)
            if gtype == "capsule":  # lie down, an upright capsule topples
                q = qmul(qaxis((0, 0, 1), yaw), qaxis((1, 0, 0), 90))
            elif gtype == "sphere":
                q = (1.0, 0.0, 0.0, 0.0)
            else:
                q = qaxis((0, 0, 1), yaw)
            rot = ("quat", q)
        else:
            k = rng.random()
            if k < 0.35:
                rot = ("none", (1.0, 0.0, 0.0, 0.0))
            elif k < 0.7:
                e = (rng.uniform(-60, 60), rng.uniform(-60, 60), rng.uniform(-180, 180))
                rot = ("euler", e)
            else:
                rot = ("quat", qrandom(rng))
        q = qeuler_xyz(*rot[1]) if rot[0] == "euler" else rot[1]
        zs = zsupport(gtype, size, q)
        if free:
            z = zs + 0.02
            mode = "free"
        elif rng.random() < 0.2:
            z = zs + rng.uniform(0.4, 1.5)  # floating static geom
            mode = "float"
        else:
            z = zs  # resting on the ground
            mode = "ground"
        rad = bound_radius(gtype, size)
        for _ in range(10000):
            px = rng.uniform(-half_area + rad, half_area - rad)
            py = rng.uniform(-half_area + rad, half_area - rad)
            if math.hypot(px, py) < lidar_clear + rad + 0.1:
                continue
            if (px + rad > hf_center[0] - hf_size[0] - 0.3 and
                    py - rad < hf_center[1] + hf_size[1] + 0.3):
                continue
            if any(math.hypot(px - ox, py - oy) < rad + orad + 0.15
                   for ox, oy, orad in placed):
                continue
            break
        else:
            raise RuntimeError("could not place primitive %d" % i)
        placed.append((px, py, rad))
        prims.append(dict(gtype=gtype, size=size, rot=rot, q=q, pos=(px, py, z),
                          mode=mode, idx=counters[gtype]))

    # three static geoms go to group 2 (filter tests)
    group2 = []
    for want in ("sphere", "box", "cylinder"):
        for p in prims:
            if p["gtype"] == want and p["mode"] != "free":
                p["group"] = 2
                group2.append("%s_%02d" % (want, p["idx"]))
                break

    # --- write ---------------------------------------------------------
    x.open("mujoco", ("model", "glint_primitives"))
    x.leaf("compiler", ("angle", "degree"))
    x.leaf("option", ("timestep", TIMESTEP))
    x.open("asset")
    elev = hfield_elevation(hf_n)
    x.leaf("hfield", ("name", "hill_hfield"), ("nrow", str(hf_n)), ("ncol", str(hf_n)),
           ("size", fvec(hf_size)), ("elevation", " ".join(fnum(v, 4) for v in elev)))
    x.close("asset")
    x.open("worldbody")
    x.leaf("light", ("name", "sun"), ("directional", "true"), ("pos", "0 0 20"),
           ("dir", "-0.3 0.2 -1"))
    x.geom("ground", "plane", size=(0, 0, 0.1), rgba=(0.5, 0.55, 0.5, 1))
    x.comment("height field hill: 6 m x 6 m, 0.5 m high, centred at (7, -7)")
    x.geom("hill", "hfield", pos=(hf_center[0], hf_center[1], 0.01),
           rgba=(0.45, 0.6, 0.35, 1), hfield="hill_hfield")
    x.comment("static robot; the lidar site sits 1.2 m above the ground")
    x.open("body", ("name", "robot"), ("pos", "0 0 0"))
    x.geom("robot_base", "box", size=(0.25, 0.2, 0.1), pos=(0, 0, 0.1),
           rgba=(0.2, 0.2, 0.22, 1))
    x.geom("robot_mast", "cylinder", size=(0.03, 0.4), pos=(0, 0, 0.6),
           rgba=(0.3, 0.3, 0.3, 1))
    x.leaf("site", ("name", "lidar"), ("pos", "0 0 1.2"), ("size", "0.05"),
           ("rgba", "1 0 0 1"))
    x.close("body")
    camera(x, "overview", (7, -7, 5.5), (0, 0, 0.5))

    for p in prims:
        gtype, size, pos = p["gtype"], p["size"], p["pos"]
        rgba = color(rng, PRIM_COLORS[gtype])
        rot_kind, rot_val = p["rot"]
        quat = rot_val if rot_kind == "quat" else None
        euler = rot_val if rot_kind == "euler" else None
        if p["mode"] == "free":
            bname = "free_%s_%d" % (gtype, p["idx"])
            x.open("body", ("name", bname), ("pos", fvec(pos)),
                   ("quat", fvec(qnorm(quat), 6)) if quat is not None else ("quat", None))
            x.leaf("freejoint", ("name", bname + "_joint"))
            x.geom(bname + "_geom", gtype, size=size, rgba=rgba)
            x.close("body")
            continue
        gname = "%s_%02d" % (gtype, p["idx"])
        if p["idx"] % 3 == 0 and rot_kind != "euler":
            # static body with a yaw, geom offset inside it (tests frame
            # composition).  Pure yaw on the body keeps the z extent.
            yaw = rng.uniform(-180, 180)
            qb = qaxis((0, 0, 1), yaw)
            # the geom's world orientation is qb * qg == p["q"]
            qg = qmul((qb[0], -qb[1], -qb[2], -qb[3]), p["q"])
            x.open("body", ("name", gname + "_body"), ("pos", fvec((pos[0], pos[1], 0))),
                   ("euler", fvec((0, 0, yaw), 2)))
            x.geom(gname, gtype, size=size, pos=(0, 0, pos[2]), quat=qg, rgba=rgba,
                   group=p.get("group"))
            x.close("body")
        else:
            x.geom(gname, gtype, size=size, pos=pos, quat=quat, euler=euler, rgba=rgba,
                   group=p.get("group"))
    x.close("worldbody")
    x.close("mujoco")

    nfree = sum(1 for p in prims if p["mode"] == "free")
    header = header_comment([
        "primitives.xml: glint example scene.",
        "GENERATED by examples/generate.py; do not hand-edit, re-run the generator.",
        "",
        "Ground plane (infinite), a 32x32 height field hill in the (+x, -y) corner,",
        "%d primitives (sphere, capsule, ellipsoid, cylinder, box) over a 20 m x 20 m" % n_prims,
        "area, %d of them on free-joint bodies (dynamic), the rest static (some" % nfree,
        "rotated with euler or quat, some inside yawed static bodies, some floating).",
        "Site 'lidar' at (0, 0, 1.2) on the static 'robot' body; every primitive",
        "keeps at least 1.5 m horizontal clearance from it.",
        "Geoms in group 2 (for group filter tests): %s." % ", ".join(group2),
        "All other geoms are in group 0.",
    ])
    return x.text(header), x.ngeom


# ---------------------------------------------------------------------------
# scene 2: crowded.xml (warehouse)
# ---------------------------------------------------------------------------

def gen_crowded():
    rng = random.Random(4242)
    x = Xml()
    HX, HY = 20.0, 15.0  # floor half extents
    wall_h = 3.0          # half height
    bay_len, bays, depth = 2.7, 5, 1.1
    row_len = bay_len * bays
    levels = (0.12, 1.1, 2.1, 3.1)
    rack_h = 4.0
    row_ys = (2.5, 6.0, 9.5, 13.0, -2.5, -6.0, -9.5, -13.0)
    block_xs = (("W", -(3.0 + row_len / 2)), ("E", 3.0 + row_len / 2))
    lidar = (0.0, 0.0, 1.5)

    x.open("mujoco", ("model", "glint_crowded_warehouse"))
    x.leaf("compiler", ("angle", "degree"))
    x.leaf("option", ("timestep", TIMESTEP))
    x.open("worldbody")
    x.leaf("light", ("name", "sun"), ("directional", "true"), ("pos", "0 0 20"),
           ("dir", "-0.3 0.2 -1"))
    x.geom("ground", "plane", size=(HX, HY, 0.1), rgba=(0.55, 0.55, 0.52, 1))
    x.leaf("site", ("name", "lidar"), ("pos", fvec(lidar)), ("size", "0.05"),
           ("rgba", "1 0 0 1"))
    camera(x, "overview", (lidar[0] - 6, lidar[1] - 6, lidar[2] + 4), tuple(lidar))

    x.comment("walls")
    wall_rgba = (0.75, 0.72, 0.65, 1)
    x.geom("wall_north", "box", size=(HX + 0.2, 0.1, wall_h), pos=(0, HY + 0.1, wall_h), rgba=wall_rgba)
    x.geom("wall_south", "box", size=(HX + 0.2, 0.1, wall_h), pos=(0, -HY - 0.1, wall_h), rgba=wall_rgba)
    x.geom("wall_east", "box", size=(0.1, HY, wall_h), pos=(HX + 0.1, 0, wall_h), rgba=wall_rgba)
    x.geom("wall_west", "box", size=(0.1, HY, wall_h), pos=(-HX - 0.1, 0, wall_h), rgba=wall_rgba)

    x.comment("columns (cylinders) on a grid in the cross aisle and the end zones")
    col_r, col_hh = 0.25, wall_h
    columns = []
    for cx in (-18.25, 0.0, 18.25):
        for cy in (-11.25, -7.75, -4.25, 0.0, 4.25, 7.75, 11.25):
            if cx == 0.0 and cy == 0.0:
                continue  # the lidar aisle crossing stays clear
            columns.append((cx, cy))
    for k, (cx, cy) in enumerate(columns):
        x.geom("column_%02d" % k, "cylinder", size=(col_r, col_hh), pos=(cx, cy, col_hh),
               rgba=(0.62, 0.62, 0.66, 1))

    x.comment("rack rows: uprights, shelves and cartons; rows at y < 0 are rotated 180 deg")
    upright_rgba = (0.15, 0.3, 0.7, 1)
    shelf_rgba = (0.9, 0.5, 0.1, 1)
    for bname, bx in block_xs:
        for r, ry in enumerate(row_ys):
            rname = "rack_%s%d" % (bname, r + 1)
            flip = ry < 0
            x.open("body", ("name", rname), ("pos", fvec((bx, ry, 0))),
                   ("euler", "0 0 180" if flip else None))
            for i in range(bays + 1):
                ux = -row_len / 2 + i * bay_len
                ux += 0.05 if i == 0 else (-0.05 if i == bays else 0.0)
                for side, uy in (("a", depth / 2 - 0.05), ("b", -depth / 2 + 0.05)):
                    x.geom("%s_upright_%d%s" % (rname, i, side), "box",
                           size=(0.05, 0.05, rack_h / 2), pos=(ux, uy, rack_h / 2),
                           rgba=upright_rgba)
            for b in range(bays):
                bx0 = -row_len / 2 + b * bay_len + 0.1
                bx1 = -row_len / 2 + (b + 1) * bay_len - 0.1
                for l, lz in enumerate(levels):
                    x.geom("%s_shelf_%d_%d" % (rname, b, l), "box",
                           size=((bx1 - bx0) / 2, depth / 2 - 0.1, 0.03),
                           pos=((bx0 + bx1) / 2, 0, lz), rgba=shelf_rgba)
                    n = rng.choice((0, 0, 1, 1, 1, 2, 2))
                    cx = bx0 + rng.uniform(0.02, 0.2)
                    for c in range(n):
                        hx = rng.uniform(0.18, 0.38)
                        hy = rng.uniform(0.2, 0.42)
                        hz = rng.uniform(0.12, 0.32)
                        if cx + 2 * hx > bx1 - 0.02:
                            break
                        x.geom("%s_carton_%d_%d_%d" % (rname, b, l, c), "box",
                               size=(hx, hy, hz),
                               pos=(cx + hx, rng.uniform(-0.05, 0.05), lz + 0.03 + hz),
                               rgba=color(rng, (0.72, 0.55, 0.35), 0.08))
                        cx += 2 * hx + rng.uniform(0.03, 0.25)
            x.close("body")

    x.comment("pallets with stacked cartons in the end zones")
    pallet_slots = [(sx, sy) for sx in (-18.6, 18.6) for sy in row_ys]
    rng.shuffle(pallet_slots)
    pallet_slots = sorted(pallet_slots[:12])
    for k, (px, py) in enumerate(pallet_slots):
        pname = "pallet_%02d" % k
        yaw = rng.uniform(-5, 5)
        x.open("body", ("name", pname), ("pos", fvec((px, py, 0))),
               ("euler", fvec((0, 0, yaw), 2)))
        x.geom(pname + "_base", "box", size=(0.6, 0.5, 0.075), pos=(0, 0, 0.075),
               rgba=(0.6, 0.45, 0.25, 1))
        layers = rng.randint(1, 3)
        hz = rng.uniform(0.15, 0.25)
        for L in range(layers):
            for ix in (-1, 1):
                for iy in (-1, 1):
                    if L == layers - 1 and L > 0 and rng.random() < 0.3:
                        continue
                    x.geom("%s_box_%d_%d_%d" % (pname, L, (ix + 1) // 2, (iy + 1) // 2),
                           "box", size=(0.28, 0.23, hz),
                           pos=(ix * 0.29, iy * 0.24, 0.15 + hz * (2 * L + 1) + 0.002 * L),
                           rgba=color(rng, (0.7, 0.6, 0.4), 0.1))
        x.close("body")

    x.comment("floor clutter: capsules, spheres and ellipsoids in the aisles")
    rects = [(-2.9, 2.9, -14.9, 14.9), (-16.5, 16.5, -1.9, 1.9), (16.6, 17.8, -14.9, 14.9),
             (-17.8, -16.6, -14.9, 14.9)]
    for sgn in (-1, 1):
        for a0, a1 in ((3.1, 5.4), (6.6, 8.9), (10.1, 12.4), (13.6, 14.9)):
            for bx0, bx1 in ((3.0, 16.5), (-16.5, -3.0)):
                y0, y1 = sorted((sgn * a0, sgn * a1))
                rects.append((bx0, bx1, y0, y1))
    clutter = []
    n_clutter = 84
    ctypes = ("capsule", "sphere", "ellipsoid")
    for k in range(n_clutter):
        gtype = ctypes[k % 3]
        yaw = rng.uniform(-180, 180)
        if gtype == "capsule":
            size = (rng.uniform(0.05, 0.12), rng.uniform(0.2, 0.5))
            q = qmul(qaxis((0, 0, 1), yaw), qaxis((1, 0, 0), 90))
        elif gtype == "sphere":
            size = (rng.uniform(0.1, 0.3),)
            q = None
        else:
            size = (rng.uniform(0.15, 0.35), rng.uniform(0.15, 0.35), rng.uniform(0.1, 0.2))
            q = qaxis((0, 0, 1), yaw)
        rad = bound_radius(gtype, size)
        for _ in range(10000):
            x0, x1, y0, y1 = rects[rng.randrange(len(rects))]
            if x1 - x0 < 2 * rad + 0.1 or y1 - y0 < 2 * rad + 0.1:
                continue
            px = rng.uniform(x0 + rad + 0.05, x1 - rad - 0.05)
            py = rng.uniform(y0 + rad + 0.05, y1 - rad - 0.05)
            if math.hypot(px - lidar[0], py - lidar[1]) < 1.0 + rad + 0.3:
                continue
            if any(math.hypot(px - cx, py - cy) < col_r + rad + 0.1 for cx, cy in columns):
                continue
            if any(math.hypot(px - ox, py - oy) < rad + orad + 0.05 for ox, oy, orad in clutter):
                continue
            break
        else:
            raise RuntimeError("could not place clutter %d" % k)
        clutter.append((px, py, rad))
        z = zsupport(gtype, size, q if q is not None else (1, 0, 0, 0))
        base = {"capsule": (0.2, 0.7, 0.7), "sphere": (0.9, 0.2, 0.3),
                "ellipsoid": (0.4, 0.8, 0.3)}[gtype]
        x.geom("clutter_%s_%02d" % (gtype, k), gtype, size=size, pos=(px, py, z), quat=q,
               rgba=color(rng, base))
    x.close("worldbody")
    x.close("mujoco")

    assert 950 <= x.ngeom <= 1100, x.ngeom
    header = header_comment([
        "crowded.xml: glint example scene, a warehouse of %d primitive geoms." % x.ngeom,
        "GENERATED by examples/generate.py; do not hand-edit, re-run the generator.",
        "",
        "Finite ground plane (40 m x 30 m) with box walls, 16 rack rows (box uprights,",
        "shelves and cartons), %d cylinder columns, %d pallets of stacked boxes and" % (len(columns), len(pallet_slots)),
        "%d capsules/spheres/ellipsoids as floor clutter. Everything is static." % n_clutter,
        "Site 'lidar' at (0, 0, 1.5) on the world body, where the central aisle",
        "(along x) crosses the cross aisle (along y); no geometry within 1 m of it.",
        "All geoms are in group 0.",
    ])
    return x.text(header), x.ngeom


# ---------------------------------------------------------------------------
# meshes
# ---------------------------------------------------------------------------

def check_and_orient(name, verts, faces, nd=6):
    """Round vertices to the precision they are written with, verify the mesh
    is a closed, consistently oriented 2-manifold without degenerate faces or
    duplicate vertices, and orient it outward (positive volume)."""
    verts = [tuple(round(c, nd) for c in v) for v in verts]
    assert len(set(verts)) == len(verts), "%s: duplicate vertices" % name
    edges = {}
    for f in faces:
        for k in range(3):
            e = (f[k], f[(k + 1) % 3])
            assert e not in edges, "%s: edge used twice in the same direction" % name
            edges[e] = 1
    for (a, b) in edges:
        assert (b, a) in edges, "%s: open or inconsistent edge" % name
    vol = 0.0
    min_area = float("inf")
    for a, b, c in faces:
        pa, pb, pc = verts[a], verts[b], verts[c]
        vol += (pa[0] * (pb[1] * pc[2] - pb[2] * pc[1])
                - pa[1] * (pb[0] * pc[2] - pb[2] * pc[0])
                + pa[2] * (pb[0] * pc[1] - pb[1] * pc[0])) / 6.0
        u = (pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2])
        v = (pc[0] - pa[0], pc[1] - pa[1], pc[2] - pa[2])
        cx = (u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0])
        min_area = min(min_area, 0.5 * math.sqrt(cx[0] ** 2 + cx[1] ** 2 + cx[2] ** 2))
    assert min_area > 1e-7, "%s: degenerate triangle (area %g)" % (name, min_area)
    assert abs(vol) > 1e-3, "%s: volume too small" % name
    if vol < 0:
        faces = [(a, c, b) for a, b, c in faces]
        vol = -vol
    # Euler characteristic of a sphere (2) or a torus (0)
    chi = len(verts) - len(edges) // 2 + len(faces)
    return verts, faces, vol, chi


def latlong_mesh(nlat, nlon, point):
    """Closed lat-long surface; point(theta, phi) -> xyz, theta in [0, pi]."""
    verts = [point(0.0, 0.0)]
    for i in range(1, nlat):
        th = math.pi * i / nlat
        for j in range(nlon):
            verts.append(point(th, 2 * math.pi * j / nlon))
    verts.append(point(math.pi, 0.0))
    south = len(verts) - 1

    def idx(i, j):  # ring i in 1..nlat-1
        return 1 + (i - 1) * nlon + (j % nlon)

    faces = []
    for j in range(nlon):
        faces.append((0, idx(1, j), idx(1, j + 1)))
    for i in range(1, nlat - 1):
        for j in range(nlon):
            p00, p10, p11, p01 = idx(i, j), idx(i + 1, j), idx(i + 1, j + 1), idx(i, j + 1)
            faces.append((p00, p10, p11))
            faces.append((p00, p11, p01))
    for j in range(nlon):
        faces.append((south, idx(nlat - 1, j + 1), idx(nlat - 1, j)))
    return verts, faces


def sph(th, ph):
    return (math.sin(th) * math.cos(ph), math.sin(th) * math.sin(ph), math.cos(th))


def mesh_uv_sphere():
    return latlong_mesh(80, 128, lambda th, ph: sph(th, ph))


def mesh_torus(R=1.2, r=0.35, nu=192, nv=80):
    verts = []
    for i in range(nu):
        u = 2 * math.pi * i / nu
        for j in range(nv):
            v = 2 * math.pi * j / nv
            rr = R + r * math.cos(v)
            verts.append((rr * math.cos(u), rr * math.sin(u), r * math.sin(v)))
    faces = []
    for i in range(nu):
        for j in range(nv):
            p00 = i * nv + j
            p10 = ((i + 1) % nu) * nv + j
            p11 = ((i + 1) % nu) * nv + (j + 1) % nv
            p01 = i * nv + (j + 1) % nv
            faces.append((p00, p10, p11))
            faces.append((p00, p11, p01))
    return verts, faces


def icosphere(level):
    t = (1 + math.sqrt(5)) / 2
    verts = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t),
             (0, -1, -t), (0, 1, -t), (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    verts = [tuple(c / math.sqrt(1 + t * t) for c in v) for v in verts]
    faces = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4),
             (11, 10, 2), (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8),
             (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    for _ in range(level):
        cache = {}

        def mid(a, b):
            key = (a, b) if a < b else (b, a)
            if key not in cache:
                pa, pb = verts[a], verts[b]
                m = [(pa[k] + pb[k]) / 2 for k in range(3)]
                n = math.sqrt(sum(c * c for c in m))
                verts.append(tuple(c / n for c in m))
                cache[key] = len(verts) - 1
            return cache[key]

        nf = []
        for a, b, c in faces:
            ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
            nf += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        faces = nf
    return verts, faces


def mesh_rock(rng):
    verts, faces = icosphere(5)
    waves = []
    for _ in range(14):
        d = sph(math.acos(rng.uniform(-1, 1)), rng.uniform(0, 2 * math.pi))
        f = rng.uniform(1.5, 7.0)
        waves.append((d, f, 0.16 / f, rng.uniform(0, 2 * math.pi)))
    out = []
    for p in verts:
        r = 1.0
        for d, f, a, ph in waves:
            r += a * math.sin(f * (d[0] * p[0] + d[1] * p[1] + d[2] * p[2]) + ph)
        out.append((1.2 * r * p[0], 1.0 * r * p[1], 0.8 * r * p[2]))
    return out, faces


def mesh_column(n=96, nz=128, H=3.0, R=0.5):
    """Twisted fluted column standing on z = 0, capped at both ends."""
    verts = []
    for k in range(nz):
        z = H * k / (nz - 1)
        twist = math.pi * z / H
        bulge = 1 + 0.08 * math.sin(math.pi * z / H)
        for j in range(n):
            th = 2 * math.pi * j / n
            r = R * bulge * (1 + 0.2 * math.cos(6 * th))
            verts.append((r * math.cos(th + twist), r * math.sin(th + twist), z))
    c0 = len(verts)
    verts.append((0.0, 0.0, 0.0))
    c1 = len(verts)
    verts.append((0.0, 0.0, H))
    faces = []
    for k in range(nz - 1):
        for j in range(n):
            p00, p10 = k * n + j, (k + 1) * n + j
            p11, p01 = (k + 1) * n + (j + 1) % n, k * n + (j + 1) % n
            faces.append((p00, p10, p11))
            faces.append((p00, p11, p01))
    top = (nz - 1) * n
    for j in range(n):
        faces.append((c0, j, (j + 1) % n))
        faces.append((c1, top + (j + 1) % n, top + j))
    return verts, faces


def mesh_blob():
    """Bunny-like blob: ellipsoidal body, head, two long ears, tail."""
    def norm(v):
        n = math.sqrt(sum(c * c for c in v))
        return tuple(c / n for c in v)

    bumps = [(norm((0.8, 0.0, 0.6)), 0.35, 0.15),    # head
             (norm((0.5, 0.22, 1.0)), 0.75, 0.025),  # ear
             (norm((0.5, -0.22, 1.0)), 0.75, 0.025),  # ear
             (norm((-1.0, 0.0, 0.25)), 0.18, 0.02),  # tail
             (norm((1.0, 0.0, 0.15)), 0.12, 0.03)]   # nose

    def point(th, ph):
        d = sph(th, ph)
        base = 1.0 / math.sqrt((d[0] / 1.0) ** 2 + (d[1] / 0.75) ** 2 + (d[2] / 0.7) ** 2)
        r = base
        for c, a, w in bumps:
            r += a * math.exp(-(1 - (d[0] * c[0] + d[1] * c[1] + d[2] * c[2])) / w)
        return (r * d[0], r * d[1], r * d[2])

    return latlong_mesh(100, 140, point)


def write_obj(path, name, verts, faces):
    lines = ["# %s: generated by examples/generate.py, do not hand-edit" % name,
             "# %d vertices, %d triangles, closed, counter-clockwise outward" % (len(verts), len(faces)),
             "o %s" % name]
    lines += ["v %s" % fvec(v, 6) for v in verts]
    lines += ["f %d %d %d" % (a + 1, b + 1, c + 1) for a, b, c in faces]
    write_text(path, "\n".join(lines) + "\n")


def write_stl(path, name, verts, faces):
    head = ("%s: generated by examples/generate.py" % name).encode("ascii")
    head = head[:80].ljust(80, b" ")
    parts = [head, struct.pack("<I", len(faces))]
    for a, b, c in faces:
        pa, pb, pc = verts[a], verts[b], verts[c]
        u = [pb[k] - pa[k] for k in range(3)]
        v = [pc[k] - pa[k] for k in range(3)]
        n = (u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0])
        ln = math.sqrt(sum(c * c for c in n))
        n = tuple(round(c / ln, 6) for c in n)
        parts.append(struct.pack("<12fH", *(n + pa + pb + pc), 0))
    with open(path, "wb") as fh:
        fh.write(b"".join(parts))


# ---------------------------------------------------------------------------
# scene 3: meshes.xml
# ---------------------------------------------------------------------------

def gen_meshes():
    rng = random.Random(777)
    os.makedirs(ASSETS, exist_ok=True)
    raw = [("sphere_uv", "obj", mesh_uv_sphere()),
           ("torus", "stl", mesh_torus()),
           ("rock", "obj", mesh_rock(rng)),
           ("twisted_column", "obj", mesh_column()),
           ("blob", "obj", mesh_blob())]
    meshes = {}
    file_tris = 0
    for name, ext, (v, f) in raw:
        v, f, vol, chi = check_and_orient(name, v, f)
        assert 10000 <= len(f) <= 60000, (name, len(f))
        assert chi == (0 if name == "torus" else 2), (name, chi)
        fname = "%s.%s" % (name, ext)
        if ext == "obj":
            write_obj(os.path.join(ASSETS, fname), name, v, f)
        else:
            write_stl(os.path.join(ASSETS, fname), name, v, f)
        meshes[name] = dict(file=fname, verts=v, faces=f, vol=vol)
        file_tris += len(f)

    # mesh assets: (asset name, source mesh, scale)
    assets = [("sphere_uv", "sphere_uv", None),
              ("sphere_squashed", "sphere_uv", (1.5, 1.0, 0.6)),
              ("torus", "torus", None),
              ("rock", "rock", None),
              ("rock_flat", "rock", (2.0, 1.4, 0.7)),
              ("twisted_column", "twisted_column", None),
              ("twisted_column_tall", "twisted_column", (0.8, 0.8, 1.6)),
              ("blob", "blob", None)]
    asset_scale = {a: (src, sc or (1.0, 1.0, 1.0)) for a, src, sc in assets}

    lidar = (0.0, 0.0, 1.5)
    # (geom name, asset, x, y, quaternion, sink into the ground)
    inst = [
        ("sphere_a", "sphere_uv", 4.5, 3.0, (1, 0, 0, 0), 0.0),
        ("sphere_b", "sphere_squashed", -5.5, 7.5, qaxis((0, 0, 1), 30), 0.0),
        ("torus_flat", "torus", -4.5, -3.5, (1, 0, 0, 0), 0.0),
        ("torus_upright", "torus", 7.5, -3.0,
         qmul(qaxis((0, 0, 1), 25), qaxis((1, 0, 0), 90)), 0.0),
        ("torus_tilted", "torus", 12.0, 1.0,
         qmul(qaxis((0, 0, 1), -40), qaxis((1, 0, 0), 60)), 0.0),
        ("rock_1", "rock", -7.5, 0.5, qrandom(rng), 0.15),
        ("rock_2", "rock", 1.5, 8.5, qrandom(rng), 0.15),
        ("rock_3", "rock", 10.5, 6.0, qrandom(rng), 0.1),
        ("rock_flat_1", "rock_flat", 2.0, -8.5, qaxis((0, 0, 1), 40), 0.2),
        ("rock_flat_2", "rock_flat", -11.0, -7.0, qaxis((0, 0, 1), -20), 0.2),
        ("column_1", "twisted_column", -2.5, 4.0, (1, 0, 0, 0), 0.0),
        ("column_2", "twisted_column", 3.0, -4.5, qaxis((0, 0, 1), 45), 0.0),
        ("column_leaning", "twisted_column_tall", -9.5, 4.5,
         qmul(qaxis((0, 0, 1), 30), qaxis((0, 1, 0), 12)), 0.0),
        ("blob_1", "blob", -4.0, -8.5, qaxis((0, 0, 1), 60), 0.0),
        ("blob_2", "blob", 8.5, -9.0, qaxis((0, 0, 1), -110), 0.0),
    ]
    placed = []  # (name, x, y, horizontal radius)
    geoms = []
    for gname, asset, px, py, q, sink in inst:
        src, sc = asset_scale[asset]
        R = qmat(q)
        pts = []
        for v in meshes[src]["verts"]:
            s = (v[0] * sc[0], v[1] * sc[1], v[2] * sc[2])
            pts.append(tuple(R[i][0] * s[0] + R[i][1] * s[1] + R[i][2] * s[2] for i in range(3)))
        pz = -min(p[2] for p in pts) - sink
        hr = max(math.hypot(p[0], p[1]) for p in pts)
        dmin = min(math.sqrt((p[0] + px - lidar[0]) ** 2 + (p[1] + py - lidar[1]) ** 2 +
                             (p[2] + pz - lidar[2]) ** 2) for p in pts)
        assert dmin > 1.3, (gname, dmin)
        placed.append((gname, px, py, hr))
        geoms.append((gname, asset, (px, py, pz), q))

    prims = [
        ("crate_1", "box", (0.4, 0.4, 0.4), (2.8, 0.5, 0.4), qaxis((0, 0, 1), 5)),
        ("crate_2", "box", (0.4, 0.4, 0.4), (2.8, -0.45, 0.4), qaxis((0, 0, 1), -3)),
        ("crate_3", "box", (0.3, 0.3, 0.3), (2.8, 0.0, 1.1), qaxis((0, 0, 1), 20)),
        ("barrel", "cylinder", (0.3, 0.45), (-2.5, -1.5, 0.45), None),
        ("pipe", "capsule", (0.12, 0.8), (0.0, -3.0, 0.12),
         qmul(qaxis((0, 0, 1), 15), qaxis((0, 1, 0), 90))),
        ("ball", "sphere", (0.35,), (-1.5, 2.5, 0.35), None),
    ]
    for name, gtype, size, pos, q in prims:
        hr = bound_radius(gtype, size)
        # clearance to the lidar via the bounding sphere
        assert math.dist(pos, lidar) - hr > 1.0, name
        if name == "crate_1":  # the three crates as one footprint
            placed.append(("crates", 2.8, 0.0, 1.1))
        elif not name.startswith("crate"):
            placed.append((name, pos[0], pos[1], hr))
    for i in range(len(placed)):
        for j in range(i + 1, len(placed)):
            a, b = placed[i], placed[j]
            assert math.hypot(a[1] - b[1], a[2] - b[2]) > a[3] + b[3] + 0.05, (a[0], b[0])

    x = Xml()
    x.open("mujoco", ("model", "glint_meshes"))
    x.leaf("compiler", ("angle", "degree"), ("meshdir", "assets"))
    x.leaf("option", ("timestep", TIMESTEP))
    x.open("asset")
    for a, src, sc in assets:
        x.leaf("mesh", ("name", a), ("file", meshes[src]["file"]),
               ("scale", fvec(sc) if sc else None))
    x.close("asset")
    x.open("worldbody")
    x.leaf("light", ("name", "sun"), ("directional", "true"), ("pos", "0 0 20"),
           ("dir", "-0.3 0.2 -1"))
    x.geom("ground", "plane", size=(0, 0, 0.1), rgba=(0.5, 0.52, 0.55, 1))
    x.comment("sensor mount without geoms: site world position is (0, 0, 1.5)")
    x.open("body", ("name", "sensor_mount"), ("pos", "0 0 1"))
    x.leaf("site", ("name", "lidar"), ("pos", "0 0 0.5"), ("size", "0.05"), ("rgba", "1 0 0 1"))
    x.close("body")
    camera(x, "overview", (9, -9, 7), (0, 0, 1))
    mesh_colors = {"sphere": (0.8, 0.3, 0.3), "torus": (0.9, 0.7, 0.2), "rock": (0.5, 0.47, 0.42),
                   "twisted": (0.85, 0.85, 0.8), "blob": (0.75, 0.6, 0.5)}
    for gname, asset, pos, q in geoms:
        base = mesh_colors[asset.split("_")[0]]
        x.geom(gname, "mesh", pos=pos, quat=q, rgba=color(rng, base, 0.06), mesh=asset)
    x.comment("a few primitives")
    for name, gtype, size, pos, q in prims:
        x.geom(name, gtype, size=size, pos=pos, quat=q, rgba=color(rng, (0.3, 0.5, 0.8)))
    x.close("worldbody")
    x.close("mujoco")

    model_tris = sum(len(meshes[src]["faces"]) for _, src, _ in assets)
    assert model_tris >= 100000
    lines = [
        "meshes.xml: glint example scene, mesh heavy.",
        "GENERATED by examples/generate.py; do not hand-edit, re-run the generator.",
        "",
        "Mesh files in assets/ (closed, outward counter-clockwise winding):",
    ]
    for name, ext, _ in raw:
        m = meshes[name]
        lines.append("  %-20s %6d vertices %6d triangles" % (m["file"], len(m["verts"]), len(m["faces"])))
    lines += [
        "%d triangles in the files; %d mesh assets (some reuse a file with a" % (file_tris, len(assets)),
        "non-uniform scale) give %d triangles in the compiled model." % model_tris,
        "%d mesh geoms, a few primitives and an infinite ground plane, all static." % len(geoms),
        "Site 'lidar' at (0, 0, 1.5) (body 'sensor_mount' at z=1 plus site offset",
        "0.5); no geometry within 1 m of it. All geoms are in group 0.",
    ]
    return x.text(header_comment(lines)), x.ngeom


def main():
    for name, gen in (("primitives.xml", gen_primitives), ("crowded.xml", gen_crowded),
                      ("meshes.xml", gen_meshes)):
        text, ngeom = gen()
        write_text(os.path.join(HERE, name), text)
        print("wrote %-15s (%d geoms)" % (name, ngeom))


if __name__ == "__main__":
    main()
