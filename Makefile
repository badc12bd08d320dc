# glint: `make demo` runs the main job on the bundled showroom, `make test` runs every test.
# Both fetch MuJoCo 3.17's library once (scripts/fetch-mujoco.sh) and build what they need.

CARGO ?= cargo
MUJOCO_LIB := .deps/mujoco/lib/libmujoco.so
GLINT := target/release/glint
SCENES := primitives crowded meshes

.PHONY: all deps pydeps lerobot osmesa corpus qemu python wheel build native demo test bench lights-report lights-report-franka lint clean

all: build

deps: $(MUJOCO_LIB)

$(MUJOCO_LIB): scripts/fetch-mujoco.sh
	@bash scripts/fetch-mujoco.sh

# Pinned Python packages some tests use to read glint's files (plyfile, pyarrow) and encode
# video (imageio-ffmpeg), in .deps/venv.
pydeps:
	@bash scripts/python-deps.sh

# LeRobot 0.6.1 (Python 3.12, PyTorch from PyPI) in .deps/lerobot, pinned in
# scripts/lerobot-requirements.txt: tests/python/test_lerobot.py loads the datasets
# `glint export --format lerobot` writes with its LeRobotDataset.
lerobot:
	@bash scripts/lerobot-venv.sh

# Mesa's software OpenGL (Debian's libosmesa6, pinned) in .deps/osmesa: MuJoCo's classic
# renderer draws headless on the CPU with it (MUJOCO_GL=osmesa) for `glint lights report`.
osmesa:
	@bash scripts/osmesa.sh

# The acceptance corpus of real robot models (tests/corpus/scenes.toml): the pinned wheels of
# robosuite, dm-control, mjlab and dm-robotics-panda downloaded (not installed), their MJCF and
# assets unpacked into .deps/corpus, and each scene written there with its camera
# (docs/corpus.md).
corpus: pydeps
	@bash scripts/corpus.sh

OSMESA_LIB := $(CURDIR)/.deps/osmesa/usr/lib/$(shell gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
RENDER_ENV := MUJOCO_GL=osmesa GLINT_PYTHON=$(CURDIR)/.deps/venv/bin/python GLINT_WARP_CACHE=$(CURDIR)/.deps/warp-cache \
	LD_LIBRARY_PATH=$(CURDIR)/.deps/mujoco/lib:$(OSMESA_LIB)$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}

# QEMU's user-mode emulator (Debian's qemu-user-static, pinned) in .deps/qemu: the tests run
# the portable build on emulated older CPUs with it (they fetch it themselves when missing).
qemu:
	@bash scripts/qemu.sh >/dev/null

# glint's Python module, built into .deps/venv (editable: the Python sources are used in place).
python: deps pydeps
	@bash scripts/python-module.sh

# The wheel users install (no Rust, no checkout): dist/glint-<version>-cp310-abi3-manylinux_*.whl
# with the module, the `glint` tool and MuJoCo 3.17's library inside (scripts/wheel.sh).
wheel: deps pydeps
	@bash scripts/wheel.sh

build: deps
	$(CARGO) build --release -p glint-cli

# A build for this machine's CPU alone (`-C target-cpu=native`), which older CPUs cannot run:
# target/native/release/glint, and the Python module in .deps/venv (`make python` puts the
# portable one back). The default build is within a few per cent of it (docs/performance.md).
# The flags go in CARGO_TARGET_<triple>_RUSTFLAGS, after .cargo/config.toml's and with its
# rpath: RUSTFLAGS would replace them all.
HOST := $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')
NATIVE_ENV := CARGO_TARGET_DIR=$(CURDIR)/target/native \
	CARGO_TARGET_$(shell echo '$(HOST)' | tr 'a-z-' 'A-Z_')_RUSTFLAGS="-C target-cpu=native"
native: deps pydeps
	$(NATIVE_ENV) $(CARGO) build --release -p glint-cli
	@$(NATIVE_ENV) bash scripts/python-module.sh
	@echo "built for this CPU: target/native/release/glint, and the glint module in .deps/venv"

