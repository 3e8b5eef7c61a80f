// Topology: which ranks of a group share a host, so that algorithms can keep traffic on the host
// and send each byte across the network as few times as possible.
//
//   Topology topology = Topology::FromHostLabels({0, 0, 1, 1});  // 2 hosts, 2 ranks each
//   topology.hosts();          // 2
//   topology.RanksOn(1);       // {2, 3}
//   topology.RingOrder();      // {0, 1, 2, 3}: every rank, grouped by host
//
// The Communicator builds it from the host identity each task sent in its handshake
// (net::ConnectionSet::HostIdentity) and checks that every rank sees the same one before using it.
#pragma once

#include <string>
#include <vector>

namespace cohort::collective {

class Topology {
 public:
  // Every rank on a host of its own.
  static Topology Flat(int ranks);
  // Rank r runs on the host labelled host_labels[r]; equal labels mean the same host. Hosts are
  // numbered 0, 1, ... in order of their lowest rank.
  static Topology FromHostLabels(const std::vector<int>& host_labels);
  // The same, from host identities (net::ConnectionSet::HostIdentity); an empty identity is
  // unknown, and such a rank counts as a host of its own.
  static Topology FromHostIdentities(const std::vector<std::string>& identities);

  int ranks() const { return static_cast<int>(host_of_rank_.size()); }
  int hosts() const { return static_cast<int>(ranks_on_host_.size()); }
  int HostOf(int rank) const { return host_of_rank_[rank]; }
  // The ranks on `host`, ascending.
  const std::vector<int>& RanksOn(int host) const { return ranks_on_host_[host]; }
  // The host of every rank, by rank: what ranks compare to agree on the topology.
  const std::vector<int>& host_of_rank() const { return host_of_rank_; }

  // True when there are several hosts and every host runs the same number of ranks, at least
  // two: the shape hierarchical_all_reduce.h needs.
  bool IsUniformWithSeveralRanksPerHost() const;
  // Every rank, grouped by host (hosts in order, ranks ascending within each): a ring in this
  // order crosses the network once per host.
  std::vector<int> RingOrder() const;
  // "2 hosts x 2 ranks" or "3 hosts (2, 1, 1 ranks)".
  std::string Describe() const;

 private:
  std::vector<int> host_of_rank_;
  std::vector<std::vector<int>> ranks_on_host_;
};

}  // namespace cohort::collective
