// The manifest of one checkpoint: which files make it up, with each file's size and SHA-256
// (base/checksum.h), so that a reader verifies every byte before it loads anything.
//
//   <dir>/ckpt-3.pt                 the checkpoint (a backup's whole training state, or weights)
//   <dir>/ckpt-3.manifest.json      written after it:
//   {
//     "format": "cohort-checkpoint", "format_version": 1,
//     "name": "ckpt-3", "global_step": 12,
//     "files": [{"file": "ckpt-3.pt", "size": 1234567, "sha256": "9f86d0..."}]
//   }
//
// The manifest is written after the files it lists, atomically, so a checkpoint without one was
// cut short and never counts. The file list with its checksums is the part a copy in object
// storage keeps as it is; the saved model's manifest lists its files in the same shape
// (FileChecksumsToJson).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/checksum.h"
#include "base/status.h"

namespace cohort::train {

struct CheckpointManifest {
  std::string name;  // "ckpt-3"
  int64_t global_step = 0;
  std::vector<FileChecksum> files;
};

// "<name>.manifest.json".
std::string CheckpointManifestFile(const std::string& name);

// Writes <dir>/<name>.manifest.json atomically.
Status WriteCheckpointManifest(const std::string& dir, const CheckpointManifest& manifest);

// Reads <dir>/<name>.manifest.json; errors name the file and the field at fault (NotFound when
// there is none: a checkpoint cut short, or written before checksums).
StatusOr<CheckpointManifest> ReadCheckpointManifest(const std::string& dir,
                                                    const std::string& name);

// Reads and verifies <dir>/<name>: its manifest, then every file it lists. Returns the bytes of
// the first file (the checkpoint itself); any missing or mismatched file is the error.
StatusOr<std::string> ReadVerifiedCheckpoint(const std::string& dir, const std::string& name,
                                             CheckpointManifest* manifest = nullptr);

// A file list as JSON ([{"file", "size", "sha256"}]) and back; `where` names the list in errors.
// Shared by every manifest that lists files with checksums.
std::string FileChecksumsToJson(const std::vector<FileChecksum>& files);
StatusOr<std::vector<FileChecksum>> FileChecksumsFromJson(const std::string& json_text,
                                                          const std::string& where);

}  // namespace cohort::train
