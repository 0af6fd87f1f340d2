#include "data_synth/dataset/row_status.h"

#include <string_view>

#include "configs/error.h"

namespace kforge {

namespace {

constexpr std::string_view kRejected = "rejected:";

}  // namespace

std::optional<RowStatus> RowStatus::from_text(const std::string& text) {
  if (text == "cpu_ok") return RowStatus{Kind::cpu_ok, ""};
  if (text == "ok") return RowStatus{Kind::ok, ""};
  if (text.size() > kRejected.size() && text.compare(0, kRejected.size(), kRejected) == 0)
    return RowStatus{Kind::rejected, text.substr(kRejected.size())};
  return std::nullopt;
}

std::string RowStatus::text() const {
  switch (kind) {
    case Kind::cpu_ok:
      return "cpu_ok";
    case Kind::ok:
      return "ok";
    case Kind::rejected:
      return std::string(kRejected) + reason;
  }
  return "";
}

bool RowStatus::rejected_by_input_checks() const { return rejected() && (reason == "input_matters" || reason == "ablation"); }

RowStatus read_status(const std::string& text, const std::string& where) {
  std::optional<RowStatus> s = RowStatus::from_text(text);
  KFORGE_CHECK(s, spec, where << ": status '" << text << "' is not cpu_ok, ok or rejected:<reason>");
  return *s;
}

StatusFilter StatusFilter::parse(const std::string& text) {
  if (text.empty()) return {};
  if (text == "all") return {Take::all, {}};
  if (text == "rejected") return {Take::rejected, {}};
  std::optional<RowStatus> s = RowStatus::from_text(text);
  KFORGE_CHECK(s, usage, "--status is all, cpu_ok, ok, rejected or rejected:<filter>, not '" << text << "'");
  return {Take::exactly, *s};
}

bool StatusFilter::matches(const RowStatus& s) const {
  switch (take) {
    case Take::served:
      return !s.rejected();
    case Take::all:
      return true;
    case Take::rejected:
      return s.rejected();
    case Take::exactly:
      return s == status;
  }
  return false;
}

}  // namespace kforge
