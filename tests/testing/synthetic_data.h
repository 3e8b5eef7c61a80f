// Small data sets for the training tests: learnable in a few steps, and IDX files to read back.
// Header-only, so that cohort_testing links nothing of Cohort's: a test including it links
// cohort_train_data (and zlib).
//
//   MakeSyntheticDataset(samples, seed, size)  4 classes of size x size images; class c lights up
//                                               quadrant c (plus noise), so a few steps separate
//                                               them
//   IdxBytes(dims, data)                        the bytes of an unsigned-byte IDX file
//   Gzip(bytes)                                 gzip-compressed bytes
//   WriteDatasetFiles(dataset, dir, prefix, gz) <dir>/<prefix>-{images-idx3,labels-idx1}-ubyte[.gz]
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "train/data/image_dataset.h"

namespace cohort::train::testing {

inline ImageDataset MakeSyntheticDataset(int64_t samples, uint64_t seed, int64_t size = 12) {
  ImageDataset dataset;
  dataset.rows = dataset.cols = size;
  dataset.num_classes = 4;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> noise(0, 60);
  for (int64_t i = 0; i < samples; ++i) {
    const int label = static_cast<int>(rng() % 4);
    dataset.labels.push_back(static_cast<uint8_t>(label));
    for (int64_t r = 0; r < size; ++r) {
      for (int64_t c = 0; c < size; ++c) {
        const int quadrant = (r >= size / 2 ? 2 : 0) + (c >= size / 2 ? 1 : 0);
        int value = noise(rng) + (quadrant == label ? 150 : 0);
        dataset.pixels.push_back(static_cast<uint8_t>(std::min(value, 255)));
      }
    }
  }
  return dataset;
}

inline std::string IdxBytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  std::string bytes = {0, 0, 0x08, static_cast<char>(dims.size())};
  for (uint32_t dim : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>(dim >> shift));
  }
  bytes.append(data.begin(), data.end());
  return bytes;
}

inline std::string Gzip(const std::string& bytes) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2");
  }
  std::string out(deflateBound(&stream, bytes.size()) + 64, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  if (deflate(&stream, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("deflate");
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline void WriteDatasetFiles(const ImageDataset& dataset, const std::string& dir,
                              const std::string& prefix, bool gzip) {
  const auto n = static_cast<uint32_t>(dataset.size());
  std::string images =
      IdxBytes({n, static_cast<uint32_t>(dataset.rows), static_cast<uint32_t>(dataset.cols)},
               dataset.pixels);
  std::string labels = IdxBytes({n}, dataset.labels);
  const std::string suffix = gzip ? ".gz" : "";
  WriteFile(dir + "/" + prefix + "-images-idx3-ubyte" + suffix, gzip ? Gzip(images) : images);
  WriteFile(dir + "/" + prefix + "-labels-idx1-ubyte" + suffix, gzip ? Gzip(labels) : labels);
}

}  // namespace cohort::train::testing
