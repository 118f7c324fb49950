#!/usr/bin/env bash
# The container way on a machine with no Docker engine and no image registry to pull from
# (these machines: docs/CONTAINERS.md), as root: Debian's podman (4.3) with runc,
# vfs storage and ulimits the sandbox allows, podman-compose from PyPI, and local stand-ins for
# the public images, made from Debian's packages and Maven Central, cached in the state folder
# (${SAB_CONTAINER_STATE:-/var/lib/stomp-agent-bridge/container}: podman's storage, the
# debootstrap tarball, podman-compose's virtualenv), so that a second run reuses them:
#   localhost/sab/distroless-cc:bookworm  for gcr.io/distroless/cc-debian12:nonroot: glibc,
#       libgcc, CA certificates, tzdata, netbase, users root/nobody/nonroot (65532), no shell;
#       made by unpacking those Debian packages (as distroless is made), not by debootstrap
#   localhost/sab/debian:bookworm         debootstrap --variant=minbase, the base of the next two
#   localhost/sab/activemq-artemis:2.37.0 for apache/activemq-artemis:2.37.0, laid out as it is
#       (scripts/container/artemis/)
#   localhost/sab/redis:bookworm          for redis:7 (scripts/container/redis/)
# Each is rebuilt only when what makes it changed (a label holds the hash of its recipe).
# Usage:
#   scripts/container.sh install          podman, runc, debootstrap (apt), podman-compose (PyPI)
#   scripts/container.sh bases            the local base images above
#   scripts/container.sh build [host]     the bridge's image from the Dockerfile, BUILD=host: the
#                                         release binary built here (cargo), same Debian 12 glibc
#   scripts/container.sh build cargo      the Dockerfile's public path, BUILD=cargo, with a local
#                                         Rust 1.95 image made from the host's toolchain (not in CI)
#   scripts/container.sh compose ARGS...  podman-compose on docker-compose.yml with the local
#                                         images (e.g. `up -d`, `ps`, `logs bridge`, `down -v`)
#   scripts/container.sh podman ARGS...   podman with this configuration
# The image names and the compose stack's ports can be set as for docker-compose.yml
# (BRIDGE_IMAGE, ARTEMIS_IMAGE, REDIS_IMAGE, ARTEMIS_STOMP_PORT, ...).
# SAB_DEBIAN_MIRROR: the Debian mirror debootstrap reads (e.g. http://<mirror>/debian). Unset, it
# is the first URI ending in /debian in this machine's apt sources (/etc/apt/sources.list,
# /etc/apt/sources.list.d/*.sources and *.list); with none there, `bases` stops and says so.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
state=${SAB_CONTAINER_STATE:-/var/lib/stomp-agent-bridge/container}
artemis_version=${SAB_ARTEMIS_VERSION:-2.37.0}
runtime_image=localhost/sab/distroless-cc:bookworm
debian_image=localhost/sab/debian:bookworm
artemis_image=localhost/sab/activemq-artemis:$artemis_version
redis_image=localhost/sab/redis:bookworm
bridge_image=${BRIDGE_IMAGE:-localhost/stomp-agent-bridge:local}
log() { printf '[container] %s\n' "$*" >&2; }

# podman's configuration for this machine, through the variables podman and buildah read, so
# that podman-compose's own podman calls get it too: runc (crun's setrlimit is refused), the
# sandbox's ulimits (podman's defaults are refused), vfs storage in the state folder, and the
# docker image format (OCI images have no HEALTHCHECK).
configure() {
  mkdir -p "$state"
  # What lives only until a reboot, per state folder.
  local run
  run=/run/sab-container/$(echo "$state" | sha256sum | cut -c1-12)
  cat >"$state/storage.conf" <<EOF
[storage]
driver = "vfs"
graphroot = "$state/storage"
runroot = "$run/storage"
EOF
  cat >"$state/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
events_logger = "file"
tmp_dir = "$run/libpod"
EOF
  export CONTAINERS_STORAGE_CONF=$state/storage.conf CONTAINERS_CONF=$state/containers.conf BUILDAH_FORMAT=docker
}

