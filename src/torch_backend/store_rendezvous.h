// StoreRendezvous: how the ranks of a torch process group find each other, through the
// c10d::Store that torch.distributed hands every backend (the TCPStore of env://, a FileStore...),
// as Gloo's rendezvous does; then net::TcpTransport connects them and proves the job secret.
//
// Each rank listens on a free port of every local address and publishes "address:port" under
// "cohort/endpoint/<rank>"; rank 0 also publishes a fresh random group identity under
// "cohort/group", which becomes the transport's job name, so that processes of another group (an
// earlier run on the same store, another process group of the same job) are refused by the
// handshake instead of being mistaken for peers. Keys are under the store's prefix (torch wraps
// the store in a PrefixStore per group), so several groups never share them.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "base/status.h"
#include "net/tcp/tcp_transport.h"

namespace cohort::torch_backend {

// The address the other ranks can reach this one at: `configured` when not empty (from
// COHORT_TORCH_ADDRESS); else the local address this host uses towards MASTER_ADDR (so loopback
// when the master is this host); else this host's name.
StatusOr<std::string> ChooseAddress(const std::string& configured);

// Rendezvous of rank `rank` of `size` through `store`, within `timeout` for every rank to publish
// its endpoint and pass the handshake. `options` carries the timeouts of the transport; its
// job_name and listening_fd are set here. Ranks are named "rank:<i> (address:port)" in errors.
StatusOr<std::unique_ptr<net::TcpTransport>> ConnectThroughStore(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, const std::string& address,
    std::chrono::milliseconds timeout, net::TransportOptions options);

}  // namespace cohort::torch_backend
