#include "taxi/taxi_csv.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>

#include "taxi/taxi_dataset.h"
#include "taxi/taxi_generator.h"
#include "testing/scratch_directory.h"
#include "testing/synthetic_data.h"

namespace cohort::taxi {
namespace {

using train::testing::Gzip;
using train::testing::WriteFile;

// The fields of one valid row, by column name.
std::map<std::string, std::string> GoodRow() {
  return {{"pickup_community_area", "8"},
          {"fare", "12.50"},
          {"trip_start_month", "5"},
          {"trip_start_hour", "18"},
          {"trip_start_day", "6"},
          {"pickup_latitude", "41.900300"},
          {"pickup_longitude", "-87.634000"},
          {"dropoff_latitude", ""},
          {"dropoff_longitude", ""},
          {"trip_miles", "2.30"},
          {"payment_type", "Credit Card"},
          {"company", "\"Taxicab Insurance Agency, LLC\""},
          {"trip_seconds", "780"},
          {"dropoff_community_area", ""},
          {"tips", "3.00"}};
}

// One line in the writer's column order, fields taken verbatim (already quoted if need be).
std::string Line(const std::map<std::string, std::string>& row) {
  std::string line;
  for (const std::string& column : TaxiCsvColumns()) {
    if (!line.empty()) line += ",";
    line += row.at(column);
  }
  return line + "\n";
}

std::string WithField(const std::string& column, const std::string& text) {
  auto row = GoodRow();
  row[column] = text;
  return Line(row);
}

class TaxiCsvTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  // Writes header + good row + `bad` + good row, and reads it with both policies. Returns the
  // fail-mode message; checks that skip mode keeps the two good rows and counts one bad one.
  std::string FailAndSkip(const std::string& bad) {
    const std::string path = Path("bad.csv");
    WriteFile(path, TaxiCsvHeader() + Line(GoodRow()) + bad + Line(GoodRow()));
    auto failed = ReadTaxiCsv(path, {.bad_rows = BadRowPolicy::kFail});
    EXPECT_FALSE(failed.ok());
    if (failed.ok()) return "";
    EXPECT_EQ(failed.status().code(), Status::Code::kInvalidArgument);
    auto skipped = ReadTaxiCsv(path, {.bad_rows = BadRowPolicy::kSkipAndCount});
    EXPECT_TRUE(skipped.ok()) << skipped.status().ToString();
    if (skipped.ok()) {
      EXPECT_EQ(skipped->trips.size(), 2u);
      EXPECT_EQ(skipped->skipped_rows, 1);
      EXPECT_EQ(skipped->first_errors, std::vector<std::string>{failed.status().message()});
    }
    return failed.status().message();
  }

