"""The acceptance corpus's measurements (tests/corpus/scenes.toml, built by scripts/corpus.sh
into .deps/corpus): per scene, glint's rays, depth and segmentation against MuJoCo's own
``mj_ray`` (the ``mujoco`` package), and glint's RGB against MuJoCo's
classic renderer (``mujoco.Renderer`` under OSMesa, through glint-cli's ``mujoco_render.py``
in a child process, as ``glint lights report`` renders). test_corpus.py asserts on them;
run as a script, this writes their table into docs/corpus.md:

    make corpus osmesa python && .deps/venv/bin/python tests/python/corpus_figures.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / ".deps" / "corpus"
SCENES_TOML = REPO / "tests" / "corpus" / "scenes.toml"
RENDER_SCRIPT = REPO / "crates" / "glint-cli" / "src" / "mujoco_render.py"
CAMERA = "corpus_view"
# Small images and a few thousand rays per scene keep the corpus run short on two cores.
WIDTH, HEIGHT = 128, 96
# The lidar-like pattern: from each origin, ELEVATIONS x AZIMUTHS rays.
ELEVATIONS, AZIMUTHS = 16, 64

# The acceptance bounds (issue 36).
SSIM_MIN = 0.95
LUMA_MAX_PERCENT = 3.0
# Equality with mj_ray: the same geom, the distance to rounding, the same normal.
DIST_RTOL = 1e-6
NORMAL_TOL = 1e-6

CHECKS = ("rays", "camera", "rgb")


def scenes() -> list[dict]:
    return tomllib.loads(SCENES_TOML.read_text())["scene"]


def suite_known() -> dict[str, str]:
    """The suite models that fail today, each with its cause."""
    table = tomllib.loads(SCENES_TOML.read_text()).get("suite", {})
    return dict(entry.split(": ", 1) for entry in table.get("known", []))


def known_checks(scene: dict) -> dict[str, str]:
    """A scene's `known` entries as check -> cause."""
    out = {}
    for entry in scene.get("known", []):
        check, _, cause = entry.partition(": ")
        if check not in CHECKS or not cause:
            raise ValueError(f"scene {scene['name']}: known entry {entry!r} is not 'CHECK: cause' with CHECK one of {CHECKS}")
        out[check] = cause
    return out


def scene_file(scene: dict) -> Path:
    """Where scripts/corpus.sh wrote a scene (tests/corpus/assemble.py's rule)."""
    pkg = CORPUS / scene["package"].replace("-", "_")
    base = (pkg / scene["source"]).parent if "source" in scene else pkg / scene["dir"]
    return base / f"glint_corpus_{scene['name']}.xml"


def suite_models() -> list[Path]:
    """dm_control's suite models (suite/*.xml), without the corpus's own copies."""
    suite = CORPUS / "dm_control" / "dm_control" / "suite"
    return sorted(p for p in suite.glob("*.xml") if not p.name.startswith("glint_corpus_"))


def require_corpus() -> None:
    missing = [str(scene_file(s)) for s in scenes() if not scene_file(s).is_file()]
    if missing:
        raise FileNotFoundError(
            f"the corpus is not built ({missing[0]} is missing): run `make corpus` (scripts/corpus.sh)"
        )


@dataclass
class Figures:
    """One scene's measurements; a check passes when its disagreements are 0 (rays, camera) or
    its figures are within the bounds (rgb)."""

    name: str
    rays: int = 0
    ray_geom: int = 0
    ray_dist: int = 0
    ray_normal: int = 0
    ray_tie: int = 0
    pixels: int = 0
    pix_seg: int = 0
    pix_depth: int = 0
    pix_tie: int = 0
    ssim: float = float("nan")
    luma_percent: float = float("nan")
    mean_abs: float = float("nan")
    notes: list[str] = field(default_factory=list)

    def passed(self, check: str) -> bool:
        if check == "rays":
            return self.rays > 0 and self.ray_geom + self.ray_dist + self.ray_normal == 0
        if check == "camera":
            # A tie (two coincident surfaces) is the renderer's draw order, not a difference.
            return self.pixels > 0 and self.pix_seg - self.pix_tie + self.pix_depth == 0
        return self.ssim >= SSIM_MIN and abs(self.luma_percent) <= LUMA_MAX_PERCENT

    def line(self) -> str:
        return (
            f"{self.name}: rays {self.rays} (geom {self.ray_geom} [{self.ray_tie} at equal distance], dist {self.ray_dist}, "
            f"normal {self.ray_normal} differ); pixels {self.pixels} (seg {self.pix_seg} [{self.pix_tie} at equal depth], "
            f"depth {self.pix_depth} differ); "
            f"SSIM {self.ssim:.3f}, foreground luma {self.luma_percent:+.1f} %, mean |diff| {self.mean_abs:.1f}"
        )


