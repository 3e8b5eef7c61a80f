// Fuzzes everything a parameter server or its client decodes from bytes it did not write itself:
// request and response payloads (split, then every operation's fields), shard files and
// checkpoint manifests read back from disk. Nothing may crash, hang or read out of bounds; what
// decodes must encode to bytes that decode to the same encoding again.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ps/checkpoint.h"
#include "ps/protocol.h"
#include "ps/shard_store.h"

namespace {

using namespace cohort::ps;

// Decode, re-encode, decode again: the two encodings must be equal (byte equality also holds for
// NaN floats, which operator== would not).
template <typename Decode, typename Encode>
void CheckStableEncoding(std::string_view fields, Decode decode, Encode encode) {
  auto decoded = decode(fields);
  if (!decoded.ok()) return;
  const std::string once = encode(*decoded);
  auto again = decode(once);
  if (!again.ok() || encode(*again) != once) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  auto payload = SplitPayload(bytes.data(), bytes.size());
  if (payload.ok()) {
    if (payload->bulk_size > size) __builtin_trap();
    const std::string_view fields = payload->fields;
    CheckStableEncoding(fields, DecodeDenseSliceSpec, EncodeDenseSliceSpec);
    CheckStableEncoding(fields, DecodeEmbeddingTableSpec, EncodeEmbeddingTableSpec);
    CheckStableEncoding(fields, DecodeDenseRange, EncodeDenseRange);
    CheckStableEncoding(fields, DecodeRowBatch, EncodeRowBatch);
    CheckStableEncoding(fields, DecodePushOutcome, EncodePushOutcome);
    CheckStableEncoding(fields, DecodeSaveRequest, EncodeSaveRequest);
    CheckStableEncoding(fields, DecodeSavedShard, EncodeSavedShard);
    CheckStableEncoding(fields, DecodeClockRequest, EncodeClockRequest);
  }

  // The same bytes as a shard file and as a manifest.
  ShardStore store(/*ps_index=*/1, /*num_ps=*/2);
  int64_t global_step = 0;
  DecodeShardInto(bytes, &store, &global_step).ok();
  CheckStableEncoding(bytes, DecodeManifest, EncodeManifest);
  return 0;
}
