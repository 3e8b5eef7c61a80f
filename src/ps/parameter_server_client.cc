#include "ps/parameter_server_client.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "ps/checkpoint.h"
#include "ps/protocol.h"

namespace cohort::ps {
namespace {

std::string_view AsBytes(const void* data, size_t size) {
  return std::string_view(static_cast<const char*>(data), size);
}

// The first non-OK status of the calls in `batches`.
Status FirstRefusal(const std::vector<std::vector<Call>>& batches) {
  for (const auto& batch : batches) {
    for (const Call& call : batch) {
      if (!call.status.ok()) return call.status;
    }
  }
  return Status::OK();
}

}  // namespace

ParameterServerClient::ParameterServerClient(ParameterServerClientOptions options)
    : options_(std::move(options)) {}

StatusOr<std::unique_ptr<ParameterServerClient>> ParameterServerClient::Connect(
    ParameterServerClientOptions options) {
  const int num_ps = options.cluster.NumTasks("ps");
  if (num_ps == 0) return Status::InvalidArgument("the cluster has no ps task to connect to");
  if (options.sync && options.max_staleness >= 0) {
    return Status::InvalidArgument("bounded staleness applies to async training, not sync");
  }
  if (options.chunk_bytes < 4096 || options.chunk_bytes > kMaxBulkBytes) {
    return Status::InvalidArgument("chunk_bytes must be between 4 KiB and " +
                                   std::to_string(kMaxBulkBytes) + " bytes");
  }
  std::unique_ptr<ParameterServerClient> client(new ParameterServerClient(std::move(options)));
  for (int index = 0; index < num_ps; ++index) {
    client->servers_.push_back(std::make_unique<ServerConnection>(
        index, client->options_.cluster.Endpoint({"ps", index}), client->options_.connection));
  }
  // An empty batch on each server: connects (with retry) and proves the server is there.
  std::vector<std::vector<Call>> batches(num_ps);
  COHORT_RETURN_IF_ERROR(client->RunAll(batches));
  auto placement = VariablePlacement::Plan({}, num_ps);
  client->placement_ = std::move(*placement);
  return client;
}

Status ParameterServerClient::RunAll(std::vector<std::vector<Call>>& batches) {
  std::vector<Status> results(batches.size());
  std::vector<std::thread> threads;
  int busy = 0;
  for (size_t ps = 0; ps < batches.size(); ++ps) busy += batches[ps].empty() ? 0 : 1;
  for (size_t ps = 0; ps < batches.size(); ++ps) {
    // Empty batches still run when every batch is empty: that is Connect's reachability check.
    if (batches[ps].empty() && busy > 0) continue;
    if (busy <= 1) {
      results[ps] = servers_[ps]->Run(batches[ps]);
    } else {
      threads.emplace_back([&, ps] { results[ps] = servers_[ps]->Run(batches[ps]); });
    }
  }
  for (std::thread& thread : threads) thread.join();
  for (const Status& result : results) COHORT_RETURN_IF_ERROR(result);
  return FirstRefusal(batches);
}

StatusOr<VariablePlacement> ParameterServerClient::PlanVariables(
    const std::vector<DenseVariable>& variables) const {
  if (!shapes_.empty()) {
    return Status::FailedPrecondition(
        "CreateVariables or WaitForVariables may be called once per client");
  }
  std::vector<VariableShape> shapes;
  for (const DenseVariable& variable : variables) {
    shapes.push_back(variable.shape);
    const size_t elements = static_cast<size_t>(variable.shape.rows * variable.shape.row_width);
    if (!variable.initial.empty() && variable.initial.size() != elements) {
      return Status::InvalidArgument("variable \"" + variable.shape.name + "\" has " +
                                     std::to_string(variable.initial.size()) +
                                     " initial values for shape [" +
                                     std::to_string(variable.shape.rows) + ", " +
                                     std::to_string(variable.shape.row_width) + "]");
    }
    if (variable.shape.row_width * kBytesPerFloat > static_cast<int64_t>(options_.chunk_bytes)) {
      return Status::InvalidArgument("variable \"" + variable.shape.name +
                                     "\": one row is larger than a chunk");
    }
  }
  return VariablePlacement::Plan(shapes, num_ps(), options_.min_shard_bytes);
}

Status ParameterServerClient::CreateVariables(const std::vector<DenseVariable>& variables) {
  auto plan = PlanVariables(variables);
  if (!plan.ok()) return plan.status();
  std::vector<std::vector<Call>> batches(num_ps());
  for (size_t v = 0; v < variables.size(); ++v) {
    const DenseVariable& variable = variables[v];
    for (const ShardPlacement& shard : plan->ShardsOf(variable.shape.name)) {
      DenseSliceSpec spec{variable.shape.name, shard.first_row, shard.row_count,
                          variable.shape.row_width, variable.optimizer};
      COHORT_RETURN_IF_ERROR(ValidateDenseSliceSpec(spec));
      const size_t bytes = static_cast<size_t>(spec.element_count()) * sizeof(float);
      if (bytes > kMaxBulkBytes) {
        return Status::InvalidArgument(
            "variable \"" + variable.shape.name + "\": a shard of " + std::to_string(bytes) +
            " bytes exceeds what one create can carry (" + std::to_string(kMaxBulkBytes) +
            "); use more ps tasks or a smaller min_shard_bytes");
      }
      Call call;
      call.operation = Operation::kCreateDense;
      call.fields = EncodeDenseSliceSpec(spec);
      if (!variable.initial.empty()) {
        const size_t offset = static_cast<size_t>(shard.first_row * variable.shape.row_width);
        create_values_.push_back(std::make_unique<std::vector<float>>(
            variable.initial.begin() + offset,
            variable.initial.begin() + offset + spec.element_count()));
        call.bulk.push_back(AsBytes(create_values_.back()->data(), bytes));
      }
      servers_[shard.ps_index]->AddSetupCall(call);
      batches[shard.ps_index].push_back(std::move(call));
    }
  }
  placement_ = std::move(*plan);
  for (const DenseVariable& variable : variables) shapes_[variable.shape.name] = variable.shape;
  return RunAll(batches);
}

Status ParameterServerClient::WaitForVariables(const std::vector<DenseVariable>& variables,
                                               const std::vector<EmbeddingTableSpec>& tables,
                                               const cluster::TaskId& creator,
                                               std::chrono::milliseconds timeout) {
  auto plan = PlanVariables(variables);
  if (!plan.ok()) return plan.status();
  for (const EmbeddingTableSpec& spec : tables) {
    COHORT_RETURN_IF_ERROR(ValidateEmbeddingTableSpec(spec));
    if (table_widths_.count(spec.name)) {
      return Status::FailedPrecondition("embedding table \"" + spec.name + "\" is listed twice");
    }
    table_widths_[spec.name] = spec.row_width;
  }
  // A pull of no rows is answered NotFound until the server holds the variable or table, and
  // moves no values.
  std::vector<std::vector<Call>> checks(num_ps());
  for (const ShardPlacement& shard : plan->shards()) {
    Call call;
    call.operation = Operation::kPullDense;
    call.fields = EncodeDenseRange({shard.variable, shard.first_row, 0, kNoSyncStep});
    checks[shard.ps_index].push_back(std::move(call));
  }
  for (const EmbeddingTableSpec& spec : tables) {
    for (int ps = 0; ps < num_ps(); ++ps) {
      Call call;
      call.operation = Operation::kPullRows;
      call.fields = EncodeRowBatch({spec.name, 0, kNoSyncStep});
      checks[ps].push_back(std::move(call));
    }
  }
  placement_ = std::move(*plan);
  for (const DenseVariable& variable : variables) shapes_[variable.shape.name] = variable.shape;

  using Clock = std::chrono::steady_clock;
  const Clock::time_point started = Clock::now();
  const std::string self = options_.connection.self.ToString();
  const std::string waited_for = creator.ToString() + " to initialise the model's " +
                                 std::to_string(variables.size()) + " variables and " +
                                 std::to_string(tables.size()) + " embedding tables on all " +
                                 std::to_string(num_ps()) + " ps";
  std::chrono::milliseconds backoff = options_.connection.initial_backoff;
  bool waiting = false;
  while (true) {
    std::vector<std::vector<Call>> batches = checks;
    Status checked = RunAll(batches);
    if (checked.ok()) break;
    if (checked.code() != Status::Code::kNotFound) return checked;
    const Clock::time_point now = Clock::now();
    if (!waiting) {
      waiting = true;
      options_.connection.Log(self + " is waiting up to " + net::FormatSeconds(timeout) + " for " +
                              waited_for + " (" + checked.message() + ")");
    }
    if (now - started >= timeout) {
      return Status::DeadlineExceeded(self + " waited " + net::FormatSeconds(timeout) + " for " +
                                      waited_for +
                                      "; the model is still not ready: " + checked.message() +
                                      " (is " + creator.ToString() + " running?)");
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, started + timeout - now));
    backoff = std::min(backoff * 2, options_.connection.max_backoff);
  }
  options_.connection.Log(self + ": the model is ready (" + creator.ToString() +
                          " initialised it on all " + std::to_string(num_ps()) + " ps; waited " +
                          net::FormatSeconds(Clock::now() - started) + ")");
  for (int ps = 0; ps < num_ps(); ++ps) {
    for (Call& call : checks[ps]) servers_[ps]->AddSetupCheck(std::move(call), creator.ToString());
  }
  return Status::OK();
}