# shellcheck source=scripts/apt.sh
. scripts/apt.sh # the working directory is the repository (above)

install() {
  apt_install podman runc debootstrap
  local venv=$state/venv
  if [ ! -x "$venv/bin/podman-compose" ]; then
    log "installing podman-compose from PyPI into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check 'podman-compose==1.6.0'
  fi
}

# The Debian mirror for debootstrap: SAB_DEBIAN_MIRROR if set, else the first URI ending in
# /debian in the machine's apt sources (deb822 `URIs:` or one-line `deb`). None is an error.
debian_mirror() {
  if [ -n "${SAB_DEBIAN_MIRROR:-}" ]; then
    echo "$SAB_DEBIAN_MIRROR"
    return 0
  fi
  local sources=(/etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list)
  local readable=() file uri=
  for file in "${sources[@]}"; do
    if [ -r "$file" ]; then readable+=("$file"); fi
  done
  if [ "${#readable[@]}" -gt 0 ]; then
    uri=$(sed -n -e 's/^URIs:[[:space:]]*//p' -e 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\).*/\2/p' \
      "${readable[@]}" | tr ' ' '\n' | grep -m1 -E '/debian/?$' || true)
  fi
  if [ -z "$uri" ]; then
    log "no Debian mirror for debootstrap: no URI ending in /debian on a 'URIs:' line (deb822) or a" \
      "'deb' line of /etc/apt/sources.list, /etc/apt/sources.list.d/*.sources or" \
      "/etc/apt/sources.list.d/*.list (files read: ${readable[*]:-none}). Set SAB_DEBIAN_MIRROR to" \
      "the URL of the Debian mirror to use, e.g. SAB_DEBIAN_MIRROR=http://<mirror>/debian."
    return 1
  fi
  echo "$uri"
}

recipe_hash() { # function-or-file... : what an image is made from
  local item
  for item in "$@"; do
    if declare -F "$item" >/dev/null; then declare -f "$item"; else cat "$item"; fi
  done | sha256sum | cut -c1-16
}

current() { # image hash: the image exists and was made from this recipe
  [ "$(podman image inspect --format '{{index .Config.Labels "sab.recipe"}}' "$1" 2>/dev/null)" = "$2" ]
}

# gcr.io/distroless/cc-debian12 is Debian 12's libc6, libgcc-s1, ca-certificates, tzdata,
# netbase and base-files unpacked (no maintainer scripts, no shell), /etc/passwd with root,
# nobody and nonroot (65532), and the CA bundle; :nonroot runs as 65532 in /home/nonroot.
runtime_rootfs() { # dir
  local dir=$1 debs
  debs=$(mktemp -d)
  (cd "$debs" && apt-get download -qq -o APT::Sandbox::User=root \
    libc6 libgcc-s1 ca-certificates tzdata netbase base-files)
  local deb
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$dir"; done
  rm -rf "$debs"
  mkdir -p "$dir/etc/ssl/certs" "$dir/tmp" "$dir/root" "$dir/home/nonroot"
  find "$dir/usr/share/ca-certificates" -name '*.crt' | sort | xargs cat >"$dir/etc/ssl/certs/ca-certificates.crt"
  find "$dir/usr/share/doc" -type f ! -name copyright -delete
  rm -rf "$dir/usr/share/man" "$dir/usr/share/lintian" "$dir/usr/share/info"
  # glibc's character-set converters (8 MB), loaded by iconv(3) only: the bridge never calls it.
  find "$dir/usr/lib" -type d -name gconv -prune -exec rm -rf {} +
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$dir/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$dir/etc/group"
  printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n' >"$dir/etc/nsswitch.conf"
  chmod 755 "$dir"
  chmod 1777 "$dir/tmp"
  chmod 700 "$dir/root" "$dir/home/nonroot"
  chown 65532:65532 "$dir/home/nonroot"
}

