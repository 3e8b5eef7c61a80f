#include "taxi_dataset.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "binary_auc.h"
#include "taxi_csv.h"
#include "taxi_generator.h"
#include "taxi_tip_rule.h"

namespace cohort::taxi {
namespace {

using nlohmann::json;

double BigTipperRate(const std::vector<TaxiTrip>& trips) {
  if (trips.empty()) return 0;
  double big_tippers = 0;
  for (const TaxiTrip& trip : trips) big_tippers += IsBigTipper(trip) ? 1 : 0;
  return big_tippers / static_cast<double>(trips.size());
}

json RuleTables() {
  json tables;
  for (const char* payment :
       {"Credit Card", "Cash", "Mobile", "Prcard", "Unknown", "No Charge", "Dispute"}) {
    tables["payment_type_effect"][payment] = PaymentTypeEffect(payment);
  }
  for (const std::string& company : TaxiCompanyNames()) {
    tables["company_effect"][company] = CompanyEffect(company);
    tables["company_card_effect"][company] = CompanyCardEffect(company);
  }
  for (int area = 1; area <= kCommunityAreaCount; ++area) {
    for (int period = 0; period < kDayPeriodCount; ++period) {
      const auto day_period = static_cast<DayPeriod>(period);
      tables["pickup_area_time_effect"][std::to_string(area)][DayPeriodName(day_period)] =
          PickupAreaTimeEffect(area, day_period);
    }
  }
  return tables;
}

std::string GroundTruthJson(const TaxiGroundTruth& truth) {
  json document = {
      {"generator_version", truth.generator_version},
      {"seed", truth.seed},
      {"train_trips", truth.train_trips},
      {"eval_trips", truth.eval_trips},
      {"ceiling_auc", truth.ceiling_auc},
      {"train_big_tipper_rate", truth.train_big_tipper_rate},
      {"eval_big_tipper_rate", truth.eval_big_tipper_rate},
      {"rule", truth.rule},
  };
  document.update(RuleTables());
  return document.dump(2) + "\n";
}

bool Matches(const TaxiGroundTruth& truth, const TaxiDatasetOptions& options) {
  return truth.generator_version == kTaxiGeneratorVersion && truth.seed == options.seed &&
         truth.train_trips == options.train_trips && truth.eval_trips == options.eval_trips;
}

std::string Describe(int version, uint64_t seed, int64_t train, int64_t eval) {
  return "generator version " + std::to_string(version) + ", seed " + std::to_string(seed) + ", " +
         std::to_string(train) + " train and " + std::to_string(eval) + " eval trips";
}

// Writes `contents` to a temporary file beside `path` and renames it over `path`, so that a reader
// (or a writer killed midway) never leaves a partial file under the final name.
Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  const std::string temporary = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return Status::IOError("cannot create " + temporary + ": " + std::strerror(errno));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) {
      const int error = errno;
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      return Status::IOError("cannot write " + temporary + ": " + std::strerror(error));
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    return Status::IOError("cannot rename " + temporary + " to " + path + ": " + error.message());
  }
  return Status::OK();
}

// The ground truth file is small (the numbers and the rule's tables); more is not one.
constexpr size_t kMaxGroundTruthBytes = 16 << 20;

// The whole of the small text file `path`: NotFound when it does not exist.
StatusOr<std::string> ReadSmallFile(const std::string& path) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such file");
    return Status::IOError("cannot open " + path + ": " + std::strerror(errno));
  }
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof(chunk)) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxGroundTruthBytes) {
      return Status::InvalidArgument(path + ": larger than " +
                                     std::to_string(kMaxGroundTruthBytes) + " bytes");
    }
  }
  if (in.bad()) return Status::IOError("cannot read " + path + ": " + std::strerror(errno));
  return text;
}

