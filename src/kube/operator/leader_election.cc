#include "kube/operator/leader_election.h"

#include <cstdio>

namespace cohort::kube {

std::string FormatMicroTime(Time time) {
  const auto seconds = std::chrono::floor<std::chrono::seconds>(time);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(time - seconds).count();
  std::string whole = FormatTime(seconds);  // "...:05Z"
  char fraction[32];
  std::snprintf(fraction, sizeof(fraction), ".%06lld", static_cast<long long>(micros));
  return whole.substr(0, whole.size() - 1) + fraction + "Z";
}

std::optional<Time> ParseMicroTime(const std::string& text) {
  std::optional<Time> whole = ParseTime(text);
  if (!whole) return std::nullopt;
  const size_t dot = text.find('.');
  if (dot == std::string::npos) return whole;
  long long micros = 0;
  int digits = 0;
  for (size_t i = dot + 1; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (digits < 6) {
      micros = micros * 10 + (text[i] - '0');
      ++digits;
    }
  }
  for (; digits < 6; ++digits) micros *= 10;
  return *whole + std::chrono::microseconds(micros);
}

LeaderElector::LeaderElector(Api& api, LeaderElectionOptions options, std::function<Time()> clock)
    : api_(api), options_(std::move(options)), clock_(std::move(clock)) {}

void LeaderElector::Log(const std::string& line) const {
  if (options_.log) {
    options_.log("lease " + options_.lease_namespace + "/" + options_.lease_name + ": " + line);
  }
}

bool LeaderElector::TryAcquireOrRenew() {
  const Time now = clock_();
  bool leading = false;
  Status attempt = Acquire(now, leading);
  const bool was_leading = leading_.load();
  if (attempt.ok() && leading) {
    last_renewal_.store(now.time_since_epoch().count());
    if (!was_leading) Log(options_.identity + " became the leader");
    leading_.store(true);
    return true;
  }
  if (!attempt.ok()) Log("could not acquire or renew: " + attempt.message());
  if (was_leading) {
    // Another holder is on record: stop at once. A failed renewal: stop once the deadline passed.
    const Time renewed{Clock::duration(last_renewal_.load())};
    const bool deadline_passed = now - renewed >= options_.renew_deadline;
    if ((attempt.ok() && !leading) || deadline_passed) {
      Log(options_.identity + " stopped leading");
      leading_.store(false);
    }
  }
  return IsLeader();
}

Status LeaderElector::Acquire(Time now, bool& leading) {
  leading = false;
  const std::string now_text = FormatMicroTime(now);
  StatusOr<nlohmann::json> lease =
      api_.Get(LeaseResource(), options_.lease_namespace, options_.lease_name);
  if (!lease.ok() && lease.status().code() != Status::Code::kNotFound) return lease.status();
  if (!lease.ok()) {
    nlohmann::json object = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", options_.lease_name}, {"namespace", options_.lease_namespace}}},
        {"spec",
         {{"holderIdentity", options_.identity},
          {"leaseDurationSeconds", options_.lease_duration.count()},
          {"acquireTime", now_text},
          {"renewTime", now_text},
          {"leaseTransitions", 0}}}};
    StatusOr<nlohmann::json> created =
        api_.Create(LeaseResource(), options_.lease_namespace, object);
    if (!created.ok()) return created.status();
    leading = true;
    return Status::OK();
  }
  nlohmann::json& spec = (*lease)["spec"];
  if (!spec.is_object()) spec = nlohmann::json::object();
  const std::string holder = spec.value("holderIdentity", "");
  const int64_t duration_seconds =
      spec.contains("leaseDurationSeconds") && spec["leaseDurationSeconds"].is_number_integer()
          ? spec["leaseDurationSeconds"].get<int64_t>()
          : options_.lease_duration.count();
  std::optional<Time> renewed = ParseMicroTime(spec.value("renewTime", ""));
  const bool expired = !renewed || now >= *renewed + std::chrono::seconds(duration_seconds);
  if (holder == options_.identity) {
    spec["renewTime"] = now_text;
    spec["leaseDurationSeconds"] = options_.lease_duration.count();
  } else if (holder.empty() || expired) {
    const int64_t transitions =
        spec.contains("leaseTransitions") && spec["leaseTransitions"].is_number_integer()
            ? spec["leaseTransitions"].get<int64_t>()
            : 0;
    spec["holderIdentity"] = options_.identity;
    spec["leaseDurationSeconds"] = options_.lease_duration.count();
    spec["acquireTime"] = now_text;
    spec["renewTime"] = now_text;
    spec["leaseTransitions"] = transitions + 1;
    Log(options_.identity + " takes the lease" +
        (holder.empty() ? std::string(" (released)") : " from " + holder + " (expired)"));
  } else {
    return Status::OK();  // held by another, not expired: not leading
  }
  StatusOr<nlohmann::json> updated = api_.Update(LeaseResource(), options_.lease_namespace, *lease);
  if (!updated.ok()) return updated.status();
  leading = true;
  return Status::OK();
}

bool LeaderElector::IsLeader() const {
  if (!leading_.load()) return false;
  const Time renewed{Clock::duration(last_renewal_.load())};
  return clock_() - renewed < options_.renew_deadline;
}

void LeaderElector::Run(const std::function<void(bool leading)>& on_change) {
  bool leading = false;
  while (!stopping_.load()) {
    const bool now_leading = TryAcquireOrRenew();
    if (now_leading != leading) {
      leading = now_leading;
      if (on_change) on_change(leading);
    }
    std::unique_lock<std::mutex> lock(mutex_);
    stop_requested_.wait_for(lock, options_.retry_period, [&] { return stopping_.load(); });
  }
}

void LeaderElector::Stop() {
  stopping_.store(true);
  std::lock_guard<std::mutex> lock(mutex_);
  stop_requested_.notify_all();
}

Status LeaderElector::Release() {
  if (!leading_.exchange(false)) return Status::OK();
  StatusOr<nlohmann::json> released =
      UpdateWithRetry(api_, LeaseResource(), options_.lease_namespace, options_.lease_name,
                      [&](nlohmann::json& lease) {
                        if (lease["spec"].value("holderIdentity", "") != options_.identity)
                          return false;
                        lease["spec"]["holderIdentity"] = "";
                        lease["spec"]["leaseDurationSeconds"] = 1;
                        lease["spec"]["renewTime"] = FormatMicroTime(clock_());
                        return true;
                      });
  if (released.ok()) Log(options_.identity + " released the lease");
  return released.status();
}

}  // namespace cohort::kube
