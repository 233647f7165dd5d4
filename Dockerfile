# gpushare-extender, gpushare-device-plugin and kubectl-inspect-gpushare on Debian 12 (bookworm), from registry base
# images, for machines that are not Debian 12:
#   docker build -t REGISTRY/gpushare-extender:TAG .
# On Debian 12, scripts/build-image.sh builds the same from local packages with Containerfile
# (no registry, runtime packages found from the binaries rather than listed here).
# Build stage: the Debian packages of scripts/install-deps.sh (the same script), then CMake.
FROM debian:bookworm AS build
COPY scripts/install-deps.sh scripts/apt-install-missing.sh /tmp/
RUN /tmp/install-deps.sh && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DGPUSHARE_BUILD_TESTS=OFF -DGPUSHARE_BUILD_BENCH=OFF \
 && cmake --build /build -j"$(nproc)" --target gpushare-extender gpushare-device-plugin \
      kubectl-inspect-gpushare \
 && strip /build/gpushare-extender /build/gpushare-device-plugin /build/kubectl-inspect-gpushare

# Runtime stage: only the shared libraries the binaries load (gRPC and protobuf for the device
# plugin; NVML comes from the node at run time), CA certificates for the API server's TLS, and
# an unprivileged user.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates libcpp-httplib0.11 libcurl4 libspdlog1.10 libfmt9 libyaml-cpp0.7 \
      libssl3 zlib1g libbrotli1 libprometheus-cpp-core1.0 libsimdjson14 \
      libgrpc++1.51 libprotobuf32 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 65532 gpushare \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin gpushare
COPY --from=build /build/gpushare-extender /build/gpushare-device-plugin \
     /build/kubectl-inspect-gpushare /usr/local/bin/
USER 65532:65532
EXPOSE 39999
ENTRYPOINT ["/usr/local/bin/gpushare-extender"]
