#include "apps/flags.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "util/file.h"

namespace weft::apps {
namespace {

bool ParseInt(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

bool ParseDouble(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

bool ParseBool(const std::string& s, bool* out) {
  if (s == "1" || s == "true" || s == "yes" || s == "on") {
    *out = true;
  } else if (s == "0" || s == "false" || s == "no" || s == "off") {
    *out = false;
  } else {
    return false;
  }
  return true;
}

}  // namespace

void FlagSet::String(std::string name, std::string* v, std::string help,
                     char short_name) {
  flags_.push_back({std::move(name), short_name, std::move(help), false, *v,
                    [v](const std::string& s) {
                      *v = s;
                      return true;
                    }});
}

void FlagSet::Int(std::string name, int64_t* v, std::string help,
                  char short_name) {
  flags_.push_back({std::move(name), short_name, std::move(help), false,
                    std::to_string(*v),
                    [v](const std::string& s) { return ParseInt(s, v); }});
}

void FlagSet::Double(std::string name, double* v, std::string help,
                     char short_name) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", *v);
  flags_.push_back({std::move(name), short_name, std::move(help), false, buf,
                    [v](const std::string& s) { return ParseDouble(s, v); }});
}

void FlagSet::Bool(std::string name, bool* v, std::string help,
                   char short_name) {
  flags_.push_back({std::move(name), short_name, std::move(help), true,
                    *v ? "true" : "false",
                    [v](const std::string& s) { return ParseBool(s, v); }});
}

FlagSet::Flag* FlagSet::Find(const std::string& name) {
  for (auto& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

FlagSet::Flag* FlagSet::FindShort(char c) {
  for (auto& f : flags_) {
    if (f.short_name != 0 && f.short_name == c) return &f;
  }
  return nullptr;
}

bool FlagSet::Apply(Flag* f, const std::string& value, std::string* error) {
  if (!f->set(value)) {
    *error = "invalid value '" + value + "' for --" + f->name;
    return false;
  }
  f->was_set = true;
  return true;
}

bool FlagSet::WasSet(const std::string& name) const {
  for (const auto& f : flags_) {
    if (f.name == name) return f.was_set;
  }
  return false;
}

std::string FlagSet::Usage() const {
  std::string s = "usage: " + usage_ + "\n\n" + description_ + "\n";
  if (!flags_.empty()) s += "\nflags:\n";
  for (const auto& f : flags_) {
    std::string left = "  ";
    if (f.short_name) left += std::string("-") + f.short_name + ", ";
    left += "--" + f.name;
    if (!f.is_bool) left += " VALUE";
    if (left.size() < 28) left.resize(28, ' ');
    else left += "  ";
    s += left + f.help;
    if (!f.default_text.empty() && f.default_text != "false") {
      s += " (default: " + f.default_text + ")";
    }
    s += "\n";
  }
  if (!env_prefix_.empty()) {
    s += "\nEvery flag can also be set as " + env_prefix_ +
         "_NAME (upper case, '-' as '_').\n";
  }
  return s;
}

void FlagSet::ApplyEnvironment(std::string* error) {
  for (auto& f : flags_) {
    if (f.was_set) continue;
    std::string env = env_prefix_ + "_";
    for (char c : f.name) {
      env += c == '-' ? '_' : static_cast<char>(std::toupper(c));
    }
    if (const char* v = std::getenv(env.c_str()); v != nullptr) {
      if (!Apply(&f, v, error)) {
        *error += " (from " + env + ")";
        break;
      }
    }
  }
}

bool FlagSet::Parse(int argc, char** argv, std::vector<std::string>* positional,
                    int* exit_code) {
  std::string error;
  bool flags_done = false;
  for (int i = 1; i < argc && error.empty(); ++i) {
    std::string a = argv[i];
    if (flags_done || a.size() < 2 || a[0] != '-' ||
        (a[1] != '-' && std::isdigit(static_cast<unsigned char>(a[1])))) {
      positional->push_back(a);
      continue;
    }
    if (a == "--") {
      flags_done = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      std::fputs(Usage().c_str(), stdout);
      *exit_code = 0;
      return false;
    }
    Flag* f = nullptr;
    std::string value;
    bool has_value = false;
    if (a[1] == '-') {
      std::string name = a.substr(2);
      size_t eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      f = Find(name);
      if (f == nullptr && name.rfind("no-", 0) == 0 && !has_value) {
        Flag* b = Find(name.substr(3));
        if (b != nullptr && b->is_bool) {
          Apply(b, "false", &error);
          continue;
        }
      }
      if (f == nullptr) {
        error = "unknown flag --" + name;
        break;
      }
    } else {
      if (a.size() != 2 || (f = FindShort(a[1])) == nullptr) {
        error = "unknown flag " + a;
        break;
      }
    }
    if (f->is_bool && !has_value) {
      Apply(f, "true", &error);
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        error = "flag --" + f->name + " needs a value";
        break;
      }
      value = argv[++i];
    }
    Apply(f, value, &error);
  }
  if (error.empty() && !env_prefix_.empty()) ApplyEnvironment(&error);
  if (!error.empty()) {
    std::fprintf(stderr, "error: %s\nusage: %s (--help for more)\n",
                 error.c_str(), usage_.c_str());
    *exit_code = 2;
    return false;
  }
  return true;
}

namespace {

// MemAvailable from /proc/meminfo, or 0.
uint64_t AvailableMemory() { return ReadProcKb("/proc/meminfo", "MemAvailable"); }

}  // namespace

// "512M", "2G", "1048576" (bytes, binary suffixes K/M/G/T, optional "iB"
// or "B") or a fraction of available memory in (0, 1) like "0.2".
bool ParseKvMemory(const std::string& text, uint64_t* bytes,
                   std::string* error) {
  std::string s = text;
  for (const char* suffix : {"iB", "ib", "B", "b"}) {
    if (s.size() > 1 && s.size() > std::string(suffix).size() &&
        s.ends_with(suffix)) {
      s.resize(s.size() - std::string(suffix).size());
      break;
    }
  }
  double mult = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'k': case 'K': mult = 1024.0; break;
      case 'm': case 'M': mult = 1024.0 * 1024; break;
      case 'g': case 'G': mult = 1024.0 * 1024 * 1024; break;
      case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; break;
      default: break;
    }
    if (mult != 1) s.pop_back();
  }
  char* end = nullptr;
  const double v = s.empty() ? NAN : std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) ||
      v <= 0) {
    *error = "--kv-memory: expected bytes like 512M or 2G, or a fraction "
             "of free memory like 0.2; got '" + text + "'";
    return false;
  }
  if (mult == 1 && v < 1) {
    const uint64_t avail = AvailableMemory();
    if (avail == 0) {
      *error = "--kv-memory: cannot read available memory; give bytes";
      return false;
    }
    *bytes = static_cast<uint64_t>(v * static_cast<double>(avail));
  } else if (v * mult > 1e15) {
    *error = "--kv-memory: too large: '" + text + "'";
    return false;
  } else {
    *bytes = static_cast<uint64_t>(v * mult);
  }
  return true;
}

}  // namespace weft::apps
