// cohort/storage.h: a training program's own files, on the local file system or in object
// storage, through the same layer as Cohort's (docs/storage.md).
//
// Every path the API takes (BackupAndRestore's backup directory, ModelCheckpoint's, TensorBoard's
// log directory, FitOptions::saved_model_dir, SaveModule and LoadModule) may be a local path or
// an object storage URL: s3://bucket/prefix (S3 or an S3-compatible server, settings as the AWS
// tools read them) or gs://bucket/prefix (Cloud Storage with HMAC keys). These functions give a
// program the same for its own files and flags:
//
//   if (std::string problem = cohort::StoragePathProblem(flags.model_dir); !problem.empty()) {
//     ... refuse the flag before training: "--model_dir: " + problem ...
//   }
//   std::string manifest = cohort::ReadStoredFile(flags.model_dir + "/manifest.json");
//
// A write is whole or not at all: a reader sees the old file or the new one, never part of one.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cohort {

// Empty when `path` is a local path, or a well-formed s3:// or gs:// URL whose scheme's settings
// (credentials, endpoint) resolve; otherwise what is wrong with it, naming the URL and the rule.
// Makes no request: for refusing a bad flag before any work starts.
std::string StoragePathProblem(const std::string& path);

// Whether `path` names object storage (s3://, gs://) rather than the local file system.
bool IsObjectStoragePath(const std::string& path);

// The whole file at `path` (local or a URL). Throws cohort::Error: kNotFound when it is absent,
// kInvalidArgument when it holds more than `max_bytes`, kIOError when it cannot be read.
std::string ReadStoredFile(const std::string& path, size_t max_bytes = size_t{1} << 30);

// Replaces the file at `path` with `contents`, whole or not at all (a local file is written
// beside and renamed; an object is one PUT). Throws cohort::Error (kIOError) naming the path.
void WriteStoredFile(const std::string& path, std::string_view contents);

}  // namespace cohort
