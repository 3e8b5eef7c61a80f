#include "ps/protocol.h"

#include <cstring>

namespace cohort::ps {
namespace {

using net::WireReader;
using net::WireWriter;

constexpr size_t kPayloadHeaderSize = 8;

uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

float BitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

std::string EncodeHead(uint64_t request_id, net::FrameType type, uint8_t kind,
                       std::string_view fields, size_t bulk_size) {
  const size_t bulk_offset = BulkOffset(fields.size());
  std::string head(net::kFrameHeaderSize + bulk_offset, '\0');
  net::EncodeFrameHeader({type, request_id, static_cast<uint32_t>(bulk_offset + bulk_size)},
                         reinterpret_cast<uint8_t*>(head.data()));
  char* payload = head.data() + net::kFrameHeaderSize;
  payload[0] = static_cast<char>(kind);
  const uint32_t fields_size = static_cast<uint32_t>(fields.size());
  for (int i = 0; i < 4; ++i) payload[4 + i] = static_cast<char>(fields_size >> (8 * i));
  std::memcpy(payload + kPayloadHeaderSize, fields.data(), fields.size());
  return head;
}

// Runs `read` on a reader over `fields` and insists that it consumed every byte.
template <typename T, typename Read>
StatusOr<T> Decode(std::string_view fields, const std::string& what, Read read) {
  WireReader reader(fields);
  T value = read(reader);
  COHORT_RETURN_IF_ERROR(reader.Finish(what));
  return value;
}

}  // namespace

std::string OperationName(uint8_t operation) {
  switch (static_cast<Operation>(operation)) {
    case Operation::kCreateDense:
      return "create dense";
    case Operation::kPullDense:
      return "pull dense";
    case Operation::kPushDense:
      return "push dense";
    case Operation::kPushDenseFromMemory:
      return "push dense from memory";
    case Operation::kCreateTable:
      return "create table";
    case Operation::kPullRows:
      return "pull rows";
    case Operation::kPushRows:
      return "push rows";
    case Operation::kSaveShard:
      return "save shard";
    case Operation::kClock:
      return "clock";
    case Operation::kShutdown:
      return "shutdown";
  }
  return "operation " + std::to_string(operation);
}

size_t BulkOffset(size_t fields_size) { return (kPayloadHeaderSize + fields_size + 7) / 8 * 8; }

std::string EncodeRequestHead(uint64_t request_id, Operation operation, std::string_view fields,
                              size_t bulk_size) {
  return EncodeHead(request_id, net::FrameType::kRequest, static_cast<uint8_t>(operation), fields,
                    bulk_size);
}

std::string EncodeResponseHead(uint64_t request_id, const Status& status, std::string_view fields,
                               size_t bulk_size) {
  WireWriter writer;
  writer.String(status.message());
  writer.Bytes(fields);
  return EncodeHead(request_id, net::FrameType::kResponse, static_cast<uint8_t>(status.code()),
                    writer.bytes(), bulk_size);
}

StatusOr<PayloadView> SplitPayload(const char* payload, size_t size) {
  if (size < kPayloadHeaderSize) {
    return Status::InvalidArgument("message of " + std::to_string(size) +
                                   " bytes is shorter than its 8-byte header");
  }
  if (payload[1] != 0 || payload[2] != 0 || payload[3] != 0) {
    return Status::InvalidArgument("message header has reserved bytes set");
  }
  uint32_t fields_size = 0;
  for (int i = 3; i >= 0; --i)
    fields_size = (fields_size << 8) | static_cast<uint8_t>(payload[4 + i]);
  if (fields_size > size - kPayloadHeaderSize) {
    return Status::InvalidArgument("message claims " + std::to_string(fields_size) +
                                   " bytes of fields but carries " +
                                   std::to_string(size - kPayloadHeaderSize));
  }
  PayloadView view;
  view.kind = static_cast<uint8_t>(payload[0]);
  view.fields = std::string_view(payload + kPayloadHeaderSize, fields_size);
  const size_t bulk_offset = BulkOffset(fields_size);
  if (bulk_offset > size) return Status::InvalidArgument("message padding is cut short");
  view.bulk = payload + bulk_offset;
  view.bulk_size = size - bulk_offset;
  return view;
}

void WriteOptimizer(WireWriter& writer, const OptimizerConfig& config) {
  writer.U8(static_cast<uint8_t>(config.kind));
  for (float value :
       {config.learning_rate, config.epsilon, config.initial_accumulator_value, config.beta1,
        config.beta2, config.learning_rate_power, config.l1, config.l2}) {
    writer.U32(FloatBits(value));
  }
}

OptimizerConfig ReadOptimizer(WireReader& reader) {
  OptimizerConfig config;
  config.kind = static_cast<OptimizerKind>(reader.U8());
  for (float* value :
       {&config.learning_rate, &config.epsilon, &config.initial_accumulator_value, &config.beta1,
        &config.beta2, &config.learning_rate_power, &config.l1, &config.l2}) {
    *value = BitsFloat(reader.U32());
  }
  return config;
}

std::string EncodeDenseSliceSpec(const DenseSliceSpec& spec) {
  WireWriter writer;
  writer.String(spec.variable);
  writer.U64(static_cast<uint64_t>(spec.first_row));
  writer.U64(static_cast<uint64_t>(spec.row_count));
  writer.U64(static_cast<uint64_t>(spec.row_width));
  WriteOptimizer(writer, spec.optimizer);
  return writer.bytes();
}

StatusOr<DenseSliceSpec> DecodeDenseSliceSpec(std::string_view fields) {
  return Decode<DenseSliceSpec>(fields, "create dense request", [](WireReader& reader) {
    DenseSliceSpec spec;
    spec.variable = reader.String();
    spec.first_row = static_cast<int64_t>(reader.U64());
    spec.row_count = static_cast<int64_t>(reader.U64());
    spec.row_width = static_cast<int64_t>(reader.U64());
    spec.optimizer = ReadOptimizer(reader);
    return spec;
  });
}

std::string EncodeEmbeddingTableSpec(const EmbeddingTableSpec& spec) {
  WireWriter writer;
  writer.String(spec.name);
  writer.U64(static_cast<uint64_t>(spec.row_width));
  writer.U64(spec.seed);
  writer.U32(FloatBits(spec.init_scale));
  WriteOptimizer(writer, spec.optimizer);
  return writer.bytes();
}

StatusOr<EmbeddingTableSpec> DecodeEmbeddingTableSpec(std::string_view fields) {
  return Decode<EmbeddingTableSpec>(fields, "create table request", [](WireReader& reader) {
    EmbeddingTableSpec spec;
    spec.name = reader.String();
    spec.row_width = static_cast<int64_t>(reader.U64());
    spec.seed = reader.U64();
    spec.init_scale = BitsFloat(reader.U32());
    spec.optimizer = ReadOptimizer(reader);
    return spec;
  });
}

std::string EncodeDenseRange(const DenseRange& range) {
  WireWriter writer;
  writer.String(range.variable);
  writer.U64(static_cast<uint64_t>(range.first_row));
  writer.U64(static_cast<uint64_t>(range.row_count));
  writer.U64(static_cast<uint64_t>(range.sync_step));
  return writer.bytes();
}

StatusOr<DenseRange> DecodeDenseRange(std::string_view fields) {
  return Decode<DenseRange>(fields, "dense row range", [](WireReader& reader) {
    DenseRange range;
    range.variable = reader.String();
    range.first_row = static_cast<int64_t>(reader.U64());
    range.row_count = static_cast<int64_t>(reader.U64());
    range.sync_step = static_cast<int64_t>(reader.U64());
    return range;
  });
}

std::string EncodeRowBatch(const RowBatch& batch) {
  WireWriter writer;
  writer.String(batch.table);
  writer.U64(batch.row_count);
  writer.U64(static_cast<uint64_t>(batch.sync_step));
  return writer.bytes();
}

StatusOr<RowBatch> DecodeRowBatch(std::string_view fields) {
  return Decode<RowBatch>(fields, "row batch", [](WireReader& reader) {
    RowBatch batch;
    batch.table = reader.String();
    batch.row_count = reader.U64();
    batch.sync_step = static_cast<int64_t>(reader.U64());
    return batch;
  });
}

std::string EncodePushOutcome(const PushOutcome& outcome) {
  WireWriter writer;
  writer.U8(outcome.dropped ? 1 : 0);
  writer.U64(static_cast<uint64_t>(outcome.step));
  return writer.bytes();
}

StatusOr<PushOutcome> DecodePushOutcome(std::string_view fields) {
  return Decode<PushOutcome>(fields, "push response", [](WireReader& reader) {
    PushOutcome outcome;
    outcome.dropped = reader.U8() != 0;
    outcome.step = static_cast<int64_t>(reader.U64());
    return outcome;
  });
}

std::string EncodeSaveRequest(const SaveRequest& request) {
  WireWriter writer;
  writer.String(request.directory);
  writer.U64(static_cast<uint64_t>(request.global_step));
  return writer.bytes();
}

StatusOr<SaveRequest> DecodeSaveRequest(std::string_view fields) {
  return Decode<SaveRequest>(fields, "save request", [](WireReader& reader) {
    SaveRequest request;
    request.directory = reader.String();
    request.global_step = static_cast<int64_t>(reader.U64());
    return request;
  });
}

std::string EncodeSavedShard(const SavedShard& shard) {
  WireWriter writer;
  writer.String(shard.file);
  writer.U64(shard.size);
  writer.String(shard.sha256);
  return writer.bytes();
}

StatusOr<SavedShard> DecodeSavedShard(std::string_view fields) {
  return Decode<SavedShard>(fields, "save response", [](WireReader& reader) {
    SavedShard shard;
    shard.file = reader.String();
    shard.size = reader.U64();
    shard.sha256 = reader.String();
    return shard;
  });
}

std::string EncodeMemoryReference(const MemoryReference& reference) {
  WireWriter writer;
  writer.U64(reference.address);
  writer.U64(reference.size);
  return writer.bytes();
}

StatusOr<MemoryReference> DecodeMemoryReference(std::string_view fields, std::string_view* rest) {
  if (fields.size() < kMemoryReferenceSize) {
    return Status::InvalidArgument("a memory reference needs " +
                                   std::to_string(kMemoryReferenceSize) + " bytes, got " +
                                   std::to_string(fields.size()));
  }
  *rest = fields.substr(kMemoryReferenceSize);
  return Decode<MemoryReference>(fields.substr(0, kMemoryReferenceSize), "memory reference",
                                 [](WireReader& reader) {
                                   MemoryReference reference;
                                   reference.address = reader.U64();
                                   reference.size = reader.U64();
                                   return reference;
                                 });
}

std::string EncodeClockRequest(const ClockRequest& request) {
  WireWriter writer;
  writer.U64(static_cast<uint64_t>(request.steps_done));
  writer.U64(static_cast<uint64_t>(request.max_lead));
  writer.U64(static_cast<uint64_t>(request.timeout_ms));
  return writer.bytes();
}

StatusOr<ClockRequest> DecodeClockRequest(std::string_view fields) {
  return Decode<ClockRequest>(fields, "clock request", [](WireReader& reader) {
    ClockRequest request;
    request.steps_done = static_cast<int64_t>(reader.U64());
    request.max_lead = static_cast<int64_t>(reader.U64());
    request.timeout_ms = static_cast<int64_t>(reader.U64());
    return request;
  });
}

std::string EncodeInt64(int64_t value) {
  WireWriter writer;
  writer.U64(static_cast<uint64_t>(value));
  return writer.bytes();
}

StatusOr<int64_t> DecodeInt64(std::string_view fields, const std::string& what) {
  return Decode<int64_t>(fields, what,
                         [](WireReader& reader) { return static_cast<int64_t>(reader.U64()); });
}

}  // namespace cohort::ps
