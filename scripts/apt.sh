# Sourced by the scripts that install from Debian's packages (brokers.sh, container.sh), which
# define `log` first.
apt_install() { # package...: those not installed yet, with one apt-get update when the lists are empty or stale
  local missing=() p
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]} from Debian's packages"
  # An install stopped half-way (a run killed while it installed) leaves dpkg waiting to be
  # configured, and apt refuses everything until it is.
  DEBIAN_FRONTEND=noninteractive dpkg --configure -a >/dev/null
  if [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v -e lock -e partial || true)" ]; then
    apt-get update -qq
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; }
}
