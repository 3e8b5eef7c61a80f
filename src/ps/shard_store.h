// ShardStore: everything one parameter server holds, by variable name.
//
// A server holds at most one slice of each dense variable (placement never puts two shards of a
// variable on one server), so a name is enough to find it, and every embedding table by name.
// Creating is idempotent: every worker creates the variables it uses when it starts or rejoins,
// the first create wins, and a later create with the same spec is a no-op (its initial values are
// ignored, which is what lets a rejoining worker not reset the model). A create whose spec differs
// from what is held is refused, because two workers disagreeing about a variable's shape or
// optimizer is a bug to report, not something to paper over.
//
// Thread-safe. Lookups hand out shared pointers, so a long apply on one variable never blocks a
// lookup of another, and a checkpoint restore can swap the contents while requests are in flight.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "ps/dense_slice.h"
#include "ps/embedding_table.h"

namespace cohort::ps {

class ShardStore {
 public:
  ShardStore(int ps_index, int num_ps) : ps_index_(ps_index), num_ps_(num_ps) {}

  int ps_index() const { return ps_index_; }
  int num_ps() const { return num_ps_; }

  // Creates the slice, or checks that the one held has the same spec.
  Status CreateDense(const DenseSliceSpec& spec, std::vector<float> initial);
  Status CreateTable(const EmbeddingTableSpec& spec);

  // NotFound, naming this server, for a variable it does not hold.
  StatusOr<std::shared_ptr<DenseSlice>> Dense(const std::string& variable) const;
  StatusOr<std::shared_ptr<EmbeddingTable>> Table(const std::string& name) const;

  // Everything held, by name.
  std::vector<std::shared_ptr<DenseSlice>> DenseSlices() const;
  std::vector<std::shared_ptr<EmbeddingTable>> Tables() const;

  // Replaces everything held (a checkpoint restore).
  void Replace(std::vector<std::shared_ptr<DenseSlice>> slices,
               std::vector<std::shared_ptr<EmbeddingTable>> tables);

 private:
  std::string Self() const { return "ps:" + std::to_string(ps_index_); }

  const int ps_index_;
  const int num_ps_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<DenseSlice>> dense_;
  std::map<std::string, std::shared_ptr<EmbeddingTable>> tables_;
};

}  // namespace cohort::ps