Status ParameterServerClient::CreateTable(const EmbeddingTableSpec& spec) {
  COHORT_RETURN_IF_ERROR(ValidateEmbeddingTableSpec(spec));
  if (table_widths_.count(spec.name)) {
    return Status::FailedPrecondition("embedding table \"" + spec.name + "\" is already created");
  }
  std::vector<std::vector<Call>> batches(num_ps());
  for (int ps = 0; ps < num_ps(); ++ps) {
    Call call;
    call.operation = Operation::kCreateTable;
    call.fields = EncodeEmbeddingTableSpec(spec);
    servers_[ps]->AddSetupCall(call);
    batches[ps].push_back(std::move(call));
  }
  table_widths_[spec.name] = spec.row_width;
  return RunAll(batches);
}

StatusOr<std::vector<std::pair<const ShardPlacement*, std::pair<int64_t, int64_t>>>>
ParameterServerClient::Chunks(const std::string& variable) const {
  auto shape = shapes_.find(variable);
  if (shape == shapes_.end()) {
    return Status::NotFound("variable \"" + variable + "\" was not created by this client");
  }
  const int64_t rows_per_chunk = std::max<int64_t>(
      1, static_cast<int64_t>(options_.chunk_bytes) / (shape->second.row_width * kBytesPerFloat));
  std::vector<std::pair<const ShardPlacement*, std::pair<int64_t, int64_t>>> chunks;
  for (const ShardPlacement& shard : placement_.shards()) {
    if (shard.variable != variable) continue;
    for (int64_t first = shard.first_row; first < shard.first_row + shard.row_count;
         first += rows_per_chunk) {
      int64_t count = std::min(rows_per_chunk, shard.first_row + shard.row_count - first);
      chunks.push_back({&shard, {first, count}});
    }
  }
  return chunks;
}

