#include "apps/flag_groups.h"

namespace weft::apps {

void ModelFlags::Register(FlagSet* flags) {
  flags->String("model", &path, "GGUF model file", 'm');
}

void ThreadFlags::Register(FlagSet* flags) {
  flags->Int("threads", &threads, help, 't');
}

void KvFlags::Register(FlagSet* flags) {
  flags->String("kv-type", &type, type_help);
  if (!memory_help.empty()) flags->String("kv-memory", &memory, memory_help);
}

void MeasureFlags::Register(FlagSet* flags) {
  flags->Int("reps", &reps, "timed repetitions after one warm-up");
  flags->String("json", &json_path, "also write every figure to this JSON file");
}

void SamplingFlags::Register(FlagSet* flags) {
  flags->Double("temp", &temp, "temperature; 0 = greedy");
  flags->Double("top-p", &top_p, "nucleus sampling threshold in (0, 1]");
  flags->Int("top-k", &top_k, "keep the k most likely tokens; 0 = off");
  flags->Double("min-p", &min_p, "drop tokens below min_p * p(best); 0 = off");
  flags->Double("repeat-penalty", &repeat_penalty, "repetition penalty; 1 = off");
  flags->Int("seed", &seed, "RNG seed; -1 = random");
}

}  // namespace weft::apps
