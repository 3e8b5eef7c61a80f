// ScalarEvent: the few fields of one TensorBoard Event record that a reader of curves needs, read
// straight from the protobuf wire format.
//
// An event file of a long training run holds millions of records; parsing each into the
// generated proto::Event (event.proto) cost more than everything else the dashboard does to
// serve a curve. This reader walks the bytes once and keeps only the step, the wall time, the
// scalar values (Summary values with simple_value: tag and value) and whether the record is a
// SessionLog START; it allocates nothing per record (tags point into the record's bytes).
//
// It accepts and refuses exactly what protobuf's parser of event.proto does (a test holds the two
// to the same answers on generated and mutated records): fields of other numbers or wire types are
// skipped as unknown fields (groups too, nested at most kMaxNesting deep), a field that overruns
// its message, a malformed varint, a field number 0, an end-group marker outside its group or a
// string that is no valid UTF-8 makes the record invalid. As protobuf does for a oneof, a later
// file_version, summary or session_log field replaces an earlier one of another kind, and several
// summary (or session_log) fields in a row merge.
//
//   ScalarEvent event;  // reused: its vector keeps its memory
//   if (ParseScalarEvent(record, &event)) for (const ScalarValue& v : event.scalars) ...
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace cohort::train {

struct ScalarValue {
  std::string_view tag;  // points into the parsed record
  float value = 0;
};

struct ScalarEvent {
  double wall_time = 0;  // seconds since the Unix epoch
  int64_t step = 0;
  bool session_start = false;        // the event is a SessionLog with status START
  std::vector<ScalarValue> scalars;  // the summary's simple values, in the record's order
};

// Groups and messages nested deeper than this make a record invalid (protobuf's recursion limit).
inline constexpr int kMaxNesting = 100;

// Reads `record`, one Event message, into `event` (overwriting it). Returns false when the bytes
// are no valid Event; `event` holds nothing meaningful then.
bool ParseScalarEvent(std::string_view record, ScalarEvent* event);

}  // namespace cohort::train
