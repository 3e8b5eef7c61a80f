// The parameter-server wire protocol: requests from workers and the chief, responses from a
// parameter server, carried in kRequest / kResponse frames (net/frame.h) on an authenticated
// connection (net/handshake.h).
//
// A request's frame tag is its id; the response repeats it, so a client may send several requests
// before reading any response (pipelining), which is how a large push keeps the link busy while
// the server applies the previous chunk. Each payload is
//
//   offset  size  field
//   0       1     operation (request) or status code (response, Status::Code)
//   1       3     zero
//   4       4     fields size F, little-endian
//   8       F     fields: fixed-width integers and short strings (net::WireWriter)
//   8+F     pad   zero bytes up to a multiple of 8
//   ...           bulk: raw little-endian float32 values or int64 row ids
//
// Bulk values travel as raw bytes after an 8-aligned offset, so a receiver can use them in place
// (no per-element decoding, no second copy), and a sender can write them straight from its own
// buffer. The fields say how much bulk to expect and the receiver checks that the frame holds
// exactly that, so a short or padded message is an error naming the operation, never a read out
// of bounds. A response's fields start with the status message; a non-OK status has no bulk.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "net/frame.h"
#include "ps/dense_slice.h"
#include "ps/embedding_table.h"

namespace cohort::ps {

static_assert(sizeof(float) == 4, "the wire carries IEEE float32");

enum class Operation : uint8_t {
  kCreateDense = 1,  // fields: DenseSliceSpec; bulk: initial values (or none for zeros)
  kPullDense = 2,    // fields: variable, first row, row count; response bulk: values
  kPushDense = 3,    // fields: variable, first row, row count, sync step; bulk: gradient
  kCreateTable = 4,  // fields: EmbeddingTableSpec
  kPullRows = 5,     // fields: table, row count; bulk: ids; response bulk: rows
  kPushRows = 6,     // fields: table, sync step, row count; bulk: ids, then gradient rows
  kSaveShard = 7,    // fields: directory, global step; response fields: file, size, sha256
  kClock = 8,  // fields: steps done, max lead, timeout; response fields: the slowest worker's steps
  kShutdown = 9,  // the chief ends the job: the server stops serving
  // fields: MemoryReference, then a push's DenseRange fields; no bulk (see below)
  kPushDenseFromMemory = 10,
};

// "create dense", "pull dense"... or "operation 42".
std::string OperationName(uint8_t operation);

// The largest bulk one request or response may carry: a frame's bound less room for the fields.
inline constexpr size_t kMaxBulkBytes = net::kMaxDataPayload - 64 * 1024;
// Async pushes carry this instead of a sync step.
inline constexpr int64_t kNoSyncStep = -1;

// Bytes of the payload before the bulk, for fields of `fields_size` bytes.
size_t BulkOffset(size_t fields_size);

// The frame header and everything before the bulk of a request or response whose bulk is
// `bulk_size` bytes: write this, then the bulk.
std::string EncodeRequestHead(uint64_t request_id, Operation operation, std::string_view fields,
                              size_t bulk_size);
std::string EncodeResponseHead(uint64_t request_id, const Status& status, std::string_view fields,
                               size_t bulk_size);

// A received payload, split. The views point into the payload buffer, which must stay alive.
struct PayloadView {
  uint8_t kind = 0;  // operation or status code
  std::string_view fields;
  const char* bulk = nullptr;  // 8-aligned when the payload buffer is
  size_t bulk_size = 0;
};

// Splits a request or response payload; InvalidArgument when the header is inconsistent.
StatusOr<PayloadView> SplitPayload(const char* payload, size_t size);

// The fields of each operation, and their encodings. Decoders check every field and refuse
// trailing bytes.
void WriteOptimizer(net::WireWriter& writer, const OptimizerConfig& config);
OptimizerConfig ReadOptimizer(net::WireReader& reader);

std::string EncodeDenseSliceSpec(const DenseSliceSpec& spec);
StatusOr<DenseSliceSpec> DecodeDenseSliceSpec(std::string_view fields);

std::string EncodeEmbeddingTableSpec(const EmbeddingTableSpec& spec);
StatusOr<EmbeddingTableSpec> DecodeEmbeddingTableSpec(std::string_view fields);

// Pull and push of a dense row range.
struct DenseRange {
  std::string variable;
  int64_t first_row = 0;
  int64_t row_count = 0;
  int64_t sync_step = kNoSyncStep;  // pushes only
};
std::string EncodeDenseRange(const DenseRange& range);
StatusOr<DenseRange> DecodeDenseRange(std::string_view fields);

// Pull and push of embedding rows.
struct RowBatch {
  std::string table;
  uint64_t row_count = 0;
  int64_t sync_step = kNoSyncStep;  // pushes only
};
std::string EncodeRowBatch(const RowBatch& batch);
StatusOr<RowBatch> DecodeRowBatch(std::string_view fields);

// A dense push whose gradient the server reads straight out of the client's memory
// (net/same_host.h) instead of receiving it over the socket: one copy instead of loopback TCP's
// two. Used only between tasks on one host whose handshake proved the memory readable; a server
// that cannot read this client's memory after all answers kMemoryNotReadable, and the client
// sends the bytes instead. The fields are the reference followed by the fields of an ordinary
// push, so the server handles both forms of push with one piece of code.
struct MemoryReference {
  uint64_t address = 0;
  uint64_t size = 0;  // bytes
};
inline constexpr size_t kMemoryReferenceSize = 16;
inline constexpr char kMemoryNotReadable[] = "cannot read the memory of";
std::string EncodeMemoryReference(const MemoryReference& reference);
// The reference at the start of `fields`; `rest` receives the fields after it.
StatusOr<MemoryReference> DecodeMemoryReference(std::string_view fields, std::string_view* rest);

// What a push did: applied now (async), applied as part of sync step `step`, or dropped because
// that step had already been applied without this worker (see sync_aggregator.h).
struct PushOutcome {
  bool dropped = false;
  int64_t step = 0;  // sync mode: the step this server collects next
};
std::string EncodePushOutcome(const PushOutcome& outcome);
StatusOr<PushOutcome> DecodePushOutcome(std::string_view fields);

struct SaveRequest {
  std::string directory;
  int64_t global_step = 0;
};
std::string EncodeSaveRequest(const SaveRequest& request);
StatusOr<SaveRequest> DecodeSaveRequest(std::string_view fields);

// What a server saved: its shard file (a name inside the checkpoint directory), its size and
// SHA-256 (base/checksum.h), so the manifest can vouch for it.
struct SavedShard {
  std::string file;
  uint64_t size = 0;
  std::string sha256;  // 64 lower-case hex digits
};
std::string EncodeSavedShard(const SavedShard& shard);
StatusOr<SavedShard> DecodeSavedShard(std::string_view fields);

struct ClockRequest {
  int64_t steps_done = 0;
  int64_t max_lead = 0;
  int64_t timeout_ms = 0;  // how long the server may hold the request before giving up
};
std::string EncodeClockRequest(const ClockRequest& request);
StatusOr<ClockRequest> DecodeClockRequest(std::string_view fields);

std::string EncodeInt64(int64_t value);
StatusOr<int64_t> DecodeInt64(std::string_view fields, const std::string& what);

}  // namespace cohort::ps
