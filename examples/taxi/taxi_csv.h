// The taxi trips' CSV files: their columns, how a trip is written, and how a file is read back.
//
// The columns are those of the TFX taxi example's data.csv, in its order, less the three it never
// used (trip_start_timestamp and the census tracts):
//
//   pickup_community_area, fare, trip_start_month, trip_start_hour, trip_start_day,
//   pickup_latitude, pickup_longitude, dropoff_latitude, dropoff_longitude, trip_miles,
//   payment_type, company, trip_seconds, dropoff_community_area, tips
//
// A missing value is an empty field (community areas, coordinates and the company may be
// missing, as in the real data; every other column is required). The reader maps columns by
// their header names, so the order may differ, but every column must be there exactly once and no
// other. Header problems always fail. A malformed row either fails the read or is skipped and
// counted, by BadRowPolicy, and every message says where and what:
//
//   eval.csv:7:2 (fare): "12,5" is not a number
//   eval.csv:9:4 (trip_start_hour): 24 is out of range [0, 23]
//   eval.csv:12:11 (payment_type): missing value (the column is required)
//   eval.csv:15: 14 fields, the header has 15
//   eval.csv:1: missing column "tips"
//
// Lines count from 1 for the header, so they are the lines an editor shows; columns count from 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "status.h"
#include "taxi_trip.h"

namespace cohort::taxi {

// The column names in the order the writer uses.
const std::vector<std::string>& TaxiCsvColumns();

// The header row, with its line break.
std::string TaxiCsvHeader();

// Appends `trip` as one row with its line break. Doubles are written with the precision the
// generator rounds to (cents, hundredths of a mile, micro-degrees), so a generated trip reads back
// equal to itself.
void AppendTaxiCsvRow(const TaxiTrip& trip, std::string* out);

enum class BadRowPolicy {
  kFail,          // the first malformed row fails the read
  kSkipAndCount,  // malformed rows are left out and counted; the first few messages are kept
};

struct TaxiCsvReadOptions {
  BadRowPolicy bad_rows = BadRowPolicy::kFail;
  size_t errors_kept = 5;  // under kSkipAndCount, how many messages to keep for the log
};

struct TaxiCsvContents {
  std::vector<TaxiTrip> trips;
  int64_t skipped_rows = 0;
  std::vector<std::string> first_errors;  // the first `errors_kept` skipped rows' messages
};

StatusOr<TaxiCsvContents> ReadTaxiCsv(const std::string& path,
                                      const TaxiCsvReadOptions& options = {});

}  // namespace cohort::taxi
