// Checkpoints of the parameter servers: each server saves its own shard, the chief writes a
// manifest last, and a checkpoint counts only when its manifest says it is whole.
//
//   <dir>/ps-1-of-2.step-000000001200.shard        one per server, written by that server
//   <dir>/checkpoint-000000001200.manifest         written by the chief after every shard
//
// Every file is written atomically: to a temporary name, fsync'd, renamed into place, and the
// directory fsync'd, so a crash leaves either the old file or the new one, never half of one. The
// manifest names each shard file with its size and SHA-256 (base/checksum.h) and the global step.
// A server restoring picks the newest manifest whose shard for it is present and matches; a step
// whose manifest is missing (a save interrupted before the chief wrote it) or whose shard does not
// match is skipped, with a log line saying why (a mismatch names the file, the expected and the
// found checksum). Nothing is decoded before its checksum is verified. Training therefore resumes
// from the newest checkpoint that every server finished, never from a mix of steps.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/file.h"
#include "base/status.h"
#include "ps/protocol.h"
#include "ps/shard_store.h"

namespace cohort::ps {

// The serialized contents of `store`, tagged with `global_step`.
std::string EncodeShard(const ShardStore& store, int64_t global_step);
// Replaces the contents of `store` with a serialized shard; checks that the shard was saved by the
// same server of the same number of servers. `global_step` receives the tag.
Status DecodeShardInto(std::string_view bytes, ShardStore* store, int64_t* global_step);

// Saves `store` into `directory` (created if needed) and says what it wrote.
StatusOr<SavedShard> SaveShard(const ShardStore& store, const std::string& directory,
                               int64_t global_step);

struct Manifest {
  int64_t global_step = 0;
  int num_ps = 0;
  std::vector<SavedShard> shards;  // by ps index
};

std::string ManifestFileName(int64_t global_step);
std::string EncodeManifest(const Manifest& manifest);
StatusOr<Manifest> DecodeManifest(std::string_view text);
// Writes the manifest of a checkpoint whose shards are all saved; returns its path.
StatusOr<std::string> WriteManifest(const std::string& directory, const Manifest& manifest);

// The checkpoint manifests in `directory` (file names), newest first; empty when there are none.
std::vector<std::string> ListManifests(const std::string& directory);

// Every server's shard of the checkpoint that `manifest` describes, read from `directory` and
// checked against the manifest's sizes and checksums: what an evaluator or a saved model reads
// without any server running. Stores are by ps index.
StatusOr<std::vector<std::unique_ptr<ShardStore>>> LoadCheckpoint(const std::string& directory,
                                                                  const Manifest& manifest);

// Restores `store` from the newest whole checkpoint in `directory` and returns its global step;
// NotFound when there is none (a fresh start). `log` hears about each checkpoint skipped.
StatusOr<int64_t> RestoreLatest(const std::string& directory, ShardStore* store,
                                const std::function<void(const std::string&)>& log);

}  // namespace cohort::ps