def mujoco_model(path: Path):
    import mujoco

    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return model, data


def lidar_directions() -> np.ndarray:
    """Unit directions of a spinning lidar's pattern: elevations -60..+30 degrees, a full turn."""
    el = np.radians(np.linspace(-60.0, 30.0, ELEVATIONS))
    az = np.radians(np.arange(AZIMUTHS) * 360.0 / AZIMUTHS + 0.37)
    e, a = np.meshgrid(el, az, indexing="ij")
    return np.stack([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)], axis=-1).reshape(-1, 3)


def ray_origins(model, data) -> np.ndarray:
    """The camera, and three points around the model's centre at half its extent."""
    import mujoco

    cam = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, CAMERA)
    c, r = np.array(model.stat.center), 0.5 * model.stat.extent
    return np.array([data.cam_xpos[cam], c + [r, 0.3 * r, 0.4 * r], c + [-0.6 * r, -r, 0.2 * r], c + [0.1 * r, 0.2 * r, r]])


def mj_rays(model, data, origin, dirs, geomgroup, normals: bool = False):
    """`mj_ray` for each direction from one origin: geom ids, distances, normals. Not
    `mj_multiRay`, whose own culling misses geoms `mj_ray` hits (265 of the Sawyer scene's
    12 288 camera rays in MuJoCo 3.17): the acceptance is equality with `mj_ray`."""
    import mujoco

    n = len(dirs)
    ids, dist, normal = np.full(n, -1, dtype=np.int32), np.full(n, -1.0), np.zeros((n, 3))
    gid, nrm = np.zeros(1, dtype=np.int32), np.zeros(3)
    for i in range(n):
        dist[i] = mujoco.mj_ray(model, data, origin, dirs[i], geomgroup, 1, -1, gid, nrm if normals else None)
        ids[i] = gid[0]
        normal[i] = nrm
    return ids, dist, normal


def measure_rays(sim, model, data, fig: Figures) -> None:
    """glint's `rays` against `mj_ray` from each origin, every geom group seen."""
    import mujoco

    dirs = lidar_directions()
    n = len(dirs)
    for origin in ray_origins(model, data):
        dist, geomid, normal = sim.rays(origin, dirs)
        ref_id, ref_dist, ref_normal = mj_rays(model, data, origin, dirs, None, normals=True)
        same = geomid[0] == ref_id
        hit = same & (ref_id >= 0)
        fig.rays += n
        fig.ray_geom += int((~same).sum())
        fig.ray_tie += int((~same & (np.abs(dist[0] - ref_dist) <= DIST_RTOL * np.maximum(1.0, ref_dist))).sum())
        fig.ray_dist += int((np.abs(dist[0] - ref_dist) > DIST_RTOL * np.maximum(1.0, ref_dist))[hit].sum())
        fig.ray_normal += int((np.abs(normal[0] - ref_normal).max(axis=1) > NORMAL_TOL)[hit].sum())


def camera_rays(model, data) -> tuple[np.ndarray, np.ndarray, float]:
    """The corpus camera's position, its per-pixel unit directions (rows top to bottom), and
    each direction's length before normalising (a pixel's distance / that = its depth)."""
    import mujoco

    cam = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, CAMERA)
    pos, mat = data.cam_xpos[cam].copy(), data.cam_xmat[cam].reshape(3, 3)
    f = 0.5 / np.tan(np.radians(model.cam_fovy[cam]) / 2) * HEIGHT
    col, row = np.meshgrid(np.arange(WIDTH) + 0.5, np.arange(HEIGHT) + 0.5)
    local = np.stack([(col - WIDTH / 2) / f, (HEIGHT / 2 - row) / f, -np.ones_like(col)], axis=-1).reshape(-1, 3)
    length = np.linalg.norm(local, axis=1)
    return pos, (local @ mat.T) / length[:, None], length


# MuJoCo's renderer draws a geom whose alpha is below this as transparent: blended after the
# opaque ones, writing no depth (`mjr_render`).
OPAQUE_ALPHA = 0.995
# A geom's colour when its MJCF gives none; then its material's alpha is drawn (`setMaterial`).
DEFAULT_RGBA = np.array([0.5, 0.5, 0.5, 1.0], dtype=np.float32)
# How far past a transparent surface the walk through a pixel goes on (m): far below the depth
# tolerance, and added to the distance travelled.
STEP_PAST = 1e-7


