#pragma once
// A dataset row's status (the `status` column, DATASET_FORMAT.md), parsed instead of sliced:
// cpu_ok until a GPU stage has run, then ok (measured) or rejected:<reason> (a GPU stage's filter,
// or the input checks' after it), and the --status filter of `kforge tasks` over it.
#include <optional>
#include <string>

namespace kforge {

struct RowStatus {
  enum class Kind { cpu_ok, ok, rejected };
  Kind kind = Kind::cpu_ok;
  std::string reason;  // rejected only: the filter, e.g. eager_runtime_window

  // The status a column's text names; nothing for any other text ("rejected" without a reason,
  // "fine"): each caller words its own error (read_status says what a row's must be).
  static std::optional<RowStatus> from_text(const std::string& text);
  std::string text() const;  // the column's form: cpu_ok, ok, rejected:<reason>
  bool rejected() const { return kind == Kind::rejected; }
  // A rejection by the input checks (issue 25, tools/dataset/synth_refilter.py: input_matters, ablation),
  // which run after the GPU stage, not by the GPU stage itself.
  bool rejected_by_input_checks() const;
  bool operator==(const RowStatus& o) const { return kind == o.kind && reason == o.reason; }
};

// A row's status, or a spec error naming the row: "<where>: status 'fine' is not cpu_ok, ok or rejected:<reason>".
RowStatus read_status(const std::string& text, const std::string& where);

// Which rows a listing takes by status: those a GPU stage did not reject (what the server serves),
// all, any rejected one, or one status exactly.
struct StatusFilter {
  enum class Take { served, all, rejected, exactly };
  Take take = Take::served;
  RowStatus status;  // for exactly

  // "" (served), "all", "rejected", or a status; else a usage error
  // "--status is all, cpu_ok, ok, rejected or rejected:<filter>, not 'kept'".
  static StatusFilter parse(const std::string& text);
  bool matches(const RowStatus& s) const;
};

}  // namespace kforge
