// Same-host memory: letting tasks on one machine read each other's buffers directly.
//
// When two tasks run on the same host, sending a buffer through loopback TCP costs two copies
// (into the kernel and out again) plus the protocol. Linux can copy straight from another
// process's memory with process_vm_readv (cross-memory attach): one copy and no protocol. Whether
// that works depends on the kernel's ptrace policy, seccomp and namespaces, so it is never
// assumed: each task publishes a probe (a random number at a known address) in its handshake, and
// the peer enables the path only if it can read that exact number back. Cohort only ever reads
// another process's memory, never writes it (see collective/same_host_algorithms.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace cohort::net {

// What a process tells its peers so that they can reach its memory.
struct ProcessIdentity {
  // Boot id and namespaces: two processes can share memory only if these are equal.
  std::string host_identity;
  uint32_t process_id = 0;
  uint64_t probe_address = 0;
  uint64_t probe_value = 0;
};

// This process's identity (computed once).
const ProcessIdentity& ThisProcess();

// True when this process can read `peer`'s memory: same host and namespaces, and the probe reads
// back as announced.
bool CanReadMemoryOf(const ProcessIdentity& peer);

// Copies `size` bytes at `remote_address` of process `process_id` into `local`. `peer_name` names
// the peer in errors; a peer that has exited fails with Unavailable.
Status ReadProcessMemory(uint32_t process_id, uint64_t remote_address, void* local, size_t size,
                         const std::string& peer_name);

}  // namespace cohort::net
