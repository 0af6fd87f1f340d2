#pragma once
// One error vocabulary for kforge. Errors that reach a user, the policy or the trainer carry a
// kind and a reason; nothing below the CLI prints or exits on its own.
#include <sstream>
#include <stdexcept>
#include <string>

namespace kforge {

enum class ErrorKind {
  config,       // a config file is malformed, has an unknown key or a bad value
  spec,         // a task spec is malformed or inconsistent
  shape,        // an operator refuses the shapes or attributes it was given
  io,           // a file is missing or unreadable
  usage,        // the command line is wrong
  unsupported,  // a valid request kforge does not handle (yet)
  runtime,      // something failed while running (libtorch, CUDA)
  internal,     // a bug in kforge
};

const char* error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] void throw_error(ErrorKind kind, const std::string& message);

// Builds a message from stream pieces: KFORGE_FAIL(spec, "node '" << id << "' is unknown").
#define KFORGE_FAIL(KIND, PIECES)                                            \
  do {                                                                       \
    std::ostringstream kforge_fail_os_;                                      \
    kforge_fail_os_ << PIECES;                                               \
    ::kforge::throw_error(::kforge::ErrorKind::KIND, kforge_fail_os_.str()); \
  } while (0)

#define KFORGE_CHECK(COND, KIND, PIECES)    \
  do {                                      \
    if (!(COND)) KFORGE_FAIL(KIND, PIECES); \
  } while (0)

}  // namespace kforge
