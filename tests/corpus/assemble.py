"""Writes the corpus scenes of scenes.toml into .deps/corpus (run by scripts/corpus.sh after
the pinned wheels are unpacked there): each scene's `source` (a file of its package) or
`template` (a file of templates/) is written as `glint_corpus_<name>.xml` beside the files its
paths name, with one element added as the first child of `<worldbody>`: the camera
`corpus_view`, placed as MuJoCo's free camera would be from the scene's `camera` table
(lookat, distance, azimuth, elevation; defaults from the compiled model's statistic, as
MuJoCo's viewer starts). Nothing else of the scene is changed.

It also writes scenes.toml's `[lights]` scene (the light-rig measurement's scene with a real
robot, docs/lights.md) as `glint_<name>.xml` into `dir` of its package: its template, with
`attach` (each a package file's body attached at a body of the scene, prefixed) and `home`
(joint angles baked in: each joint's `ref` is its angle and its body is turned by it about
the joint's axis, so that the model's own configuration, qpos0, which `glint lights report`
and MuJoCo's renderer draw, is that pose), written by MuJoCo's own writer. It is no corpus
check scene and gets no corpus camera.

Usage: python assemble.py CORPUS_DIR"""

from __future__ import annotations

import math
import re
import sys
import tomllib
from pathlib import Path

import mujoco

HERE = Path(__file__).resolve().parent
CAMERA = "corpus_view"


def package_dir(corpus: Path, package: str) -> Path:
    """Where scripts/corpus.sh unpacked a package (the wheel's name, `-` as `_`)."""
    return corpus / package.replace("-", "_")


def pinned_versions() -> dict[str, str]:
    """The package versions of requirements.txt."""
    pins = {}
    for line in (HERE / "requirements.txt").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==([^ ]+)", line)
        if m:
            pins[m.group(1)] = m.group(2)
    return pins


def scene_path(corpus: Path, scene: dict) -> Path:
    """The file a scene is written to."""
    if "source" in scene:
        base = (package_dir(corpus, scene["package"]) / scene["source"]).parent
    else:
        base = package_dir(corpus, scene["package"]) / scene["dir"]
    return base / f"glint_corpus_{scene['name']}.xml"


def with_element(xml: str, element: str, where: str) -> str:
    """`xml` with `element` as the first child of its (only) <worldbody>."""
    m = re.search(r"<worldbody\s*>", xml)
    if m is None:
        raise SystemExit(f"error: {where} has no <worldbody> to add the corpus camera to")
    return xml[: m.end()] + "\n    " + element + xml[m.end() :]


def camera_element(model: mujoco.MjModel, table: dict) -> str:
    """MuJoCo's free camera as a fixed <camera> in the world frame."""
    lookat = [float(v) for v in table.get("lookat", model.stat.center)]
    distance = float(table.get("distance", 1.5 * model.stat.extent))
    az, el = math.radians(table.get("azimuth", 90.0)), math.radians(table.get("elevation", -45.0))
    forward = [math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)]
    pos = [lookat[i] - distance * forward[i] for i in range(3)]
    right = [math.sin(az), -math.cos(az), 0.0]  # forward x world up, normalised
    up = [
        right[1] * forward[2] - right[2] * forward[1],
        right[2] * forward[0] - right[0] * forward[2],
        right[0] * forward[1] - right[1] * forward[0],
    ]
    f = lambda v: " ".join(f"{x:.6g}" for x in v)  # noqa: E731
    return f'<camera name="{CAMERA}" pos="{f(pos)}" xyaxes="{f(right)} {f(up)}" fovy="45"/>'


def quat_mul(a: list[float], b: list[float]) -> list[float]:
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return [
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ]


def posed_scene(src: Path, out: Path, table: dict, where: str) -> str:
    """The `[lights]` scene: the template at `out` (beside the files it names) with the
    `attach` bodies attached and the `home` pose baked in, as MuJoCo writes it."""
    out.write_text(src.read_text())
    spec = mujoco.MjSpec.from_file(str(out))
    for a in table.get("attach", []):
        child = mujoco.MjSpec.from_file(str(out.parent / a["file"]))
        frame = spec.body(a["parent"]).add_frame(quat=a.get("quat", [1.0, 0.0, 0.0, 0.0]))
        frame.attach_body(child.body(a["body"]), a["prefix"], "")
    for name, angle in table.get("home", {}).items():
        joint = spec.joint(name)
        if joint is None or joint.type != mujoco.mjtJoint.mjJNT_HINGE or any(joint.pos):
            raise SystemExit(f"error: {where}: home names {name}, not a hinge at its body's origin")
        body = joint.parent
        axis = [float(v) for v in joint.axis]
        norm = math.sqrt(sum(v * v for v in axis))
        half = 0.5 * float(angle)
        turn = [math.cos(half)] + [math.sin(half) * v / norm for v in axis]
        q = [float(v) for v in body.quat]
        qn = math.sqrt(sum(v * v for v in q))
        body.quat = quat_mul([v / qn for v in q], turn)
        joint.ref = float(angle)
    spec.compile()
    return spec.to_xml()


def main() -> int:
    corpus = Path(sys.argv[1]).resolve()
    pins = pinned_versions()
    scenes = tomllib.loads((HERE / "scenes.toml").read_text())["scene"]
    for scene in scenes:
        name, package = scene["name"], scene["package"]
        if package != "glint" and package not in pins:
            raise SystemExit(f"error: scene {name}: package {package} is not pinned in requirements.txt")
        if package == "glint":
            package_dir(corpus, package).mkdir(parents=True, exist_ok=True)
        src = (
            package_dir(corpus, package) / scene["source"] if "source" in scene else HERE / "templates" / scene["template"]
        )
        out = scene_path(corpus, scene)
        xml = src.read_text()
        # First without the camera, for the statistic the defaults come from.
        out.write_text(xml)
        model = mujoco.MjModel.from_xml_path(str(out))
        out.write_text(with_element(xml, camera_element(model, scene.get("camera", {})), str(src)))
        mujoco.MjModel.from_xml_path(str(out))
        print(f"corpus: {name}: {out.relative_to(corpus)}", file=sys.stderr)
    lights = tomllib.loads((HERE / "scenes.toml").read_text()).get("lights")
    if lights is not None:
        out = package_dir(corpus, lights["package"]) / lights["dir"] / f"glint_{lights['name']}.xml"
        where = f"scenes.toml [lights] {lights['name']}"
        xml = posed_scene(HERE / "templates" / lights["template"], out, lights, where)
        out.write_text(xml)
        mujoco.MjModel.from_xml_path(str(out))
        print(f"lights: {lights['name']}: {out.relative_to(corpus)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
