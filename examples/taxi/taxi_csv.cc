#include "taxi_csv.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "csv_reader.h"

namespace cohort::taxi {
namespace {

// Indices into TaxiCsvColumns().
enum Column {
  kPickupCommunityArea,
  kFare,
  kTripStartMonth,
  kTripStartHour,
  kTripStartDay,
  kPickupLatitude,
  kPickupLongitude,
  kDropoffLatitude,
  kDropoffLongitude,
  kTripMiles,
  kPaymentType,
  kCompany,
  kTripSeconds,
  kDropoffCommunityArea,
  kTips,
  kColumnCount,
};

std::string FormatDecimal(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
  return buffer;
}

std::string FormatOptionalInt(const std::optional<int>& value) {
  return value ? std::to_string(*value) : "";
}

std::string FormatOptionalDecimal(const std::optional<double>& value, int decimals) {
  return value ? FormatDecimal(*value, decimals) : "";
}

// Turns one record's fields into a trip, naming the first bad value.
class RowParser {
 public:
  RowParser(const CsvReader& reader, const std::vector<size_t>& field_of_column)
      : reader_(reader), field_of_column_(field_of_column) {}

  Status Parse(const CsvRecord& record, TaxiTrip* trip) {
    record_ = &record;
    if (record.fields.size() != reader_.header().size()) {
      return Status::InvalidArgument(reader_.path() + ":" + std::to_string(record.line) + ": " +
                                     std::to_string(record.fields.size()) +
                                     " fields, the header has " +
                                     std::to_string(reader_.header().size()));
    }
    std::optional<int64_t> integer;
    TAXI_RETURN_IF_ERROR(Integer(kTripStartMonth, 1, 12, /*required=*/true, &integer));
    trip->trip_start_month = static_cast<int>(*integer);
    TAXI_RETURN_IF_ERROR(Integer(kTripStartHour, 0, 23, true, &integer));
    trip->trip_start_hour = static_cast<int>(*integer);
    TAXI_RETURN_IF_ERROR(Integer(kTripStartDay, 1, 7, true, &integer));
    trip->trip_start_day = static_cast<int>(*integer);
    TAXI_RETURN_IF_ERROR(Integer(kTripSeconds, 0, 10'000'000, true, &integer));
    trip->trip_seconds = *integer;
    TAXI_RETURN_IF_ERROR(Integer(kPickupCommunityArea, 1, kCommunityAreaCount, false, &integer));
    trip->pickup_community_area = ToOptionalInt(integer);
    TAXI_RETURN_IF_ERROR(Integer(kDropoffCommunityArea, 1, kCommunityAreaCount, false, &integer));
    trip->dropoff_community_area = ToOptionalInt(integer);

    std::optional<double> number;
    TAXI_RETURN_IF_ERROR(Number(kTripMiles, 0, 10'000, true, &number));
    trip->trip_miles = *number;
    TAXI_RETURN_IF_ERROR(Number(kFare, 0, 100'000, true, &number));
    trip->fare = *number;
    TAXI_RETURN_IF_ERROR(Number(kTips, 0, 100'000, true, &number));
    trip->tips = *number;
    TAXI_RETURN_IF_ERROR(Number(kPickupLatitude, -90, 90, false, &trip->pickup_latitude));
    TAXI_RETURN_IF_ERROR(Number(kPickupLongitude, -180, 180, false, &trip->pickup_longitude));
    TAXI_RETURN_IF_ERROR(Number(kDropoffLatitude, -90, 90, false, &trip->dropoff_latitude));
    TAXI_RETURN_IF_ERROR(Number(kDropoffLongitude, -180, 180, false, &trip->dropoff_longitude));

    const std::string& payment_type = Field(kPaymentType);
    if (payment_type.empty()) return Missing(kPaymentType);
    trip->payment_type = payment_type;
    const std::string& company = Field(kCompany);
    trip->company = company.empty() ? std::nullopt : std::optional<std::string>(company);
    return Status::OK();
  }

 private:
  const std::string& Field(Column column) const {
    return record_->fields[field_of_column_[column]];
  }
  std::string Where(Column column) const {
    return reader_.Where(record_->line, field_of_column_[column]);
  }
  Status Missing(Column column) const {
    return Status::InvalidArgument(Where(column) + ": missing value (the column is required)");
  }
  Status Invalid(Column column, const std::string& what) const {
    return Status::InvalidArgument(Where(column) + ": \"" + Field(column) + "\" " + what);
  }
  template <typename T>
  Status OutOfRange(Column column, T low, T high) const {
    return Status::InvalidArgument(Where(column) + ": " + Field(column) + " is out of range [" +
                                   Format(low) + ", " + Format(high) + "]");
  }
  static std::string Format(int64_t value) { return std::to_string(value); }
  static std::string Format(double value) { return FormatDecimal(value, 0); }
  static std::optional<int> ToOptionalInt(const std::optional<int64_t>& value) {
    return value ? std::optional<int>(static_cast<int>(*value)) : std::nullopt;
  }

  Status Integer(Column column, int64_t low, int64_t high, bool required,
                 std::optional<int64_t>* out) const {
    const std::string& text = Field(column);
    out->reset();
    if (text.empty()) return required ? Missing(column) : Status::OK();
    int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) {
      return Invalid(column, "is not an integer");
    }
    if (value < low || value > high) return OutOfRange(column, low, high);
    *out = value;
    return Status::OK();
  }

  Status Number(Column column, double low, double high, bool required,
                std::optional<double>* out) const {
    const std::string& text = Field(column);
    out->reset();
    if (text.empty()) return required ? Missing(column) : Status::OK();
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
      return Invalid(column, "is not a number");
    }
    if (value < low || value > high) return OutOfRange(column, low, high);
    *out = value;
    return Status::OK();
  }

  const CsvReader& reader_;
  const std::vector<size_t>& field_of_column_;
  const CsvRecord* record_ = nullptr;
};

// Maps each expected column to its position in the file's header.
StatusOr<std::vector<size_t>> MatchHeader(const CsvReader& reader) {
  const std::vector<std::string>& expected = TaxiCsvColumns();
  const std::vector<std::string>& header = reader.header();
  constexpr size_t kAbsent = static_cast<size_t>(-1);
  std::vector<size_t> field_of_column(expected.size(), kAbsent);
  for (size_t field = 0; field < header.size(); ++field) {
    size_t column = 0;
    while (column < expected.size() && expected[column] != header[field]) ++column;
    if (column == expected.size()) {
      return Status::InvalidArgument(reader.path() + ":1:" + std::to_string(field + 1) +
                                     ": unexpected column \"" + header[field] + "\"");
    }
    if (field_of_column[column] != kAbsent) {
      return Status::InvalidArgument(reader.path() + ":1:" + std::to_string(field + 1) +
                                     ": column \"" + header[field] + "\" appears twice");
    }
    field_of_column[column] = field;
  }
  for (size_t column = 0; column < expected.size(); ++column) {
    if (field_of_column[column] == kAbsent) {
      return Status::InvalidArgument(reader.path() + ":1: missing column \"" + expected[column] +
                                     "\"");
    }
  }
  return field_of_column;
}

}  // namespace

const std::vector<std::string>& TaxiCsvColumns() {
  static const std::vector<std::string> columns = {"pickup_community_area",
                                                   "fare",
                                                   "trip_start_month",
                                                   "trip_start_hour",
                                                   "trip_start_day",
                                                   "pickup_latitude",
                                                   "pickup_longitude",
                                                   "dropoff_latitude",
                                                   "dropoff_longitude",
                                                   "trip_miles",
                                                   "payment_type",
                                                   "company",
                                                   "trip_seconds",
                                                   "dropoff_community_area",
                                                   "tips"};
  static_assert(kColumnCount == 15);
  return columns;
}

std::string TaxiCsvHeader() {
  std::string header;
  for (const std::string& column : TaxiCsvColumns()) {
    if (!header.empty()) header.push_back(',');
    header += column;
  }
  return header + "\n";
}

void AppendTaxiCsvRow(const TaxiTrip& trip, std::string* out) {
  const std::string fields[kColumnCount] = {
      FormatOptionalInt(trip.pickup_community_area),
      FormatDecimal(trip.fare, 2),
      std::to_string(trip.trip_start_month),
      std::to_string(trip.trip_start_hour),
      std::to_string(trip.trip_start_day),
      FormatOptionalDecimal(trip.pickup_latitude, 6),
      FormatOptionalDecimal(trip.pickup_longitude, 6),
      FormatOptionalDecimal(trip.dropoff_latitude, 6),
      FormatOptionalDecimal(trip.dropoff_longitude, 6),
      FormatDecimal(trip.trip_miles, 2),
      trip.payment_type,
      trip.company.value_or(""),
      std::to_string(trip.trip_seconds),
      FormatOptionalInt(trip.dropoff_community_area),
      FormatDecimal(trip.tips, 2),
  };
  for (int column = 0; column < kColumnCount; ++column) {
    if (column > 0) out->push_back(',');
    AppendCsvField(fields[column], out);
  }
  out->push_back('\n');
}

StatusOr<TaxiCsvContents> ReadTaxiCsv(const std::string& path, const TaxiCsvReadOptions& options) {
  auto reader = CsvReader::Open(path);
  if (!reader.ok()) return reader.status();
  auto field_of_column = MatchHeader(*reader);
  if (!field_of_column.ok()) return field_of_column.status();

  TaxiCsvContents contents;
  RowParser parser(*reader, *field_of_column);
  CsvRecord record;
  TaxiTrip trip;
  while (true) {
    auto more = reader->Next(&record);
    Status status = more.ok() ? Status::OK() : more.status();
    if (status.ok()) {
      if (!*more) break;
      status = parser.Parse(record, &trip);
    }
    if (status.ok()) {
      contents.trips.push_back(trip);
      continue;
    }
    if (options.bad_rows == BadRowPolicy::kFail) return status;
    ++contents.skipped_rows;
    if (contents.first_errors.size() < options.errors_kept) {
      contents.first_errors.push_back(status.message());
    }
  }
  return contents;
}

}  // namespace cohort::taxi
