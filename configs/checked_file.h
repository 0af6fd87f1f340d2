#pragma once
// Reading a file whose path or content kforge does not control (a candidate directory handed to
// `kforge eval`, ...). Such a file may be a symbolic link to a host file (/etc/passwd would be read
// and echoed in the report), a FIFO (the read would block forever) or huge (a 10 MB kernel.cu cost
// 7.5 s and 2.5 GB before it was refused). All three are refused before a byte is read.
#include <cstdint>
#include <string>

namespace kforge {

// The whole file at `path`, or an Error of kind io naming `what` and the path: refused when the
// last component is a symbolic link (O_NOFOLLOW), when it is not a regular file (opened O_NONBLOCK,
// then fstat, so a FIFO cannot block), and when it holds more than max_bytes (fstat's size, and the
// read itself stops once past max_bytes, in case the file grows meanwhile).
std::string read_untrusted_file(const std::string& path, int64_t max_bytes, const std::string& what);

}  // namespace kforge
