// What the build tells the apps (set by apps/CMakeLists.txt as compile
// definitions, and the commit in a header generated at build time), with
// fallbacks for a compiler invoked by hand.
#pragma once

#if __has_include("weft_git_commit.h")
#include "weft_git_commit.h"
#endif

#ifndef WEFT_VERSION
#define WEFT_VERSION "0.0.0"  // the project version
#endif
#ifndef WEFT_GIT_COMMIT
#define WEFT_GIT_COMMIT "unknown"  // short hash of the commit built
#endif
#ifndef WEFT_DEFAULT_MODEL
// -m default of serve, run and chat: the instruction-tuned chat model.
#define WEFT_DEFAULT_MODEL "models/smollm2-135m-instruct-q4_1.gguf"
#endif
#ifndef WEFT_BENCH_MODEL
// -m default of the bench verbs: Gemma 3 270M (Q4_K_M), what our published
// benchmarks and the peer comparisons use.
#define WEFT_BENCH_MODEL "models/gemma-3-270m-q4_k_m.gguf"
#endif
