# Sourced by scripts/deps.sh and scripts/cross-aarch64.sh: installs the
# Debian packages that are not installed yet (apt-get update first), quietly
# when there is nothing to do. Uses sudo only when not root.
#   apt_install_missing LABEL PACKAGE...
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

apt_install_missing() {
  local label="$1"
  shift
  local missing=() p
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "$label: installing Debian packages: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}
