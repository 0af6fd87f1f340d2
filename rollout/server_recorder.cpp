// The rollout server's recorder (server_impl.h): trajectories appended on their own thread, a
// failed one kept and retried, the last resort a side file.
#include <fstream>

#include "rollout/server_impl.h"

namespace kforge {

bool Recorder::write(Item& item, std::string& error) {
  error.clear();
  try {
    file_->append_msgpack(item.bytes, item.summary);
    ++written_;
  } catch (const std::exception& e) {
    ++failed_;
    error = e.what();
    std::cerr << "kforge serve: recording episode " << item.summary.episode << " failed (kept, retried): " << error << std::endl;
  }
  behind_ = file_->behind();
  return error.empty();
}

void Recorder::answer(const Outcome& outcome, const std::string& error) {
  if (outcome) inbox_.post([outcome, error] { outcome(error); });
}

void Recorder::loop() {
  for (;;) {
    Item item;
    bool have = false, stopping = false;
    {
      std::unique_lock<std::mutex> lock(m_);
      cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopped_ || !q_.empty(); });
      if (!q_.empty()) {
        item = std::move(q_.front());
        q_.pop_front();
        have = true;
      }
      stopping = stopped_ && !have;
    }
    if (stopping) return;
    // A new trajectory first; then, after a success or once a second, those that failed before.
    std::string error;
    if (have) {
      const bool ok = write(item, error);
      Outcome outcome = item.outcome;
      if (!ok) retry_.push_back(std::move(item));
      unwritten_ = retry_.size();
      answer(outcome, error);
      if (!ok) continue;
    }
    for (size_t n = retry_.size(); n > 0; --n) {
      const bool ok = write(retry_.front(), error);
      Outcome outcome = retry_.front().outcome;
      if (ok) retry_.pop_front();
      unwritten_ = retry_.size();
      answer(outcome, error);
      if (!ok) break;
    }
  }
}

void Recorder::stop() {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (stopped_) return;
    stopped_ = true;
  }
  cv_.notify_one();
  thread_.join();
  for (Item& item : retry_) {
    std::string error;
    const bool ok = write(item, error);
    answer(item.outcome, error);
    if (!ok) write_side_file(item);
  }
  retry_.clear();
  unwritten_ = 0;
  file_.reset();
}

void Recorder::write_side_file(const Item& item) {
  static int n = 0;
  std::string side = path_ + ".unwritten-" + std::to_string(::getpid()) + "-" + std::to_string(++n) + ".msgpack";
  std::ofstream out(side, std::ios::binary);
  out.write(reinterpret_cast<const char*>(item.bytes.data()), static_cast<std::streamsize>(item.bytes.size()));
  out.close();
  if (out)
    std::cerr << "kforge serve: episode " << item.summary.episode << "'s trajectory could not be recorded; its msgpack is in " << side
              << " (append it with kforge_client or TrajectoryFile::append_msgpack)" << std::endl;
  else
    std::cerr << "kforge serve: episode " << item.summary.episode << "'s trajectory could not be recorded, nor written to " << side
              << "; it is lost" << std::endl;
}

}  // namespace kforge
