#include "serve/image_decoding.h"

#include <png.h>

#include <array>
#include <cstring>

namespace cohort::serve {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The 6-bit value of a base64 character (both alphabets), or -1.
int Base64Value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

}  // namespace

StatusOr<std::string> DecodeBase64(const std::string& text) {
  if (text.size() > kMaxEncodedImageBytes) {
    return Status::InvalidArgument("the base64 text is " + std::to_string(text.size()) +
                                   " characters, over the limit of " +
                                   std::to_string(kMaxEncodedImageBytes));
  }
  size_t length = text.size();
  while (length > 0 && text[length - 1] == '=' && text.size() - length < 2) --length;
  if (length % 4 == 1) {
    return Status::InvalidArgument("the base64 text's length (" + std::to_string(length) +
                                   " characters before padding) is not a base64 length");
  }
  std::string bytes;
  bytes.reserve(length * 3 / 4);
  uint32_t accumulator = 0;
  int bits = 0;
  for (size_t i = 0; i < length; ++i) {
    const int value = Base64Value(static_cast<unsigned char>(text[i]));
    if (value < 0) {
      return Status::InvalidArgument("character " + std::to_string(i) +
                                     " of the base64 text is not base64");
    }
    accumulator = (accumulator << 6) | static_cast<uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push_back(static_cast<char>((accumulator >> bits) & 0xff));
    }
  }
  return bytes;
}

std::string EncodeBase64(const std::string& bytes) {
  std::string text;
  text.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t group = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) group |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) group |= static_cast<uint8_t>(bytes[i + 2]);
    text.push_back(kAlphabet[(group >> 18) & 63]);
    text.push_back(kAlphabet[(group >> 12) & 63]);
    text.push_back(i + 1 < bytes.size() ? kAlphabet[(group >> 6) & 63] : '=');
    text.push_back(i + 2 < bytes.size() ? kAlphabet[group & 63] : '=');
  }
  return text;
}

StatusOr<GrayImage> DecodePng(const std::string& bytes, int64_t rows, int64_t cols) {
  if (bytes.size() > kMaxEncodedImageBytes) {
    return Status::InvalidArgument("the PNG is " + std::to_string(bytes.size()) +
                                   " bytes, over the limit of " +
                                   std::to_string(kMaxEncodedImageBytes));
  }
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size())) {
    Status error = Status::InvalidArgument(std::string("not a PNG image: ") + image.message);
    png_image_free(&image);
    return error;
  }
  const int64_t height = image.height, width = image.width;
  if (height * width > kMaxImagePixels) {
    png_image_free(&image);
    return Status::InvalidArgument("the PNG is " + std::to_string(height) + "x" +
                                   std::to_string(width) + " pixels, over the limit of " +
                                   std::to_string(kMaxImagePixels));
  }
  if (rows > 0 && cols > 0 && (height != rows || width != cols)) {
    png_image_free(&image);
    return Status::InvalidArgument("the PNG is " + std::to_string(height) + "x" +
                                   std::to_string(width) + " pixels; the model takes " +
                                   std::to_string(rows) + "x" + std::to_string(cols));
  }
  image.format = PNG_FORMAT_GRAY;
  GrayImage gray;
  gray.rows = height;
  gray.cols = width;
  gray.pixels.resize(static_cast<size_t>(height * width));
  if (!png_image_finish_read(&image, nullptr, gray.pixels.data(), 0, nullptr)) {
    Status error = Status::InvalidArgument(std::string("the PNG cannot be read: ") + image.message);
    png_image_free(&image);
    return error;
  }
  return gray;
}

StatusOr<std::string> EncodePng(const GrayImage& image) {
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.cols);
  png.height = static_cast<png_uint_32>(image.rows);
  png.format = PNG_FORMAT_GRAY;
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&png, nullptr, &size, 0, image.pixels.data(), 0, nullptr)) {
    return Status::Internal(std::string("cannot size the PNG: ") + png.message);
  }
  std::string bytes(size, '\0');
  if (!png_image_write_to_memory(&png, bytes.data(), &size, 0, image.pixels.data(), 0, nullptr)) {
    return Status::Internal(std::string("cannot write the PNG: ") + png.message);
  }
  bytes.resize(size);
  return bytes;
}

}  // namespace cohort::serve
