#include "net/same_host.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include "net/auth.h"
#include "net/socket.h"

namespace cohort::net {
namespace {

// The probe a peer reads back. volatile: it must live in memory, where the peer looks for it.
volatile uint64_t probe_word = 0;

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string Namespace(const char* name) {
  char target[128];
  std::string path = std::string("/proc/self/ns/") + name;
  ssize_t length = readlink(path.c_str(), target, sizeof(target) - 1);
  if (length <= 0) return "";
  return std::string(target, static_cast<size_t>(length));
}

ProcessIdentity ComputeIdentity() {
  ProcessIdentity identity;
  std::string boot_id = ReadFirstLine("/proc/sys/kernel/random/boot_id");
  std::string pid_namespace = Namespace("pid");
  std::string user_namespace = Namespace("user");
  if (!boot_id.empty() && !pid_namespace.empty()) {
    identity.host_identity = boot_id + "/" + pid_namespace + "/" + user_namespace;
  }
  identity.process_id = static_cast<uint32_t>(getpid());
  uint64_t value = 0;
  auto random = RandomBytes(sizeof(value));
  if (random.ok()) std::memcpy(&value, random->data(), sizeof(value));
  probe_word = value | 1;  // never 0, so a zero-filled read cannot pass
  identity.probe_address = reinterpret_cast<uint64_t>(&probe_word);
  identity.probe_value = probe_word;
  return identity;
}

}  // namespace

const ProcessIdentity& ThisProcess() {
  // Recomputed after fork(): a child is another process with its own pid and probe.
  static std::mutex mutex;
  static ProcessIdentity cached;
  std::lock_guard<std::mutex> lock(mutex);
  if (cached.process_id != static_cast<uint32_t>(getpid())) cached = ComputeIdentity();
  return cached;
}

bool CanReadMemoryOf(const ProcessIdentity& peer) {
  const ProcessIdentity& self = ThisProcess();
  if (self.host_identity.empty() || peer.host_identity != self.host_identity) return false;
  if (peer.process_id == self.process_id || peer.probe_address == 0) return false;
  uint64_t value = 0;
  Status status =
      ReadProcessMemory(peer.process_id, peer.probe_address, &value, sizeof(value), "probe");
  return status.ok() && value == peer.probe_value;
}

namespace {

// One direction of cross-memory attach, repeated until every byte moved (the kernel may stop
// short, at a page it could not pin, for instance).
template <typename Call>
Status CopyAcross(Call call, uint64_t remote_address, char* local, size_t size,
                  const char* participle, const char* gerund, const std::string& peer_name) {
  while (size > 0) {
    iovec local_part{local, size};
    iovec remote_part{reinterpret_cast<void*>(remote_address), size};
    ssize_t copied = call(&local_part, &remote_part);
    if (copied < 0) {
      if (errno == EINTR) continue;
      if (errno == ESRCH) {
        return Status::Unavailable(peer_name + " exited while its memory was being " + participle);
      }
      return Status::IOError(std::string(gerund) + " the memory of " + peer_name + ": " +
                             ErrnoMessage(errno));
    }
    if (copied == 0) {
      return Status::IOError(std::string(gerund) + " the memory of " + peer_name + ": no progress");
    }
    local += copied;
    remote_address += static_cast<uint64_t>(copied);
    size -= static_cast<size_t>(copied);
  }
  return Status::OK();
}

}  // namespace

Status ReadProcessMemory(uint32_t process_id, uint64_t remote_address, void* local, size_t size,
                         const std::string& peer_name) {
  auto read = [process_id](iovec* local_part, iovec* remote_part) {
    return process_vm_readv(static_cast<pid_t>(process_id), local_part, 1, remote_part, 1, 0);
  };
  return CopyAcross(read, remote_address, static_cast<char*>(local), size, "read", "reading",
                    peer_name);
}

}  // namespace cohort::net
