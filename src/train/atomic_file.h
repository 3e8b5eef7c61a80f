// Whole-file replacement that a crash cannot tear: write a temporary file next to the target,
// fsync it, rename it over the target, fsync the directory. A reader (or a restarted worker) sees
// the old content or the new, never a mix, which is what makes a backup safe to resume from after
// a SIGKILL at any moment.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace cohort::train {

// Replaces `path` with `content`.
Status WriteFileAtomically(const std::string& path, std::string_view content);

// Replaces `path` with whatever `write` puts into the temporary path it is given (for writers
// such as torch::save that insist on opening the file themselves).
Status ReplaceFileAtomically(const std::string& path,
                             const std::function<Status(const std::string& temp_path)>& write);

}  // namespace cohort::train
