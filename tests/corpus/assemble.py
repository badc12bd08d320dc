"""Writes the corpus scenes of scenes.toml into .deps/corpus (run by scripts/corpus.sh after
the pinned wheels are unpacked there): each scene's `source` (a file of its package) or
`template` (a file of templates/) is written as `glint_corpus_<name>.xml` beside the files its
paths name, with one element added as the first child of `<worldbody>`: the camera
`corpus_view`, placed as MuJoCo's free camera would be from the scene's `camera` table
(lookat, distance, azimuth, elevation; defaults from the compiled model's statistic, as
MuJoCo's viewer starts). Nothing else of the scene is changed.

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
    return 0


if __name__ == "__main__":
    sys.exit(main())
