// The pages' files (index.html, the bundled script and its style sheet), built from src/ui/web by
// esbuild when Cohort is built and embedded in the binary, so that `cohort ui` needs nothing on
// disk and no network. web_assets.cc is generated in the build tree (cmake/EmbedFiles.cmake).
#pragma once

#include <string_view>

namespace cohort::ui {

struct WebAsset {
  std::string_view path;          // "/index.html", "/assets/app.js"
  std::string_view content_type;  // "text/html; charset=utf-8"
  std::string_view contents;
};

// The asset served at `path`, or nullptr.
const WebAsset* FindWebAsset(std::string_view path);

}  // namespace cohort::ui
