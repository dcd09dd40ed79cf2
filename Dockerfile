# Hearth as a container image: one image for Docker, Compose and the Home Assistant add-on.
#
#   podman build -t hearth .            (or docker build; the repository root is the context)
#   docker run -d --network=host -v hearth-data:/data hearth
#
# BUILD_FROM is the base, as the Home Assistant Supervisor passes it; the build and the
# runtime stages use the same one, so the venv's Python is the one that runs it. The
# CUDA variant (on paper; see docs/operating/container.md):
#
#   docker build --build-arg BUILD_FROM=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04 \
#       --build-arg GPU=cuda -t hearth:cuda .
#
# GPU picks what `make install` puts in the venv (cpu, or cuda: the CUDA 12 runtime
# wheels and onnxruntime-gpu, exactly the Makefile's cuda path). llama-cpp-python is
# compiled for a baseline CPU, not the build machine's: x86-64-v3 (AVX2, FMA, F16C: every
# Intel core since 2013, the N100, every AMD Zen) or armv8-a with NEON (every Raspberry Pi
# from the 3, Home Assistant Green), unless LLAMA_CMAKE_ARGS says otherwise or a wheel of
# it lies in .wheels/ in the context (the tests put the one `make install` built there).
# CTranslate2 and onnxruntime choose their CPU kernels when they start.
ARG BUILD_FROM=debian:bookworm-slim

FROM ${BUILD_FROM} AS build
ARG GPU=cpu
ARG LLAMA_CMAKE_ARGS=""
ENV DEBIAN_FRONTEND=noninteractive \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore
# A CA bundle, where the network needs one, comes as a build secret and is never kept.
RUN --mount=type=secret,id=ca \
    if [ -s /run/secrets/ca ]; then \
      export PIP_CERT=/run/secrets/ca; APT_CA="-o Acquire::https::CAInfo=/run/secrets/ca"; \
    fi; \
    apt-get $APT_CA update -q \
    && apt-get $APT_CA install -y -q --no-install-recommends \
       ca-certificates python3 python3-venv python3-dev build-essential cmake make \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml constraints.txt Makefile README.md ./
COPY daemon daemon
COPY protocols protocols
COPY integrations integrations
COPY voices voices
COPY .wheels .wheels
RUN --mount=type=secret,id=ca \
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca; fi; \
    case "$(uname -m)" in \
      x86_64) BASELINE="-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" ;; \
      aarch64) BASELINE="-DGGML_CPU_ARM_ARCH=armv8-a" ;; \
    esac; \
    export CMAKE_ARGS="${LLAMA_CMAKE_ARGS:--DGGML_NATIVE=OFF $BASELINE}" \
    && export PIP_FIND_LINKS=/src/.wheels \
    && make install VENV=/opt/hearth INSTALL_SPEC=. GPU=${GPU} PYTHON=python3 \
    && /opt/hearth/bin/python -m pip uninstall -q -y pip setuptools wheel \
    && find /opt/hearth -name '__pycache__' -prune -exec rm -rf {} + \
    && rm -f /opt/hearth/.installed-stamp /opt/hearth/.cuda-stamp

FROM ${BUILD_FROM}
ENV DEBIAN_FRONTEND=noninteractive
RUN --mount=type=secret,id=ca \
    if [ -s /run/secrets/ca ]; then APT_CA="-o Acquire::https::CAInfo=/run/secrets/ca"; fi; \
    apt-get $APT_CA update -q \
    && apt-get $APT_CA install -y -q --no-install-recommends ca-certificates python3 libgomp1 \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/cache/debconf/*-old \
    && useradd --system --uid 1000 --user-group --home-dir /data --no-create-home hearth \
    && mkdir -p /data && chown hearth:hearth /data && chmod 0750 /data
COPY --from=build /opt/hearth /opt/hearth
COPY config.yaml /etc/hearth/config.yaml
# Every setting can also come from HEARTH_* variables (docs/operating/configuration.md).
# All state (voices, speakers, the TLS certificate, caches, the joined LLM file) is in
# /data; nothing else is written. HOME points there too, for libraries that cache.
ENV PATH=/opt/hearth/bin:$PATH \
    HEARTH_CONFIG=/etc/hearth/config.yaml \
    HEARTH_STATE_DIR=/data \
    HOME=/data \
    XDG_CACHE_HOME=/data/cache \
    HF_HUB_OFFLINE=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
VOLUME /data
WORKDIR /data
# Wyoming, HTTP, HTTPS, and WebRTC media. mDNS (Home Assistant finding Hearth by itself)
# and WebRTC from the LAN need the host's network: run with --network=host.
EXPOSE 10300/tcp 19000/tcp 19001/tcp 10000-10049/udp
# Hearth itself answers: a Wyoming describe that names its programs, and /healthz ready.
HEALTHCHECK --start-period=10m --interval=30s --timeout=10s --retries=3 \
    CMD ["/opt/hearth/bin/hearth", "health"]
# The entrypoint starts as root only to give /data to the hearth user (a Home Assistant
# add-on's /data is root's), then drops to it; as the add-on it also announces Wyoming to
# the Supervisor. Arguments are hearth's: the default is serve.
ENTRYPOINT ["/opt/hearth/bin/hearth-entrypoint"]
CMD ["serve"]