Status ParameterServerClient::Pull(const std::vector<std::pair<std::string, float*>>& outputs) {
  std::vector<std::vector<Call>> batches(num_ps());
  for (const auto& [variable, out] : outputs) {
    auto chunks = Chunks(variable);
    if (!chunks.ok()) return chunks.status();
    const int64_t width = shapes_.at(variable).row_width;
    for (const auto& [shard, range] : *chunks) {
      Call call;
      call.operation = Operation::kPullDense;
      call.fields = EncodeDenseRange({variable, range.first, range.second, kNoSyncStep});
      call.response_bulk = reinterpret_cast<char*>(out + range.first * width);
      call.response_bulk_size = static_cast<size_t>(range.second * width) * sizeof(float);
      batches[shard->ps_index].push_back(std::move(call));
    }
  }
  return RunAll(batches);
}

PendingPull ParameterServerClient::StartPull(std::vector<std::pair<std::string, float*>> outputs) {
  return PendingPull(std::async(std::launch::async,
                                [this, outputs = std::move(outputs)] { return Pull(outputs); }));
}

void ParameterServerClient::NotePushOutcomes(const std::vector<std::vector<Call>>& batches) {
  for (const auto& batch : batches) {
    for (const Call& call : batch) {
      auto outcome = DecodePushOutcome(call.response_fields);
      if (outcome.ok()) next_sync_step_ = std::max(next_sync_step_, outcome->step);
    }
  }
}

