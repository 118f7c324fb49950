# stomp-agent-bridge as a container: built with the project's locked dependencies, run as a
# non-root user on a distroless base (glibc, libgcc, CA certificates, no shell).
#   docker build -t stomp-agent-bridge .
#   docker run -v $PWD/config/artemis.toml:/etc/stomp-agent-bridge/bridge.toml:ro stomp-agent-bridge
# Build arguments (the defaults are the public images):
#   RUST_IMAGE     the toolchain of the `cargo` build stage
#   RUNTIME_IMAGE  the runtime base: distroless cc, or an equivalent with user 65532
#   BUILD          `cargo` (default): `cargo build --release` in RUST_IMAGE; `host`: take the
#                  release binary built beforehand at .container/bin/stomp-agent-bridge (same
#                  Debian 12 glibc as RUNTIME_IMAGE), for machines that cannot pull RUST_IMAGE
#                  (scripts/container.sh, docs/CONTAINERS.md)
ARG RUST_IMAGE=rust:1.95-slim-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot
ARG BUILD=cargo

FROM ${RUST_IMAGE} AS build-cargo
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY benches ./benches
# The workspace's other member (the load and soak tools): cargo loads every member's manifest.
COPY tools ./tools
RUN cargo build --release --locked --bin stomp-agent-bridge

FROM scratch AS build-host
COPY .container/bin/stomp-agent-bridge /src/target/release/stomp-agent-bridge

# Only the stage BUILD names is built (BuildKit and buildah skip unused stages).
FROM build-${BUILD} AS build

FROM ${RUNTIME_IMAGE}
COPY --from=build /src/target/release/stomp-agent-bridge /usr/local/bin/stomp-agent-bridge
COPY config/bridge.toml /etc/stomp-agent-bridge/bridge.toml
# Listen on every interface inside the container so that /metrics can be scraped.
ENV BRIDGE__HTTP__LISTEN=0.0.0.0:9464
EXPOSE 9464
USER 65532:65532
# No shell in the image: the check is the bridge's own `health` command (GET /healthz).
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/stomp-agent-bridge", "health", "--config", "/etc/stomp-agent-bridge/bridge.toml"]
# SIGTERM (docker stop) stops taking messages, settles those in flight within
# delivery.shutdown_timeout_ms (10 s by default), disconnects and exits 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/stomp-agent-bridge"]
CMD ["run", "--config", "/etc/stomp-agent-bridge/bridge.toml"]