# The main job on the bundled showroom: a robot drives past glass, a mirror, a pool and a
# hedge for ten simulated seconds while its OS1-64 is recorded to a Parquet session in
# out/sessions/; it prints where the session is and how to replay it.
demo: build
	@$(GLINT) run examples/showroom/showroom.toml --seconds 10 --out out/sessions

# Every test; benchmarks run in their short mode (see `make bench` for the full runs). The
# Python tests drive `glint serve` through LuckyEngine's own client (luckyrobots), each
# starting the server on a free loopback port, and the `glint` Python module built by
# `make python`; the LeRobot export's tests load datasets with LeRobot itself (.deps/lerobot).
test: deps pydeps lerobot osmesa python corpus
	LD_LIBRARY_PATH=$(CURDIR)/.deps/mujoco/lib$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH} $(CARGO) test --release --workspace
	$(CARGO) build --release -p glint-cli
	GLINT_BIN=$(CURDIR)/$(GLINT) GLINT_LEROBOT_PYTHON=$(CURDIR)/.deps/lerobot/bin/python $(RENDER_ENV) \
		.deps/venv/bin/python -m pytest tests/python -q

# Full benchmarks: every example scene with every pattern, and the lidar API against the bare
# core, as JSON lines in out/bench.jsonl.
bench: build python osmesa
	@mkdir -p out
	@rm -f out/bench.jsonl
	@for s in $(SCENES); do for p in os1-64 vlp16 mid360; do \
		$(GLINT) bench rays examples/$$s.xml --pattern $$p --repeats 11 --json | tee -a out/bench.jsonl || exit 1; \
	done; done
	@for s in $(SCENES); do \
		$(GLINT) bench lidar examples/$$s.xml --preset ouster-os1-64 --repeats 11 --json | tee -a out/bench.jsonl || exit 1; \
	done
	@for s in $(SCENES); do \
		$(GLINT) bench rangefinder examples/$$s.xml --count 1000 --steps 1000 --json | tee -a out/bench.jsonl || exit 1; \
	done
	@$(GLINT) bench returns examples/showroom/showroom.toml --repeats 11 --json | tee -a out/bench.jsonl
	@$(GLINT) bench record examples/showroom/showroom.toml --seconds 10 --repeats 5 --json | tee -a out/bench.jsonl
	@$(GLINT) bench serve examples/showroom/showroom.toml --calls 500 --seconds 5 --json | tee -a out/bench.jsonl
	@$(GLINT) bench variants examples/variants.toml --worlds 1024 --steps 20 --repeats 5 --json | tee -a out/bench.jsonl
	@.deps/venv/bin/python -m glint.bench gym --json | tee -a out/bench.jsonl
	@GLINT_BIN=$(CURDIR)/$(GLINT) .deps/venv/bin/python -m glint.bench distributed --json | tee -a out/bench.jsonl
	@for s in lights/scene primitives meshes; do \
		$(RENDER_ENV) $(GLINT) bench render examples/$$s.xml --res 256 --shadows --json | tee -a out/bench.jsonl || exit 1; \
	done

# The seed's light-rig measurement: the bundled arm scene with no rig and with each of the
# seed's five rigs, rendered by MuJoCo's classic renderer on the CPU; the table beside the
# seed's, and the PNGs in out/lights.
lights-report: build pydeps osmesa
	@$(RENDER_ENV) $(GLINT) lights report --out out/lights --force

# The same measurement on a real Franka's meshes: dm-robotics-panda's arm and hand from the
# corpus, posed as the bundled arm, in the bundled scene's floor, objects, lights and camera
# (tests/corpus/templates/lights_franka.xml, written by `make corpus`); PNGs in out/lights-franka.
LIGHTS_FRANKA := .deps/corpus/dm_robotics_panda/dm_robotics/panda/assets/panda/glint_lights_franka.xml
lights-report-franka: build pydeps osmesa corpus
	@$(RENDER_ENV) $(GLINT) lights report --scene $(LIGHTS_FRANKA) --out out/lights-franka --force

lint: deps
	$(CARGO) fmt --all --check
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings

clean:
	$(CARGO) clean