  cohort::testing::ScratchDirectory scratch_{"cohort-taxi-csv"};
  const std::string dir_ = scratch_.path().string();
};

TEST_F(TaxiCsvTest, ReadsTheDocumentedRowWithMissingValuesAsMissing) {
  WriteFile(Path("one.csv"), TaxiCsvHeader() + Line(GoodRow()));
  auto contents = ReadTaxiCsv(Path("one.csv"));
  ASSERT_TRUE(contents.ok()) << contents.status().ToString();
  ASSERT_EQ(contents->trips.size(), 1u);
  const TaxiTrip& trip = contents->trips[0];
  EXPECT_EQ(trip.pickup_community_area, 8);
  EXPECT_EQ(trip.fare, 12.5);
  EXPECT_EQ(trip.trip_start_hour, 18);
  EXPECT_EQ(trip.pickup_latitude, 41.9003);
  EXPECT_EQ(trip.dropoff_latitude, std::nullopt);
  EXPECT_EQ(trip.dropoff_community_area, std::nullopt);
  EXPECT_EQ(trip.company, "Taxicab Insurance Agency, LLC");
  EXPECT_EQ(trip.trip_seconds, 780);
  EXPECT_EQ(trip.tips, 3.0);
  EXPECT_TRUE(IsBigTipper(trip));
  EXPECT_EQ(contents->skipped_rows, 0);
}

TEST_F(TaxiCsvTest, GeneratedTripsRoundTripExactlyPlainAndGzipped) {
  const auto trips = GenerateTaxiTrips(3, TaxiSplit::kEval, 3000);
  const std::string csv = FormatTaxiCsv(trips);
  EXPECT_NE(csv.find("\"Sam's \"\"Lucky\"\" Cab, Inc.\""), std::string::npos);
  WriteFile(Path("trips.csv"), csv);
  WriteFile(Path("trips.csv.gz"), Gzip(csv));
  for (const std::string name : {"trips.csv", "trips.csv.gz"}) {
    auto contents = ReadTaxiCsv(Path(name));
    ASSERT_TRUE(contents.ok()) << contents.status().ToString();
    EXPECT_EQ(contents->trips, trips) << name;
  }
  int missing_pickups = 0, missing_companies = 0;
  for (const TaxiTrip& trip : trips) {
    missing_pickups += trip.pickup_community_area ? 0 : 1;
    missing_companies += trip.company ? 0 : 1;
  }
  EXPECT_GT(missing_pickups, 0);
  EXPECT_GT(missing_companies, 0);
}

TEST_F(TaxiCsvTest, ColumnsMayComeInAnyOrderAndLinesMayEndInCrlf) {
  auto row = GoodRow();
  std::string header, line;
  for (auto it = TaxiCsvColumns().rbegin(); it != TaxiCsvColumns().rend(); ++it) {
    header += (header.empty() ? "" : ",") + *it;
    line += (line.empty() ? "" : ",") + row.at(*it);
  }
  WriteFile(Path("reversed.csv"), header + "\r\n" + line + "\r\n");
  auto reversed = ReadTaxiCsv(Path("reversed.csv"));
  WriteFile(Path("plain.csv"), TaxiCsvHeader() + Line(row));
  auto plain = ReadTaxiCsv(Path("plain.csv"));
  ASSERT_TRUE(reversed.ok()) << reversed.status().ToString();
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(reversed->trips, plain->trips);
}

TEST_F(TaxiCsvTest, BadValuesAreNamedByFileLineAndColumn) {
  const std::string where = Path("bad.csv") + ":3:";
  EXPECT_EQ(FailAndSkip(WithField("fare", "12.5x")), where + "2 (fare): \"12.5x\" is not a number");
  EXPECT_EQ(FailAndSkip(WithField("pickup_latitude", "nan")),
            where + "6 (pickup_latitude): \"nan\" is not a number");
  EXPECT_EQ(FailAndSkip(WithField("trip_seconds", "78.5")),
            where + "13 (trip_seconds): \"78.5\" is not an integer");
  EXPECT_EQ(FailAndSkip(WithField("trip_start_hour", "24")),
            where + "4 (trip_start_hour): 24 is out of range [0, 23]");
  EXPECT_EQ(FailAndSkip(WithField("pickup_community_area", "0")),
            where + "1 (pickup_community_area): 0 is out of range [1, 77]");
  EXPECT_EQ(FailAndSkip(WithField("pickup_longitude", "-187.5")),
            where + "7 (pickup_longitude): -187.5 is out of range [-180, 180]");
  EXPECT_EQ(FailAndSkip(WithField("payment_type", "")),
            where + "11 (payment_type): missing value (the column is required)");
  EXPECT_EQ(FailAndSkip(WithField("tips", "")),
            where + "15 (tips): missing value (the column is required)");
}

TEST_F(TaxiCsvTest, WrongFieldCountsAndBadQuotingAreNamed) {
  const std::string where = Path("bad.csv") + ":3";
  // An unquoted comma inside the company name: one field too many.
  EXPECT_EQ(FailAndSkip(WithField("company", "Taxicab Insurance Agency, LLC")),
            where + ": 16 fields, the header has 15");
  EXPECT_EQ(FailAndSkip("8,12.50,5\n"), where + ": 3 fields, the header has 15");
  EXPECT_EQ(FailAndSkip(WithField("company", "Sam's \"Lucky\" Cab")),
            where + ":12 (company): quote inside an unquoted field");
  EXPECT_EQ(FailAndSkip(WithField("company", "\"Flash\" Cab")),
            where + ":12 (company): text after the closing quote of a quoted field");
}

TEST_F(TaxiCsvTest, TruncatedFilesFailOrLoseOnlyTheirLastRow) {
  const std::string good = TaxiCsvHeader() + Line(GoodRow()) + Line(GoodRow());
  // Cut inside the last number: "3.0" would still parse, so only the missing line break tells.
  WriteFile(Path("cut.csv"), good.substr(0, good.size() - 2));
  auto failed = ReadTaxiCsv(Path("cut.csv"));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(),
            Path("cut.csv") + ":3: the last line has no line break: the file is truncated");
  auto skipped = ReadTaxiCsv(Path("cut.csv"), {.bad_rows = BadRowPolicy::kSkipAndCount});
  ASSERT_TRUE(skipped.ok()) << skipped.status().ToString();
  EXPECT_EQ(skipped->trips.size(), 1u);
  EXPECT_EQ(skipped->skipped_rows, 1);