// An exclusive flock on `dir`/.taxi-dataset.lock for the object's lifetime. flock locks belong to
// the open file description, so two threads of one process exclude each other as two processes
// do.
class DirectoryLock {
 public:
  static StatusOr<std::unique_ptr<DirectoryLock>> Acquire(const std::string& dir) {
    const std::string path = dir + "/.taxi-dataset.lock";
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Status::IOError("cannot open " + path + ": " + std::strerror(errno));
    while (::flock(fd, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      ::close(fd);
      return Status::IOError("cannot lock " + path + ": " + std::strerror(error));
    }
    return std::unique_ptr<DirectoryLock>(new DirectoryLock(fd));
  }
  ~DirectoryLock() { ::close(fd_); }  // closing releases the lock
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  explicit DirectoryLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace

StatusOr<double> TaxiCeilingAuc(const std::vector<TaxiTrip>& trips) {
  std::vector<double> probabilities;
  std::vector<uint8_t> labels;
  probabilities.reserve(trips.size());
  labels.reserve(trips.size());
  for (const TaxiTrip& trip : trips) {
    probabilities.push_back(TrueTipProbability(trip));
    labels.push_back(IsBigTipper(trip) ? 1 : 0);
  }
  return AreaUnderRocCurve(probabilities, labels);
}

std::string FormatTaxiCsv(const std::vector<TaxiTrip>& trips) {
  std::string csv = TaxiCsvHeader();
  csv.reserve(csv.size() + trips.size() * 160);
  for (const TaxiTrip& trip : trips) AppendTaxiCsvRow(trip, &csv);
  return csv;
}

StatusOr<TaxiGroundTruth> WriteTaxiDataset(const std::string& dir,
                                           const TaxiDatasetOptions& options) {
  if (options.train_trips < 1 || options.eval_trips < 1) {
    return Status::InvalidArgument("taxi data set: train and eval need at least one trip each");
  }
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return Status::IOError("cannot create " + dir + ": " + error.message());

  TaxiGroundTruth truth;
  truth.seed = options.seed;
  truth.train_trips = options.train_trips;
  truth.eval_trips = options.eval_trips;
  truth.rule = DescribeTipRule();
  {
    const auto train = GenerateTaxiTrips(options.seed, TaxiSplit::kTrain, options.train_trips);
    truth.train_big_tipper_rate = BigTipperRate(train);
    TAXI_RETURN_IF_ERROR(WriteFileAtomically(dir + "/" + kTaxiTrainFile, FormatTaxiCsv(train)));
  }
  const auto eval = GenerateTaxiTrips(options.seed, TaxiSplit::kEval, options.eval_trips);
  truth.eval_big_tipper_rate = BigTipperRate(eval);
  auto ceiling = TaxiCeilingAuc(eval);
  if (!ceiling.ok()) return ceiling.status().WithContext("taxi eval split");
  truth.ceiling_auc = *ceiling;
  TAXI_RETURN_IF_ERROR(WriteFileAtomically(dir + "/" + kTaxiEvalFile, FormatTaxiCsv(eval)));
  TAXI_RETURN_IF_ERROR(
      WriteFileAtomically(dir + "/" + kTaxiGroundTruthFile, GroundTruthJson(truth)));
  return truth;
}

StatusOr<TaxiGroundTruth> EnsureTaxiDataset(const std::string& dir,
                                            const TaxiDatasetOptions& options) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return Status::IOError("cannot create " + dir + ": " + error.message());
  auto lock = DirectoryLock::Acquire(dir);
  if (!lock.ok()) return lock.status();

  if (!std::filesystem::exists(dir + "/" + kTaxiGroundTruthFile)) {
    return WriteTaxiDataset(dir, options);
  }
  auto existing = ReadTaxiGroundTruth(dir);
  if (!existing.ok()) return existing.status();
  if (!Matches(*existing, options)) {
    return Status::FailedPrecondition(
        dir + " holds a taxi data set of " +
        Describe(existing->generator_version, existing->seed, existing->train_trips,
                 existing->eval_trips) +
        "; asked for " +
        Describe(kTaxiGeneratorVersion, options.seed, options.train_trips, options.eval_trips) +
        ": use another directory or remove this one");
  }
  for (const char* file : {kTaxiTrainFile, kTaxiEvalFile}) {
    if (!std::filesystem::exists(dir + "/" + file)) {
      return Status::FailedPrecondition(dir + " has " + kTaxiGroundTruthFile + " but no " + file);
    }
  }
  return existing;
}

StatusOr<TaxiGroundTruth> ReadTaxiGroundTruth(const std::string& dir) {
  const std::string path = dir + "/" + kTaxiGroundTruthFile;
  StatusOr<std::string> text = ReadSmallFile(path);
  if (text.status().code() == Status::Code::kNotFound) {
    return Status::NotFound(path + ": no such file");
  }
  if (!text.ok()) return text.status();
  const json document = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_object()) {
    return Status::InvalidArgument(path + ": not a JSON object");
  }
  TaxiGroundTruth truth;
  const auto get = [&](const char* key, auto* value) -> Status {
    const auto found = document.find(key);
    using Value = std::remove_pointer_t<decltype(value)>;
    const bool right_type =
        found != document.end() &&
        (std::is_same_v<Value, std::string> ? found->is_string() : found->is_number());
    if (!right_type) {
      return Status::InvalidArgument(path + ": \"" + key + "\" is missing or of the wrong type");
    }
    *value = found->template get<Value>();
    return Status::OK();
  };
  TAXI_RETURN_IF_ERROR(get("generator_version", &truth.generator_version));
  TAXI_RETURN_IF_ERROR(get("seed", &truth.seed));
  TAXI_RETURN_IF_ERROR(get("train_trips", &truth.train_trips));
  TAXI_RETURN_IF_ERROR(get("eval_trips", &truth.eval_trips));
  TAXI_RETURN_IF_ERROR(get("ceiling_auc", &truth.ceiling_auc));
  TAXI_RETURN_IF_ERROR(get("train_big_tipper_rate", &truth.train_big_tipper_rate));
  TAXI_RETURN_IF_ERROR(get("eval_big_tipper_rate", &truth.eval_big_tipper_rate));
  TAXI_RETURN_IF_ERROR(get("rule", &truth.rule));
  return truth;
}

}  // namespace cohort::taxi
