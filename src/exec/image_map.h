// ImageMap: what command runs a container that names only an image.
//
// Locally there is no container runtime, so an image stands for a command, as a Dockerfile's
// ENTRYPOINT would. Mappings come from `--image NAME=COMMAND` flags and from the file
// $COHORT_HOME/images (one `NAME=COMMAND` a line, `#` comments); a flag wins over the file. The
// command is run by /bin/sh, so it may use quoting and variables; the container's args follow it
// as "$@".
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "job/job_kind.h"

namespace cohort::exec {

class ImageMap {
 public:
  // Adds "NAME=COMMAND" from a flag. InvalidArgument when there is no '=' or either side is empty.
  Status AddFlag(const std::string& flag);
  // Reads an images file if it exists; errors name file:line.
  Status LoadFile(const std::filesystem::path& path);

  // The argv that runs `container`: its own command + args when it has a command, else the
  // mapped image's command with the args. NotFound (naming the replica, the image and how to map
  // it) when the image is not mapped.
  StatusOr<std::vector<std::string>> CommandFor(const job::Container& container,
                                                const std::string& replica) const;

  // Every replica's command, so that an unmapped image is reported before anything starts.
  Status CheckJob(const job::Job& job) const;

  // Where the command of a container that names only an image comes from, for messages:
  // "image localhost/hello is mapped to 'examples/hello/replica.sh' by --image" (or "by
  // $COHORT_HOME/images"); "" for a container with its own command or an unmapped image.
  std::string DescribeMapping(const job::Container& container) const;

  // One warning per replica type whose container names only an image that is not mapped, for
  // `cohort validate`: such a manifest is valid (for a cluster), it only cannot run here as it is.
  std::vector<std::string> UnmappedImageWarnings(const job::Job& job) const;

 private:
  std::map<std::string, std::string> commands_;  // image -> shell command
  std::map<std::string, std::string> from_flags_;
};

}  // namespace cohort::exec