Status ParameterServerClient::Push(
    const std::vector<std::pair<std::string, const float*>>& gradients) {
  std::vector<std::vector<Call>> batches(num_ps());
  const int64_t step = options_.sync ? sync_step_ : kNoSyncStep;
  for (const auto& [variable, gradient] : gradients) {
    auto chunks = Chunks(variable);
    if (!chunks.ok()) return chunks.status();
    const int64_t width = shapes_.at(variable).row_width;
    for (const auto& [shard, range] : *chunks) {
      Call call;
      call.operation = Operation::kPushDense;
      call.fields = EncodeDenseRange({variable, range.first, range.second, step});
      call.bulk.push_back(AsBytes(gradient + range.first * width,
                                  static_cast<size_t>(range.second * width) * sizeof(float)));
      batches[shard->ps_index].push_back(std::move(call));
    }
  }
  Status status = RunAll(batches);
  if (options_.sync) NotePushOutcomes(batches);
  return status;
}

Status ParameterServerClient::PullRows(const std::string& table, const int64_t* ids, size_t count,
                                       float* out) {
  auto width_entry = table_widths_.find(table);
  if (width_entry == table_widths_.end()) {
    return Status::NotFound("embedding table \"" + table + "\" was not created by this client");
  }
  const size_t width = static_cast<size_t>(width_entry->second);
  // Route each id to its owner, remembering where its row goes.
  std::vector<std::vector<int64_t>> owned(num_ps());
  std::vector<std::vector<size_t>> positions(num_ps());
  for (size_t i = 0; i < count; ++i) {
    int owner = EmbeddingRowOwner(ids[i], num_ps());
    owned[owner].push_back(ids[i]);
    positions[owner].push_back(i);
  }
  const size_t rows_per_call = std::max<size_t>(1, options_.chunk_bytes / (width * sizeof(float)));
  std::vector<std::vector<float>> rows(num_ps());
  std::vector<std::vector<Call>> batches(num_ps());
  for (int ps = 0; ps < num_ps(); ++ps) {
    rows[ps].resize(owned[ps].size() * width);
    for (size_t first = 0; first < owned[ps].size(); first += rows_per_call) {
      size_t n = std::min(rows_per_call, owned[ps].size() - first);
      Call call;
      call.operation = Operation::kPullRows;
      call.fields = EncodeRowBatch({table, n, kNoSyncStep});
      call.bulk.push_back(AsBytes(owned[ps].data() + first, n * sizeof(int64_t)));
      call.response_bulk = reinterpret_cast<char*>(rows[ps].data() + first * width);
      call.response_bulk_size = n * width * sizeof(float);
      batches[ps].push_back(std::move(call));
    }
  }
  COHORT_RETURN_IF_ERROR(RunAll(batches));
  for (int ps = 0; ps < num_ps(); ++ps) {
    for (size_t j = 0; j < positions[ps].size(); ++j) {
      std::copy_n(rows[ps].data() + j * width, width, out + positions[ps][j] * width);
    }
  }
  return Status::OK();
}