runtime_base() {
  local hash dir
  hash=$(recipe_hash runtime_rootfs runtime_base)
  current "$runtime_image" "$hash" && return 0
  log "making $runtime_image from Debian's packages"
  dir=$(mktemp -d)
  runtime_rootfs "$dir"
  tar -C "$dir" --numeric-owner -c . | podman import -q \
    --change 'USER 65532:65532' --change 'WORKDIR /home/nonroot' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    --change "LABEL sab.recipe=$hash" - "$runtime_image" >/dev/null
  rm -rf "$dir"
}

debian_base() {
  local hash tarball=$state/debian-bookworm-minbase.tar mirror
  mirror=$(debian_mirror) || exit 1 # its message is on stderr
  hash=$(echo "minbase ca-certificates bookworm $mirror, / 755" | sha256sum | cut -c1-16)
  current "$debian_image" "$hash" && return 0
  if [ ! -s "$tarball" ] || [ "$(cat "$tarball.recipe" 2>/dev/null)" != "$hash" ]; then
    log "debootstrap of Debian 12 (minbase) from $mirror into $tarball"
    local dir
    dir=$(mktemp -d)
    debootstrap --variant=minbase --include=ca-certificates bookworm "$dir" "$mirror" >"$state/debootstrap.log" 2>&1 \
      || { tail -n 20 "$state/debootstrap.log" >&2; rm -rf "$dir"; return 1; }
    rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
    chmod 755 "$dir" # mktemp's 0700 would keep every user but root out of /
    tar -C "$dir" --numeric-owner -cf "$tarball.part" . && mv "$tarball.part" "$tarball"
    echo "$hash" >"$tarball.recipe"
    rm -rf "$dir"
  fi
  log "importing $debian_image"
  podman import -q --change 'CMD ["/bin/bash"]' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' --change "LABEL sab.recipe=$hash" "$tarball" "$debian_image" >/dev/null
}

# The Artemis distribution, as scripts/brokers.sh fetches it (Maven Central, Maven's client):
# its cache when it has one, else our own.
artemis_dist() {
  local cached=${SAB_BROKER_STATE:-/var/lib/stomp-agent-bridge/brokers}/artemis/dist/apache-artemis-$artemis_version-bin.tar.gz
  [ -s "$cached" ] && { echo "$cached"; return 0; }
  local own=$state/dist/apache-artemis-$artemis_version-bin.tar.gz
  if [ ! -s "$own" ]; then
    command -v mvn >/dev/null || apt_install maven
    log "fetching ActiveMQ Artemis $artemis_version from Maven Central into $state/dist"
    mkdir -p "$state/dist"
    mvn -q dependency:copy "-Dartifact=org.apache.activemq:apache-artemis:$artemis_version:tar.gz:bin" \
      "-DoutputDirectory=$state/dist" >&2
  fi
  echo "$own"
}

artemis_base() {
  local hash context
  hash=$(recipe_hash scripts/container/artemis/Containerfile scripts/container/artemis/docker-run.sh; echo "$artemis_version $(podman image inspect --format '{{.Id}}' "$debian_image")")
  hash=$(echo "$hash" | sha256sum | cut -c1-16)
  current "$artemis_image" "$hash" && return 0
  log "building $artemis_image (Java 17 from Debian's packages, Artemis from Maven Central)"
  context=$(mktemp -d)
  cp scripts/container/artemis/Containerfile scripts/container/artemis/docker-run.sh "$context/"
  mkdir "$context/activemq-artemis"
  tar -xzf "$(artemis_dist)" -C "$context/activemq-artemis" --strip-components=1
  podman build -q --network=host --build-arg "BASE=$debian_image" --label "sab.recipe=$hash" \
    -t "$artemis_image" "$context" >/dev/null
  rm -rf "$context"
}

