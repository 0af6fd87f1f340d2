#pragma once
// Restrictions a worker process places on itself once it is initialised (its CUDA context made,
// its threads started): a seccomp filter that refuses, with EPERM, creating processes (fork,
// vfork, clone without CLONE_THREAD, exec), sockets, tracing and reading other processes, and
// mounting or changing namespaces. Threads may still be created (the CUDA driver makes some).
// Resource limits (file size, open files, address space) are set by the supervisor before exec.
#include <string>

namespace kforge {

// Throws a runtime error if the filter cannot be installed.
void install_worker_seccomp();

// The same filter less its refusal of new processes (compilers run their stages as processes), as
// the program the kernel loads: the bytes of a struct sock_filter[] (child_sandbox.h installs it
// in a child between fork and exec, where libseccomp cannot run).
std::string tool_seccomp_program();

// What the sandbox lets through, tried for real (for tests): "fork: EPERM; socket: EPERM; ...".
std::string probe_sandbox();

}  // namespace kforge
