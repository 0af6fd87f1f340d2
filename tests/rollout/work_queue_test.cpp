// The lanes' WorkQueue (rollout/lanes.h): steps in arrival order, a bound, and warm compiles
// (scheduler.warm_compiles) served only when no step waits, so a compile() reply never waits
// behind compiles done ahead for GPU steps.
#include <gtest/gtest.h>

#include "rollout/lanes.h"

using namespace kforge;

namespace {

StepJobPtr step_job(uint64_t id) {
  auto j = std::make_shared<StepJob>();
  j->id = id;
  return j;
}

StepJobPtr warm_job(uint64_t id) {
  auto j = step_job(id);
  j->warm = std::make_shared<const StepJob::Warm>();
  return j;
}

}  // namespace

TEST(WorkQueue, StepsGoBeforeWarmCompilesAndEachKindInArrivalOrder) {
  WorkQueue q(8);
  for (const StepJobPtr& j : {warm_job(1), warm_job(2), step_job(3), warm_job(4), step_job(5)}) ASSERT_TRUE(q.push(j));
  std::vector<uint64_t> order;
  for (int i = 0; i < 5; ++i) {
    StepJobPtr j = q.pop();
    ASSERT_TRUE(j);
    EXPECT_EQ(j->state, StepJob::running);
    order.push_back(j->id);
  }
  EXPECT_EQ(order, (std::vector<uint64_t>{3, 5, 1, 2, 4}));
  EXPECT_EQ(q.queued(), 0u);
}

TEST(WorkQueue, RefusesBeyondItsBoundAndCancelsAQueuedStep) {
  WorkQueue q(2);
  StepJobPtr a = step_job(1), b = warm_job(2);
  ASSERT_TRUE(q.push(a));
  ASSERT_TRUE(q.push(b));
  EXPECT_FALSE(q.push(step_job(3))) << "full: the caller answers busy";
  EXPECT_TRUE(q.remove(a));
  EXPECT_EQ(a->state, StepJob::cancelled);
  EXPECT_FALSE(q.remove(a)) << "already taken out";
  EXPECT_EQ(q.pop()->id, 2u);
  q.stop();
  EXPECT_EQ(q.pop(), nullptr) << "stopped";
}