redis_base() {
  local hash
  hash=$(recipe_hash scripts/container/redis/Containerfile; podman image inspect --format '{{.Id}}' "$debian_image")
  hash=$(echo "$hash" | sha256sum | cut -c1-16)
  current "$redis_image" "$hash" && return 0
  log "building $redis_image (Debian's redis-server)"
  podman build -q --network=host --build-arg "BASE=$debian_image" --label "sab.recipe=$hash" \
    -t "$redis_image" scripts/container/redis >/dev/null
}

bases() {
  runtime_base
  debian_base
  artemis_base
  redis_base
  podman image prune -f >/dev/null # what a remade image replaced
}

# The Dockerfile's `host` path: the release binary built here (Debian 12, the glibc of the
# runtime base) is copied into the build context's .container/bin/.
build() {
  log "building the release binary (cargo build --release --locked)"
  cargo build --release --locked --quiet --bin stomp-agent-bridge
  mkdir -p .container/bin
  cp "${CARGO_TARGET_DIR:-target}/release/stomp-agent-bridge" .container/bin/stomp-agent-bridge
  log "building $bridge_image from the Dockerfile (BUILD=host, RUNTIME_IMAGE=$runtime_image)"
  podman build -q --build-arg BUILD=host --build-arg "RUNTIME_IMAGE=$runtime_image" -t "$bridge_image" . >/dev/null
  podman image prune -f >/dev/null
}

# The Dockerfile's public path (BUILD=cargo, `cargo build --release` inside the build) with a
# local stand-in for the Rust image: the host's toolchain, if it is 1.95, on Debian 12 with gcc.
# Not run by the tests (minutes, and crates.io reached from inside the build).
build_cargo() {
  local rust_image=localhost/sab/rust:1.95 toolchain context hash
  toolchain=$(rustc --print sysroot)
  rustc --version | grep -q '^rustc 1\.95\.' || { log "the host's rustc is not 1.95: $(rustc --version)"; return 1; }
  hash=$(recipe_hash scripts/container/rust/Containerfile; rustc --version; podman image inspect --format '{{.Id}}' "$debian_image")
  hash=$(echo "$hash" | sha256sum | cut -c1-16)
  if ! current "$rust_image" "$hash"; then
    log "building $rust_image from the host's toolchain ($toolchain)"
    context=$(mktemp -d)
    cp scripts/container/rust/Containerfile "$context/"
    mkdir "$context/toolchain"
    cp -a "$toolchain/bin" "$toolchain/lib" "$toolchain/libexec" "$context/toolchain/"
    podman build -q --network=host --build-arg "BASE=$debian_image" --label "sab.recipe=$hash" \
      -t "$rust_image" "$context" >/dev/null
    rm -rf "$context"
  fi
  log "building $bridge_image from the Dockerfile (BUILD=cargo, RUST_IMAGE=$rust_image, RUNTIME_IMAGE=$runtime_image)"
  podman build -q --network=host --build-arg BUILD=cargo --build-arg "RUST_IMAGE=$rust_image" \
    --build-arg "RUNTIME_IMAGE=$runtime_image" -t "$bridge_image" . >/dev/null
  podman image prune -f >/dev/null
}

# docker-compose.yml with the local images; everything else as the environment says.
compose() {
  export BRIDGE_IMAGE=$bridge_image ARTEMIS_IMAGE=${ARTEMIS_IMAGE:-$artemis_image} REDIS_IMAGE=${REDIS_IMAGE:-$redis_image}
  export RUNTIME_IMAGE=${RUNTIME_IMAGE:-$runtime_image} BRIDGE_BUILD=${BRIDGE_BUILD:-host}
  "$state/venv/bin/podman-compose" -f docker-compose.yml "$@"
}

configure
action=${1:-}
shift || true
case "$action" in
  install) install ;;
  bases) install; bases ;;
  build)
    install
    case "${1:-host}" in
      host) build ;;
      cargo) build_cargo ;;
      *) log "build host|cargo"; exit 2 ;;
    esac ;;
  compose) compose "$@" ;;
  podman) exec podman "$@" ;;
  *) sed -n '2,30p' "${BASH_SOURCE[0]}" >&2; exit 2 ;;
esac
