// A dataset row's status parsed, not sliced (data_synth/dataset/row_status.h): the three forms,
// anything else refused with the text named, and the --status filter over them.
#include "data_synth/dataset/row_status.h"

#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "configs/error.h"

using namespace kforge;

namespace {

std::string error_of(const std::function<void()>& f, ErrorKind kind) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  return "";
}

}  // namespace

TEST(RowStatus, TheThreeFormsRoundTrip) {
  for (const char* text : {"cpu_ok", "ok", "rejected:eager_runtime_window", "rejected:input_matters"})
    EXPECT_EQ(read_status(text, "row 'a'").text(), text);
  RowStatus r = read_status("rejected:compile_mismatch", "row 'a'");
  EXPECT_TRUE(r.rejected());
  EXPECT_EQ(r.reason, "compile_mismatch");
  EXPECT_FALSE(r.rejected_by_input_checks());
  EXPECT_TRUE(read_status("rejected:ablation", "row 'a'").rejected_by_input_checks());
  EXPECT_EQ(read_status("ok", "row 'a'").kind, RowStatus::Kind::ok);
}

TEST(RowStatus, AnythingElseIsASpecErrorNamingTheRowAndTheText) {
  for (const char* text : {"", "fine", "rejected", "rejected:", "OK", "rejected_x"})
    EXPECT_EQ(error_of([&] { read_status(text, "d.h5: row 'syn_1'"); }, ErrorKind::spec),
              std::string("d.h5: row 'syn_1': status '") + text + "' is not cpu_ok, ok or rejected:<reason>")
        << text;
}

TEST(StatusFilter, ServedAllRejectedOrExactly) {
  const RowStatus cpu_ok = read_status("cpu_ok", "r"), ok = read_status("ok", "r"),
                  window = read_status("rejected:eager_runtime_window", "r");
  StatusFilter served = StatusFilter::parse("");
  EXPECT_TRUE(served.matches(cpu_ok) && served.matches(ok) && !served.matches(window));
  StatusFilter all = StatusFilter::parse("all");
  EXPECT_TRUE(all.matches(cpu_ok) && all.matches(ok) && all.matches(window));
  StatusFilter rejected = StatusFilter::parse("rejected");
  EXPECT_TRUE(!rejected.matches(ok) && rejected.matches(window));
  EXPECT_TRUE(StatusFilter::parse("rejected:eager_runtime_window").matches(window));
  EXPECT_FALSE(StatusFilter::parse("rejected:torch_compile_build").matches(window));
  EXPECT_EQ(error_of([] { StatusFilter::parse("kept"); }, ErrorKind::usage),
            "--status is all, cpu_ok, ok, rejected or rejected:<filter>, not 'kept'");
}
