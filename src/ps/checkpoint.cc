#include "ps/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/checksum.h"
#include "base/object_url.h"
#include "base/storage.h"
#include "net/socket.h"

namespace cohort::ps {
namespace {

using net::WireReader;
using net::WireWriter;

constexpr char kShardMagic[] = "cohort-ps-shard/1";
constexpr char kManifestMagic[] = "cohort-ps-checkpoint 2";
constexpr uint32_t kMaxSlots = 4;

template <typename T>
void WriteArray(WireWriter& writer, const std::vector<T>& values) {
  writer.U64(values.size());
  writer.Bytes(
      std::string_view(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
}

template <typename T>
std::vector<T> ReadArray(WireReader& reader) {
  uint64_t count = reader.U64();
  // A corrupt count must not become a huge allocation: Bytes() fails first when the file is
  // shorter than the count says.
  if (count > (uint64_t{1} << 40) / sizeof(T)) {
    reader.Bytes(SIZE_MAX);
    return {};
  }
  std::string bytes = reader.Bytes(count * sizeof(T));
  std::vector<T> values(bytes.size() / sizeof(T));
  // An empty vector's data() may be null, which memcpy must not be given even for 0 bytes.
  if (!values.empty()) std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

// What an optimizer keeps beside the parameters: its slots (Adagrad's accumulator, Adam's moments)
// and, for Adam, how many updates each row has had. The same for dense slices and tables.
void WriteOptimizerState(WireWriter& writer, const std::vector<std::vector<float>>& slots,
                         const std::vector<int64_t>& row_steps) {
  writer.U32(static_cast<uint32_t>(slots.size()));
  for (const auto& slot : slots) WriteArray(writer, slot);
  WriteArray(writer, row_steps);
}

Status ReadOptimizerState(WireReader& reader, std::vector<std::vector<float>>* slots,
                          std::vector<int64_t>* row_steps) {
  uint32_t slot_count = reader.U32();
  if (slot_count > kMaxSlots) return Status::InvalidArgument("shard: bad optimizer slot count");
  slots->resize(slot_count);
  for (auto& slot : *slots) slot = ReadArray<float>(reader);
  *row_steps = ReadArray<int64_t>(reader);
  return Status::OK();
}

std::string PaddedStep(int64_t step) {
  char text[32];
  std::snprintf(text, sizeof(text), "%012" PRId64, step);
  return text;
}

std::string ShardFileName(int ps_index, int num_ps, int64_t step) {
  return "ps-" + std::to_string(ps_index) + "-of-" + std::to_string(num_ps) + ".step-" +
         PaddedStep(step) + ".shard";
}

// The record a manifest keeps of `shard`, in base/checksum.h's terms.
FileChecksum ChecksumOf(const SavedShard& shard) {
  return FileChecksum{shard.file, shard.size, shard.sha256};
}

}  // namespace

std::string EncodeShard(const ShardStore& store, int64_t global_step) {
  WireWriter writer;
  writer.String(kShardMagic);
  writer.U32(static_cast<uint32_t>(store.ps_index()));
  writer.U32(static_cast<uint32_t>(store.num_ps()));
  writer.U64(static_cast<uint64_t>(global_step));
  auto slices = store.DenseSlices();
  writer.U32(static_cast<uint32_t>(slices.size()));
  for (const auto& slice : slices) {
    writer.String(EncodeDenseSliceSpec(slice->spec()));
    DenseSliceState state = slice->Snapshot();
    WriteArray(writer, state.parameters);
    WriteOptimizerState(writer, state.slots, state.row_steps);
  }
  auto tables = store.Tables();
  writer.U32(static_cast<uint32_t>(tables.size()));
  for (const auto& table : tables) {
    writer.String(EncodeEmbeddingTableSpec(table->spec()));
    EmbeddingTableState state = table->Snapshot();
    WriteArray(writer, state.ids);
    WriteArray(writer, state.values);
    WriteOptimizerState(writer, state.slots, state.row_steps);
  }
  return writer.bytes();
}

Status DecodeShardInto(std::string_view bytes, ShardStore* store, int64_t* global_step) {
  WireReader reader(bytes);
  if (reader.String() != kShardMagic) {
    return Status::InvalidArgument("not a Cohort parameter-server shard");
  }
  int ps_index = static_cast<int>(reader.U32());
  int num_ps = static_cast<int>(reader.U32());
  int64_t step = static_cast<int64_t>(reader.U64());
  if (reader.ok() && (ps_index != store->ps_index() || num_ps != store->num_ps())) {
    return Status::InvalidArgument("the shard was saved by ps:" + std::to_string(ps_index) +
                                   " of " + std::to_string(num_ps) +
                                   " servers, not ps:" + std::to_string(store->ps_index()) +
                                   " of " + std::to_string(store->num_ps()));
  }
  std::vector<std::shared_ptr<DenseSlice>> slices;
  uint32_t slice_count = reader.U32();
  for (uint32_t i = 0; i < slice_count && reader.ok(); ++i) {
    auto spec = DecodeDenseSliceSpec(reader.String());
    DenseSliceState state;
    state.parameters = ReadArray<float>(reader);
    COHORT_RETURN_IF_ERROR(ReadOptimizerState(reader, &state.slots, &state.row_steps));
    if (!reader.ok()) break;
    if (!spec.ok()) return spec.status().WithContext("shard");
    auto slice = DenseSlice::Restore(*spec, std::move(state));
    if (!slice.ok()) return slice.status().WithContext("shard");
    slices.push_back(std::move(*slice));
  }
  std::vector<std::shared_ptr<EmbeddingTable>> tables;
  uint32_t table_count = reader.U32();
  for (uint32_t i = 0; i < table_count && reader.ok(); ++i) {
    auto spec = DecodeEmbeddingTableSpec(reader.String());
    EmbeddingTableState state;
    state.ids = ReadArray<int64_t>(reader);
    state.values = ReadArray<float>(reader);
    COHORT_RETURN_IF_ERROR(ReadOptimizerState(reader, &state.slots, &state.row_steps));
    if (!reader.ok()) break;
    if (!spec.ok()) return spec.status().WithContext("shard");
    auto table = EmbeddingTable::Restore(*spec, ps_index, num_ps, std::move(state));
    if (!table.ok()) return table.status().WithContext("shard");
    tables.push_back(std::move(*table));
  }
  COHORT_RETURN_IF_ERROR(reader.Finish("shard"));
  store->Replace(std::move(slices), std::move(tables));
  *global_step = step;
  return Status::OK();
}

StatusOr<SavedShard> SaveShard(const ShardStore& store, const std::string& directory,
                               int64_t global_step) {
  if (!IsStorageUrl(directory)) {  // a bucket's "directory" is a prefix, made by its objects
    std::error_code error;
    std::filesystem::create_directories(directory, error);
    if (error) return Status::IOError("cannot create " + directory + ": " + error.message());
  }
  std::string bytes = EncodeShard(store, global_step);
  SavedShard saved;
  saved.file = ShardFileName(store.ps_index(), store.num_ps(), global_step);
  saved.size = bytes.size();
  saved.sha256 = Sha256Hex(bytes);
  COHORT_RETURN_IF_ERROR(WriteStorageFileAtomically(directory + "/" + saved.file, bytes));
  return saved;
}

std::string ManifestFileName(int64_t global_step) {
  return "checkpoint-" + PaddedStep(global_step) + ".manifest";
}

std::string EncodeManifest(const Manifest& manifest) {
  std::ostringstream text;
  text << kManifestMagic << "\n";
  text << "global_step " << manifest.global_step << "\n";
  text << "num_ps " << manifest.num_ps << "\n";
  for (size_t index = 0; index < manifest.shards.size(); ++index) {
    const SavedShard& shard = manifest.shards[index];
    text << "shard " << index << " " << shard.file << " " << shard.size << " " << shard.sha256
         << "\n";
  }
  text << "end\n";
  return text.str();
}

StatusOr<Manifest> DecodeManifest(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string line;
  if (!std::getline(in, line) || line != kManifestMagic) {
    return Status::InvalidArgument("not a Cohort checkpoint manifest");
  }
  Manifest manifest;
  std::string key;
  if (!(in >> key >> manifest.global_step) || key != "global_step") {
    return Status::InvalidArgument("manifest lacks global_step");
  }
  if (!(in >> key >> manifest.num_ps) || key != "num_ps" || manifest.num_ps <= 0 ||
      manifest.num_ps > 4096) {
    return Status::InvalidArgument("manifest lacks a valid num_ps");
  }
  for (int index = 0; index < manifest.num_ps; ++index) {
    SavedShard shard;
    int listed_index = -1;
    if (!(in >> key >> listed_index >> shard.file >> shard.size >> shard.sha256) ||
        key != "shard" || listed_index != index || !IsSha256Hex(shard.sha256) ||
        shard.file.find('/') != std::string::npos) {
      return Status::InvalidArgument("manifest entry for shard " + std::to_string(index) +
                                     " is missing or malformed");
    }
    manifest.shards.push_back(shard);
  }
  // The last line proves the manifest was not cut short.
  if (!(in >> key) || key != "end") return Status::InvalidArgument("manifest is truncated");
  return manifest;
}

StatusOr<std::string> WriteManifest(const std::string& directory, const Manifest& manifest) {
  if (static_cast<int>(manifest.shards.size()) != manifest.num_ps) {
    return Status::InvalidArgument(
        "a manifest needs one shard per server: " + std::to_string(manifest.shards.size()) +
        " for " + std::to_string(manifest.num_ps));
  }
  const std::string path = directory + "/" + ManifestFileName(manifest.global_step);
  COHORT_RETURN_IF_ERROR(WriteStorageFileAtomically(path, EncodeManifest(manifest)));
  return path;
}

std::vector<std::string> ListManifests(const std::string& directory) {
  std::vector<std::string> manifests;
  // A directory that cannot be listed (absent, or a bucket that does not answer) has none.
  StatusOr<std::vector<StorageEntry>> entries = ListStorageDirectory(directory);
  if (!entries.ok()) return manifests;
  for (const StorageEntry& entry : *entries) {
    const std::string& name = entry.name;
    if (!entry.is_directory && name.starts_with("checkpoint-") && name.ends_with(".manifest")) {
      manifests.push_back(name);
    }
  }
  // Zero-padded steps: the newest sorts first in reverse order.
  std::sort(manifests.rbegin(), manifests.rend());
  return manifests;
}

StatusOr<std::vector<std::unique_ptr<ShardStore>>> LoadCheckpoint(const std::string& directory,
                                                                  const Manifest& manifest) {
  std::vector<std::unique_ptr<ShardStore>> stores;
  for (int index = 0; index < manifest.num_ps; ++index) {
    const SavedShard& shard = manifest.shards[index];
    const std::string path = directory + "/" + shard.file;
    auto bytes = ReadVerifiedFile(directory, ChecksumOf(shard));
    if (!bytes.ok()) return bytes.status();
    auto store = std::make_unique<ShardStore>(index, manifest.num_ps);
    int64_t step = 0;
    Status decoded = DecodeShardInto(*bytes, store.get(), &step);
    if (!decoded.ok()) return Status::FailedPrecondition(path + ": " + decoded.message());
    stores.push_back(std::move(store));
  }
  return stores;
}

StatusOr<int64_t> RestoreLatest(const std::string& directory, ShardStore* store,
                                const std::function<void(const std::string&)>& log) {
  const std::vector<std::string> manifests = ListManifests(directory);
  const std::string self = "ps:" + std::to_string(store->ps_index());
  for (const std::string& name : manifests) {
    auto skip = [&](const std::string& why) {
      if (log) log(self + ": ignoring checkpoint " + directory + "/" + name + ": " + why);
    };
    auto text = ReadStorageFile(directory + "/" + name);
    if (!text.ok()) {
      skip(text.status().message());
      continue;
    }
    auto manifest = DecodeManifest(*text);
    if (!manifest.ok()) {
      skip(manifest.status().message());
      continue;
    }
    if (manifest->num_ps != store->num_ps()) {
      skip("it was written for " + std::to_string(manifest->num_ps) + " servers, not " +
           std::to_string(store->num_ps()));
      continue;
    }
    const SavedShard& shard = manifest->shards[store->ps_index()];
    auto bytes = ReadVerifiedFile(directory, ChecksumOf(shard));
    if (!bytes.ok()) {
      skip(bytes.status().message());
      continue;
    }
    int64_t step = 0;
    Status decoded = DecodeShardInto(*bytes, store, &step);
    if (!decoded.ok()) {
      skip(decoded.message());
      continue;
    }
    return manifest->global_step;
  }
  return Status::NotFound("no whole checkpoint in " + directory);
}

}  // namespace cohort::ps
