#!/usr/bin/env bash
# Installs what Weft's build and tests need on Debian 12: the Debian packages
# and a Python venv (.venv) with the pinned packages of requirements.txt.
# Idempotent and quiet when there is nothing to do. Uses sudo only when not
# root.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build g++ pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev libsimde-dev
  libpcre2-dev nlohmann-json3-dev libboost1.81-dev libssl-dev
  clang libclang-rt-14-dev
  python3 python3-venv python3-pip
  tmux
  nginx curl
)

source scripts/apt.sh
apt_install_missing deps "${APT_PACKAGES[@]}"

# Python venv with pinned packages. A stamp file records the requirements it
# was built from, so an unchanged venv costs nothing.
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "deps: creating .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.weft-requirements
if ! cmp -s requirements.txt "$stamp" 2>/dev/null; then
  echo "deps: installing Python packages into .venv"
  .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
  cp requirements.txt "$stamp"
fi
