# bench/common/emulated_hosts.sh: sourced by the benchmark scripts that run on emulated hosts
# (tools/run_on_hosts). require_emulated_hosts BINARY...: returns when this machine can emulate
# hosts (root; ip, tc and nft) and every BINARY is built; otherwise stops the script: skipped
# (exit 77) naming what is missing, or failed (exit 1) when CI is set, since a CI machine must run
# it. The caller sets `script` to its name for the messages.

cannot_run() {
  case "${CI:-}" in
    "" | 0 | false) ;;
    *)
      echo "$script: cannot emulate hosts in CI: $1" >&2
      exit 1
      ;;
  esac
  echo "$script: skipped: $1"
  exit 77
}

require_emulated_hosts() {
  local missing="" tool binary
  [ "$(id -u)" -eq 0 ] || missing="$missing root (network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN);"
  for tool in ip tc nft; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing the $tool command;"
  done
  [ -z "$missing" ] || cannot_run "missing:$missing"
  for binary in "$@"; do
    if [ ! -x "$binary" ]; then
      echo "$script: $binary is missing (build it: cmake --build build --target $(basename "$binary"))" >&2
      exit 1
    fi
  done
}
