// What a prediction request may carry as an image: base64 text and PNG files, decoded with a
// bound on every size, so that a request cannot make the server allocate more than it says.
//
//   StatusOr<std::string> bytes = DecodeBase64(text);            // RFC 4648, padding optional
//   StatusOr<GrayImage> image = DecodePng(*bytes, 28, 28);       // 8-bit gray, any PNG colour type
//
// AI Platform and TensorFlow Serving send binary inputs as {"b64": "<base64>"}; the server turns
// such a PNG into the pixels an image classifier takes (gray, scaled to [0, 1] by the caller).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace cohort::serve {

// The largest base64 text and PNG accepted for one instance (a 28x28 PNG is under 1 KiB).
inline constexpr size_t kMaxEncodedImageBytes = 4 << 20;
// The most pixels a decoded PNG may have (rows * cols), whatever the model's input size.
inline constexpr int64_t kMaxImagePixels = 4096 * 4096;

// The bytes `text` encodes in base64 (the standard alphabet, or the URL-safe one; '=' padding
// optional; no whitespace). InvalidArgument naming the first offending character's position.
StatusOr<std::string> DecodeBase64(const std::string& text);

// Standard base64 of `bytes`, with padding (tests and clients).
std::string EncodeBase64(const std::string& bytes);

struct GrayImage {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> pixels;  // rows * cols, row-major
};

// A PNG file's pixels as 8-bit gray (colour converted with libpng's default weights, alpha
// dropped, 16-bit reduced to 8). InvalidArgument when the bytes are no PNG, are over
// kMaxEncodedImageBytes or kMaxImagePixels, or (with rows, cols > 0) are not rows x cols.
StatusOr<GrayImage> DecodePng(const std::string& bytes, int64_t rows = 0, int64_t cols = 0);

// An 8-bit gray PNG of `image` (tests, the benchmark's clients and `predict`'s examples).
StatusOr<std::string> EncodePng(const GrayImage& image);

}  // namespace cohort::serve