Status ParameterServerClient::PushRows(const std::string& table, const int64_t* ids, size_t count,
                                       const float* gradient) {
  auto width_entry = table_widths_.find(table);
  if (width_entry == table_widths_.end()) {
    return Status::NotFound("embedding table \"" + table + "\" was not created by this client");
  }
  const size_t width = static_cast<size_t>(width_entry->second);
  std::vector<std::vector<int64_t>> owned(num_ps());
  std::vector<std::vector<float>> rows(num_ps());
  for (size_t i = 0; i < count; ++i) {
    int owner = EmbeddingRowOwner(ids[i], num_ps());
    owned[owner].push_back(ids[i]);
    rows[owner].insert(rows[owner].end(), gradient + i * width, gradient + (i + 1) * width);
  }
  const size_t rows_per_call =
      std::max<size_t>(1, options_.chunk_bytes / (width * sizeof(float) + sizeof(int64_t)));
  const int64_t step = options_.sync ? sync_step_ : kNoSyncStep;
  std::vector<std::vector<Call>> batches(num_ps());
  for (int ps = 0; ps < num_ps(); ++ps) {
    // In sync mode every worker pushes to every server each step, even with no rows for it, so
    // that each server's round hears from every worker.
    if (owned[ps].empty() && !options_.sync) continue;
    for (size_t first = 0; first < owned[ps].size() || first == 0; first += rows_per_call) {
      size_t n = std::min(rows_per_call, owned[ps].size() - first);
      Call call;
      call.operation = Operation::kPushRows;
      call.fields = EncodeRowBatch({table, n, step});
      call.bulk.push_back(AsBytes(owned[ps].data() + first, n * sizeof(int64_t)));
      call.bulk.push_back(AsBytes(rows[ps].data() + first * width, n * width * sizeof(float)));
      batches[ps].push_back(std::move(call));
      if (options_.sync) break;  // one contribution per worker per step: no chunking in sync mode
    }
  }
  Status status = RunAll(batches);
  if (options_.sync) NotePushOutcomes(batches);
  return status;
}

Status ParameterServerClient::FinishStep() {
  ++steps_done_;
  if (options_.sync) {
    sync_step_ = std::max(sync_step_ + 1, next_sync_step_);
    return Status::OK();
  }
  if (options_.max_staleness < 0) return Status::OK();
  std::vector<std::vector<Call>> batches(num_ps());
  Call call;
  call.operation = Operation::kClock;
  // The server waits a little less than this client's request timeout, so that its answer
  // (DeadlineExceeded naming the slowest worker) arrives before the client gives up.
  const auto wait = options_.connection.request_timeout * 9 / 10;
  call.fields = EncodeClockRequest({steps_done_, options_.max_staleness, wait.count()});
  batches[0].push_back(std::move(call));
  return RunAll(batches);
}

StatusOr<std::string> ParameterServerClient::SaveCheckpoint(const std::string& directory,
                                                            int64_t global_step) {
  std::vector<std::vector<Call>> batches(num_ps());
  for (int ps = 0; ps < num_ps(); ++ps) {
    Call call;
    call.operation = Operation::kSaveShard;
    call.fields = EncodeSaveRequest({directory, global_step});
    batches[ps].push_back(std::move(call));
  }
  COHORT_RETURN_IF_ERROR(RunAll(batches));
  Manifest manifest;
  manifest.global_step = global_step;
  manifest.num_ps = num_ps();
  for (int ps = 0; ps < num_ps(); ++ps) {
    auto saved = DecodeSavedShard(batches[ps][0].response_fields);
    if (!saved.ok()) return saved.status().WithContext(servers_[ps]->name());
    manifest.shards.push_back(*saved);
  }
  return WriteManifest(directory, manifest);
}

Status ParameterServerClient::ShutdownServers() {
  std::vector<std::vector<Call>> batches(num_ps());
  for (int ps = 0; ps < num_ps(); ++ps) {
    Call call;
    call.operation = Operation::kShutdown;
    batches[ps].push_back(std::move(call));
  }
  return RunAll(batches);
}

}  // namespace cohort::ps