  // Cut inside a quoted company name: the quote never closes.
  const std::string quoted = TaxiCsvHeader() + Line(GoodRow()) + Line(GoodRow());
  WriteFile(Path("open-quote.csv"), quoted.substr(0, quoted.find("Taxicab", 300) + 4));
  failed = ReadTaxiCsv(Path("open-quote.csv"));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(),
            Path("open-quote.csv") + ":3:12 (company): the file ends inside a quoted field");
}

TEST_F(TaxiCsvTest, HeaderProblemsFailWhateverThePolicy) {
  const TaxiCsvReadOptions skip = {.bad_rows = BadRowPolicy::kSkipAndCount};
  std::string header = TaxiCsvHeader();
  WriteFile(Path("no-tips.csv"), header.substr(0, header.rfind(",tips")) + "\n");
  auto contents = ReadTaxiCsv(Path("no-tips.csv"), skip);
  ASSERT_FALSE(contents.ok());
  EXPECT_EQ(contents.status().message(), Path("no-tips.csv") + ":1: missing column \"tips\"");

  WriteFile(Path("extra.csv"), "trip_id," + header);
  contents = ReadTaxiCsv(Path("extra.csv"), skip);
  ASSERT_FALSE(contents.ok());
  EXPECT_EQ(contents.status().message(), Path("extra.csv") + ":1:1: unexpected column \"trip_id\"");

  WriteFile(Path("twice.csv"), "fare," + header);
  contents = ReadTaxiCsv(Path("twice.csv"), skip);
  ASSERT_FALSE(contents.ok());
  EXPECT_EQ(contents.status().message(), Path("twice.csv") + ":1:3: column \"fare\" appears twice");

  WriteFile(Path("empty.csv"), "");
  contents = ReadTaxiCsv(Path("empty.csv"), skip);
  ASSERT_FALSE(contents.ok());
  EXPECT_EQ(contents.status().message(), Path("empty.csv") + ": empty file, no header row");

  contents = ReadTaxiCsv(Path("absent.csv"), skip);
  ASSERT_FALSE(contents.ok());
  EXPECT_EQ(contents.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(contents.status().message(), Path("absent.csv") + ": no such file");
}

TEST_F(TaxiCsvTest, SkipModeCountsEveryBadRowAndKeepsTheFirstMessages) {
  std::string csv = TaxiCsvHeader();
  for (int i = 0; i < 10; ++i) csv += Line(GoodRow()) + WithField("fare", "x" + std::to_string(i));
  WriteFile(Path("many.csv"), csv);
  auto contents =
      ReadTaxiCsv(Path("many.csv"), {.bad_rows = BadRowPolicy::kSkipAndCount, .errors_kept = 3});
  ASSERT_TRUE(contents.ok()) << contents.status().ToString();
  EXPECT_EQ(contents->trips.size(), 10u);
  EXPECT_EQ(contents->skipped_rows, 10);
  ASSERT_EQ(contents->first_errors.size(), 3u);
  EXPECT_EQ(contents->first_errors[2], Path("many.csv") + ":7:2 (fare): \"x2\" is not a number");
}

TEST_F(TaxiCsvTest, QuotedFieldsMayHoldLineBreaksAndLinesStillCount) {
  auto row = GoodRow();
  row["company"] = "\"Two\nLines\"";
  WriteFile(Path("multiline.csv"),
            TaxiCsvHeader() + Line(row) + WithField("fare", "oops") + Line(GoodRow()));
  auto contents = ReadTaxiCsv(Path("multiline.csv"));
  ASSERT_FALSE(contents.ok());
  // The first row spans lines 2 and 3, so the bad row is on line 4.
  EXPECT_EQ(contents.status().message(),
            Path("multiline.csv") + ":4:2 (fare): \"oops\" is not a number");
  contents = ReadTaxiCsv(Path("multiline.csv"), {.bad_rows = BadRowPolicy::kSkipAndCount});
  ASSERT_TRUE(contents.ok());
  ASSERT_EQ(contents->trips.size(), 2u);
  EXPECT_EQ(contents->trips[0].company, "Two\nLines");
}

}  // namespace
}  // namespace cohort::taxi