def renderer_alpha(model, g: int) -> float:
    """The alpha MuJoCo's renderer draws geom `g` with (`setMaterial` in
    engine_vis_visualize.c): its material's when its own colour is the default, else its
    colour's. (`mj_ray` skips a geom by the alpha of its material when it has one.)"""
    m = model.geom_matid[g]
    if m >= 0 and np.array_equal(model.geom_rgba[g].astype(np.float32), DEFAULT_RGBA):
        return float(model.mat_rgba[m][3])
    return float(model.geom_rgba[g][3])


def renderer_rays(model, data, origin, dirs, geomgroup):
    """What MuJoCo's renderer shows through each direction, from `mj_ray`: the segmentation
    is the nearest geom it draws (alpha above 0), the depth that of the nearest geom it draws
    opaquely (transparent geoms write none); a ray meeting a geom drawn otherwise walks on
    past it. Returns (segmentation ids, depth distances), -1 where nothing is drawn."""
    import mujoco

    ids, dist, _ = mj_rays(model, data, origin, dirs, geomgroup)
    seg, depth = ids.copy(), dist.copy()
    gid = np.zeros(1, dtype=np.int32)
    for i in np.nonzero(ids >= 0)[0]:
        g, d = int(ids[i]), float(dist[i])
        if renderer_alpha(model, g) >= OPAQUE_ALPHA:
            continue
        point, travelled, first = np.array(origin, dtype=np.float64), 0.0, -1
        while g >= 0:
            alpha = renderer_alpha(model, g)
            if alpha > 0.0 and first < 0:
                first = g
            if alpha >= OPAQUE_ALPHA:
                break
            point = point + dirs[i] * (d + STEP_PAST)
            travelled += d + STEP_PAST
            d = mujoco.mj_ray(model, data, point, dirs[i], geomgroup, 1, -1, gid, None)
            g = int(gid[0])
        seg[i] = first
        depth[i] = travelled + d if g >= 0 else -1.0
    return seg, depth


def skin_rays(model, data, origin, dirs):
    """Where each direction meets the skins and flexes MuJoCo's renderer draws (groups 0-2,
    alpha above 0): their triangles as `mjv_updateScene` poses them (`skinvert`, and the
    `flexface` that `mjv_updateActiveFlex` builds), made into the meshes of a model of their
    own and met by `mj_ray` there. Returns (ids, distances), -1 where none is met, an id being
    a skin's or `nskin + flex`; None for a model with neither."""
    import mujoco

    if model.nskin == 0 and model.nflex == 0:
        return None
    opt = mujoco.MjvOption()
    scene = mujoco.MjvScene(model, maxgeom=100_000)
    mujoco.mjv_updateScene(model, data, opt, None, mujoco.MjvCamera(), mujoco.mjtCatBit.mjCAT_ALL, scene)
    spec, drawn = mujoco.MjSpec(), []

    def add(k, vert, faces):
        mesh = spec.add_mesh(name=f"surface{k}", uservert=vert.astype(np.float64).ravel().tolist())
        mesh.userface = faces.ravel().tolist()
        mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL
        spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_MESH, meshname=f"surface{k}")
        drawn.append(k)

    verts = np.asarray(scene.skinvert).reshape(-1, 3)
    for k in range(model.nskin):
        if not opt.skingroup[min(max(model.skin_group[k], 0), 5)] or model.skin_rgba[k][3] == 0:
            continue
        adr, num = scene.skinvertadr[k], scene.skinvertnum[k]
        add(k, verts[adr : adr + num], model.skin_face[model.skin_faceadr[k] : model.skin_faceadr[k] + model.skin_facenum[k]])
    faces = np.asarray(scene.flexface).reshape(-1, 3, 3)
    for f in range(model.nflex):
        used = scene.flexfaceused[f]
        if not used or not opt.flexgroup[min(max(model.flex_group[f], 0), 5)] or model.flex_rgba[f][3] == 0:
            continue
        corners = faces[scene.flexfaceadr[f] : scene.flexfaceadr[f] + used].reshape(-1, 3)
        # Each face its own three vertices; a degenerate one (a strip's) is dropped by the
        # compiler, and is invisible all the same.
        add(model.nskin + f, corners, np.arange(3 * used).reshape(-1, 3))
    ids, dist = np.full(len(dirs), -1), np.full(len(dirs), -1.0)
    if not drawn:
        return ids, dist
    surfaces = spec.compile()
    surface_data = mujoco.MjData(surfaces)
    mujoco.mj_forward(surfaces, surface_data)
    gid = np.zeros(1, dtype=np.int32)
    for i, d in enumerate(dirs):
        t = mujoco.mj_ray(surfaces, surface_data, np.asarray(origin, dtype=np.float64), d, None, 1, -1, gid)
        if gid[0] >= 0:
            ids[i], dist[i] = drawn[gid[0]], t
    return ids, dist


