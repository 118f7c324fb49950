# stomp-agent-bridge as a container: built with the project's locked dependencies, run as a
# non-root user on a distroless base (glibc, CA certificates, no shell).
#   docker build -t stomp-agent-bridge .
#   docker run -v $PWD/config/artemis.toml:/etc/stomp-agent-bridge/bridge.toml:ro stomp-agent-bridge

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY benches ./benches
RUN cargo build --release --locked --bin stomp-agent-bridge

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/stomp-agent-bridge /usr/local/bin/stomp-agent-bridge
COPY config/bridge.toml /etc/stomp-agent-bridge/bridge.toml
# Listen on every interface inside the container so that /metrics can be scraped.
ENV BRIDGE__HTTP__LISTEN=0.0.0.0:9464
EXPOSE 9464
USER 65532:65532
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/stomp-agent-bridge", "health", "--config", "/etc/stomp-agent-bridge/bridge.toml"]
ENTRYPOINT ["/usr/local/bin/stomp-agent-bridge"]
CMD ["run", "--config", "/etc/stomp-agent-bridge/bridge.toml"]
