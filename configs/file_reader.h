#pragma once
// Reading a file of the project or of its user, whole: a config, a task spec, a prompt page, a
// dataset's summary, a compile cache entry. Paths may be symbolic links or pipes (`<(...)`). Files
// whose path or content kforge does not control (a candidate's) are read by read_untrusted_file
// (checked_file.h) instead, which refuses links, FIFOs and large files before reading.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "configs/error.h"

namespace kforge {

// A file that could not be opened or read: an Error of kind io that keeps the path.
class FileError : public Error {
 public:
  FileError(std::string path, const std::string& message) : Error(ErrorKind::io, message), path_(std::move(path)) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A bound on a file's size, checked before it is read (and while reading, should it grow): a
// larger file is an Error of `kind` (the content's fault: config, spec), "<path>: N bytes, over the
// limit of M".
struct FileSizeLimit {
  int64_t max_bytes;
  ErrorKind kind;
};

// The whole file at `path`, its bytes as they are, or a FileError that names `what` and the path:
//   "<path>: cannot open <what> (No such file or directory); the full path tried: /abs/<path>"
//   "<path>: cannot read <what>: it is a directory"
std::string read_file(const std::string& path, std::string_view what = "file");
std::string read_file(const std::string& path, std::string_view what, const FileSizeLimit& limit);

// The whole file, or nothing when it cannot be opened or read (a cache entry, a header that may
// be absent): for callers that have a fallback.
std::optional<std::string> try_read_file(const std::string& path);

}  // namespace kforge