def measure_camera(view: dict, model, data, fig: Figures) -> None:
    """glint's depth and segmentation against what MuJoCo's renderer shows through each
    pixel's centre (`renderer_rays`: `mj_ray` with the renderer's alpha rules), with the
    camera's groups (0, 1, 2, as MuJoCo's renderer draws). Where two surfaces coincide the
    renderer shows the later drawn, which `mj_ray` does not tell: such pixels are ties."""
    pos, dirs, length = camera_rays(model, data)
    n = len(dirs)
    ref_id, ref_dist = renderer_rays(model, data, pos, dirs, np.array([1, 1, 1, 0, 0, 0], dtype=np.uint8))
    skin = skin_rays(model, data, pos, dirs)
    if skin is not None:
        # A skin or flex nearer than the geoms shows, segmented as ngeom + its id.
        skin_id, skin_dist = skin
        nearer = (skin_id >= 0) & ((ref_dist < 0) | (skin_dist < ref_dist))
        ref_id = np.where(nearer, model.ngeom + skin_id, ref_id)
        ref_dist = np.where(nearer, skin_dist, ref_dist)
    seg = view["seg"][0].reshape(-1)
    depth = view["depth"][0].reshape(-1).astype(np.float64)
    ref_depth = np.where(ref_dist >= 0, ref_dist / length, 0.0)
    same = seg == ref_id
    fig.pixels += n
    fig.pix_seg += int((~same).sum())
    fig.pix_tie += int((~same & (np.abs(depth - ref_depth) <= 1e-6 * np.maximum(1.0, ref_depth))).sum())
    # depth is float32: its rounding bounds the comparison.
    fig.pix_depth += int((np.abs(depth - ref_depth) > 1e-6 * np.maximum(1.0, ref_depth) + 1e-7 * ref_depth).sum())


