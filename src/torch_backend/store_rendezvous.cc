#include "torch_backend/store_rendezvous.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <random>
#include <vector>

#include "base/hex.h"
#include "net/socket.h"

namespace cohort::torch_backend {
namespace {

constexpr char kGroupKey[] = "cohort/group";
constexpr size_t kMaxEndpointBytes = 1024;

std::string EndpointKey(int rank) { return "cohort/endpoint/" + std::to_string(rank); }

// The local IPv4 address of the route to `host` (a UDP "connection" sends nothing).
StatusOr<std::string> LocalAddressTowards(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int resolved = getaddrinfo(host.c_str(), "9", &hints, &found);
  if (resolved != 0) {
    return Status::Unavailable("cannot resolve MASTER_ADDR \"" + host +
                               "\": " + gai_strerror(resolved));
  }
  net::Socket probe(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  Status status = Status::OK();
  std::string address;
  if (!probe.valid()) {
    status = Status::IOError("socket: " + ErrnoMessage(errno));
  } else if (connect(probe.fd(), found->ai_addr, found->ai_addrlen) != 0) {
    status =
        Status::Unavailable("no route to MASTER_ADDR \"" + host + "\": " + ErrnoMessage(errno));
  } else {
    sockaddr_in local{};
    socklen_t length = sizeof(local);
    char text[INET_ADDRSTRLEN] = {};
    if (getsockname(probe.fd(), reinterpret_cast<sockaddr*>(&local), &length) != 0 ||
        inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text)) == nullptr) {
      status = Status::IOError("getsockname: " + ErrnoMessage(errno));
    } else {
      address = text;
    }
  }
  freeaddrinfo(found);
  if (!status.ok()) return status;
  return address;
}

// Store calls throw (c10::Error) on timeouts and broken stores; this turns them into Status.
template <typename Call>
Status StoreCall(const std::string& what, Call call) {
  try {
    call();
    return Status::OK();
  } catch (const std::exception& error) {
    return Status::Unavailable("torch store: " + what + ": " + error.what());
  }
}

std::vector<uint8_t> Bytes(const std::string& text) { return {text.begin(), text.end()}; }

}  // namespace

StatusOr<std::string> ChooseAddress(const std::string& configured) {
  if (!configured.empty()) return configured;
  const char* master = std::getenv("MASTER_ADDR");
  if (master != nullptr && *master != '\0') return LocalAddressTowards(master);
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) {
    return Status::IOError("gethostname: " + ErrnoMessage(errno));
  }
  return std::string(name);
}

StatusOr<std::unique_ptr<net::TcpTransport>> ConnectThroughStore(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, const std::string& address,
    std::chrono::milliseconds timeout, net::TransportOptions options) {
  if (size < 1 || rank < 0 || rank >= size) {
    return Status::InvalidArgument("cohort backend: rank " + std::to_string(rank) +
                                   " of a group of " + std::to_string(size));
  }
  auto listener = net::ListenTcp("", 0, 128);
  if (!listener.ok()) return listener.status().WithContext("cohort backend: listening");
  auto port = net::LocalPort(listener->fd());
  if (!port.ok()) return port.status();
  const std::string endpoint = address + ":" + std::to_string(*port);

  if (rank == 0) {
    std::random_device random;
    std::string nonce(16, '\0');
    for (char& byte : nonce) byte = static_cast<char>(random());
    COHORT_RETURN_IF_ERROR(
        StoreCall("publishing the group", [&] { store->set(kGroupKey, Bytes(HexEncode(nonce))); }));
  }
  COHORT_RETURN_IF_ERROR(StoreCall("publishing rank " + std::to_string(rank) + "'s endpoint",
                                   [&] { store->set(EndpointKey(rank), Bytes(endpoint)); }));
  std::vector<std::string> keys = {kGroupKey};
  for (int peer = 0; peer < size; ++peer) keys.push_back(EndpointKey(peer));
  COHORT_RETURN_IF_ERROR(StoreCall(
      "waiting " + std::to_string(timeout.count() / 1000) + " s for every rank's endpoint",
      [&] { store->wait(keys, timeout); }));

  std::vector<net::GroupMember> members(size);
  std::string group;
  for (int peer = -1; peer < size; ++peer) {
    std::vector<uint8_t> value;
    const std::string key = peer < 0 ? kGroupKey : EndpointKey(peer);
    COHORT_RETURN_IF_ERROR(StoreCall("reading " + key, [&] { value = store->get(key); }));
    if (value.empty() || value.size() > kMaxEndpointBytes) {
      return Status::InvalidArgument("torch store: " + key + " holds " +
                                     std::to_string(value.size()) + " bytes");
    }
    std::string text(value.begin(), value.end());
    if (peer < 0) {
      group = text;
    } else {
      members[peer] = {cluster::TaskId{"rank", peer}, text};
    }
  }
  options.job_name = "torch.distributed group " + group;
  options.startup_timeout = timeout;
  options.listening_fd = listener->Release();
  return net::TcpTransport::Connect(std::move(members), rank, std::move(options));
}

}  // namespace cohort::torch_backend
