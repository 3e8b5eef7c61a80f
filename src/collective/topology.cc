#include "collective/topology.h"

#include <map>

namespace cohort::collective {

Topology Topology::Flat(int ranks) {
  std::vector<int> labels;
  for (int rank = 0; rank < ranks; ++rank) labels.push_back(rank);
  return FromHostLabels(labels);
}

Topology Topology::FromHostLabels(const std::vector<int>& host_labels) {
  Topology topology;
  std::map<int, int> host_of_label;
  for (size_t rank = 0; rank < host_labels.size(); ++rank) {
    auto [entry, added] =
        host_of_label.emplace(host_labels[rank], static_cast<int>(topology.ranks_on_host_.size()));
    if (added) topology.ranks_on_host_.emplace_back();
    topology.host_of_rank_.push_back(entry->second);
    topology.ranks_on_host_[entry->second].push_back(static_cast<int>(rank));
  }
  return topology;
}

Topology Topology::FromHostIdentities(const std::vector<std::string>& identities) {
  std::map<std::string, int> label_of_identity;
  std::vector<int> labels;
  for (size_t rank = 0; rank < identities.size(); ++rank) {
    const int own_label = static_cast<int>(rank);
    if (identities[rank].empty()) {
      labels.push_back(own_label);
    } else {
      labels.push_back(label_of_identity.emplace(identities[rank], own_label).first->second);
    }
  }
  return FromHostLabels(labels);
}

bool Topology::IsUniformWithSeveralRanksPerHost() const {
  if (hosts() < 2) return false;
  const size_t per_host = ranks_on_host_[0].size();
  if (per_host < 2) return false;
  for (const std::vector<int>& ranks : ranks_on_host_) {
    if (ranks.size() != per_host) return false;
  }
  return true;
}

std::vector<int> Topology::RingOrder() const {
  std::vector<int> order;
  for (const std::vector<int>& ranks : ranks_on_host_) {
    order.insert(order.end(), ranks.begin(), ranks.end());
  }
  return order;
}

std::string Topology::Describe() const {
  std::string text = std::to_string(hosts()) + (hosts() == 1 ? " host" : " hosts");
  bool uniform = true;
  for (const std::vector<int>& ranks : ranks_on_host_) {
    uniform = uniform && ranks.size() == ranks_on_host_[0].size();
  }
  if (hosts() == 0) return text;
  if (uniform) {
    const size_t per_host = ranks_on_host_[0].size();
    return text + " x " + std::to_string(per_host) + (per_host == 1 ? " rank" : " ranks");
  }
  text += " (";
  for (int host = 0; host < hosts(); ++host) {
    if (host > 0) text += ", ";
    text += std::to_string(ranks_on_host_[host].size());
  }
  return text + " ranks)";
}

}  // namespace cohort::collective