def classic_render(jobs: list[tuple[Path, Path]]) -> None:
    """MuJoCo's classic renderer (OSMesa) draws each (mjcf, out) job's corpus camera."""
    triplet = subprocess.run(["gcc", "-dumpmachine"], capture_output=True, text=True).stdout.strip() or "x86_64-linux-gnu"
    osmesa = REPO / ".deps" / "osmesa" / "usr" / "lib" / triplet
    if not (osmesa / "libOSMesa.so.8").is_file():
        raise FileNotFoundError(f"{osmesa}/libOSMesa.so.8 is missing: run `make osmesa` (scripts/osmesa.sh)")
    env = dict(os.environ, MUJOCO_GL="osmesa")
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(osmesa), env.get("LD_LIBRARY_PATH")]))
    request = [{"mjcf": str(m), "camera": CAMERA, "width": WIDTH, "height": HEIGHT, "out": str(o)} for m, o in jobs]
    done = subprocess.run(
        [sys.executable, "-c", RENDER_SCRIPT.read_text()], input=json.dumps(request), capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        raise RuntimeError(f"MuJoCo's classic renderer failed: {done.stderr.strip().splitlines()[-1:]}")


def luma(rgb: np.ndarray) -> np.ndarray:
    """Rec. 601 luma, as glint-lights' `luminance`."""
    return rgb[..., 0] * 0.299 + rgb[..., 1] * 0.587 + rgb[..., 2] * 0.114


def foreground_mean(rgb: np.ndarray) -> float:
    """glint-lights' `exposure` mean: the centred 160/256 of each side."""
    h, w = rgb.shape[:2]
    fh, fw = max(h * 160 // 256, 1), max(w * 160 // 256, 1)
    y0, x0 = (h - fh) // 2, (w - fw) // 2
    return float(luma(rgb[y0 : y0 + fh, x0 : x0 + fw].astype(np.float64)).mean())


def ssim(a: np.ndarray, b: np.ndarray) -> float:
    """SSIM of two RGB images' luma, as glint-lights' `ssim` (Wang et al. 2004): an 11 x 11
    Gaussian window (sigma 1.5), K1 = 0.01, K2 = 0.03, averaged over every window inside."""
    r = 5
    g = np.exp(-((np.arange(2 * r + 1) - r) ** 2) / (2 * 1.5**2))
    g /= g.sum()

    def blur(img: np.ndarray) -> np.ndarray:
        rows = np.lib.stride_tricks.sliding_window_view(img, 2 * r + 1, axis=1) @ g
        return np.lib.stride_tricks.sliding_window_view(rows, 2 * r + 1, axis=0) @ g

    x, y = luma(a.astype(np.float64)), luma(b.astype(np.float64))
    mx, my = blur(x), blur(y)
    vx, vy, cov = blur(x * x) - mx * mx, blur(y * y) - my * my, blur(x * y) - mx * my
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    s = ((2 * mx * my + c1) * (2 * cov + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    return float(s.mean())


def measure_rgb(ours: np.ndarray, reference: np.ndarray, fig: Figures) -> None:
    fig.ssim = ssim(ours, reference)
    ref_mean = foreground_mean(reference)
    fig.luma_percent = 100.0 * (foreground_mean(ours) - ref_mean) / max(ref_mean, 1e-9)
    fig.mean_abs = float(np.abs(ours.astype(np.float64) - reference.astype(np.float64)).mean())


def measure(scene: dict, reference_rgb: np.ndarray | None) -> Figures:
    """Every figure of one scene; `reference_rgb` is MuJoCo's classic render of its camera."""
    import glint

    path = scene_file(scene)
    fig = Figures(scene["name"])
    sim = glint.Simulation.from_xml(str(path))
    model, data = mujoco_model(path)
    measure_rays(sim, model, data, fig)
    sim.set_cameras([{"camera": CAMERA, "width": WIDTH, "height": HEIGHT, "outputs": ["rgb", "depth", "seg"]}])
    view = sim.render()[CAMERA]
    measure_camera(view, model, data, fig)
    if reference_rgb is not None:
        measure_rgb(view["rgb"][0], reference_rgb, fig)
    return fig


def reference_images(names_paths: list[tuple[str, Path]]) -> dict[str, np.ndarray]:
    """MuJoCo's classic render of each scene's corpus camera, in one child process."""
    with tempfile.TemporaryDirectory(prefix="glint-corpus-") as tmp:
        jobs = [(p, Path(tmp) / f"{n}.rgb") for n, p in names_paths]
        classic_render(jobs)
        return {n: np.frombuffer(o.read_bytes(), dtype=np.uint8).reshape(HEIGHT, WIDTH, 3) for (n, _), (_, o) in zip(names_paths, jobs)}


def table(figures: list[Figures]) -> str:
    by_name = {s["name"]: s for s in scenes()}
    lines = [
        "| scene | package | features | rays (geom / dist / normal differ) | pixels (seg / depth differ) | SSIM | luma % | mean abs diff | known |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for f in figures:
        s = by_name[f.name]
        pkg = s["package"] if s["package"] == "glint" else f"{s['package']} {pinned()[s['package']]}"
        known = "; ".join(s.get("known", [])) or "none"
        lines.append(
            f"| {f.name} | {pkg} | {', '.join(s['features'])} | {f.rays} ({f.ray_geom} / {f.ray_dist} / {f.ray_normal}) "
            f"| {f.pixels} ({f.pix_seg} / {f.pix_depth}) | {f.ssim:.3f} | {f.luma_percent:+.1f} | {f.mean_abs:.1f} | {known} |"
        )
    return "\n".join(lines)


def pinned() -> dict[str, str]:
    pins = {}
    for line in (REPO / "tests" / "corpus" / "requirements.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, rest = line.split("==", 1)
            pins[name.strip()] = rest.split()[0]
    return pins


BEGIN, END = "<!-- corpus table: begin -->", "<!-- corpus table: end -->"


def main() -> int:
    require_corpus()
    all_scenes = scenes()
    images = reference_images([(s["name"], scene_file(s)) for s in all_scenes])
    figures = []
    for s in all_scenes:
        f = measure(s, images[s["name"]])
        print(f.line(), flush=True)
        figures.append(f)
    doc = REPO / "docs" / "corpus.md"
    text = doc.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    doc.write_text(f"{head}{BEGIN}\n{table(figures)}\n{END}{tail}")
    print(f"wrote the table into {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
