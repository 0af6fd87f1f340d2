#include "tools/bench/bench_result.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>

namespace kforge::bench {

namespace {

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string env_or(const char* name, const char* fallback) { return std::getenv(name) ? std::getenv(name) : fallback; }

}  // namespace

std::string arg_value(int argc, char** argv, const std::string& key, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == key) return argv[i + 1];
  return fallback;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void write_result(const std::string& path, const nlohmann::json& device, const std::string& command, const nlohmann::json& figures) {
  nlohmann::json j = {{"gpu", device.value("name", "")},
                      {"driver", env_or("KFORGE_DRIVER", "")},
                      {"cuda", device.value("cuda", "")},
                      {"torch", device.value("torch", "")},
                      {"date", utc_now()},
                      {"commit", env_or("KFORGE_COMMIT", "unknown")},
                      {"command", command},
                      {"figures", figures}};
  std::ofstream(path) << j.dump(2) << "\n";
}

}  // namespace kforge::bench
