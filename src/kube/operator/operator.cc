#include "kube/operator/operator.h"

#include <algorithm>

#include "job/tfjob.h"
#include "kube/objects/objects.h"
#include "kube/operator/replica_objects.h"

namespace cohort::kube {

Operator::Operator(Api& api, ObjectBuilders builders, OperatorOptions options,
                   std::function<Time()> clock)
    : api_(api),
      options_(std::move(options)),
      clock_(std::move(clock)),
      queue_(clock_, options_.queue_poll),
      recorder_(api, options_.component, options_.identity) {
  InformerOptions informer = options_.informer;
  if (!informer.log) informer.log = options_.log;
  const Selector owned{std::string(kOperatorNameLabel) + "=" + kOperatorName, ""};
  jobs_ = std::make_unique<Informer>(api_, JobResource(job::TFJobKind()), options_.namespace_name,
                                     Selector{}, informer,
                                     [this](const nlohmann::json& object, bool deleted) {
                                       // A deleted job's events are not aggregated any more; its
                                       // pods go with it.
                                       if (deleted)
                                         recorder_.Forget(object["metadata"].value("uid", ""));
                                       Enqueue(object, true);
                                     });
  pods_ = std::make_unique<Informer>(
      api_, PodResource(), options_.namespace_name, owned, informer,
      [this](const nlohmann::json& object, bool) { Enqueue(object, false); });
  services_ = std::make_unique<Informer>(
      api_, ServiceResource(), options_.namespace_name, owned, informer,
      [this](const nlohmann::json& object, bool) { Enqueue(object, false); });
  if (options_.leader_election) {
    LeaderElectionOptions election = *options_.leader_election;
    if (!election.log) election.log = options_.log;
    elector_ = std::make_unique<LeaderElector>(api_, election, clock_);
  }
  sync_ = std::make_unique<JobSync>(
      api_, JobCaches{jobs_.get(), pods_.get(), services_.get()}, std::move(builders),
      options_.objects, recorder_, clock_, [this] { return Acting(); }, options_.log);
}

Operator::~Operator() { Stop(); }

void Operator::Log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

bool Operator::Acting() const { return !stopping_.load() && (!elector_ || elector_->IsLeader()); }

bool Operator::CachesSynced() const {
  return jobs_->HasSynced() && pods_->HasSynced() && services_->HasSynced();
}

// A job's key for its own changes; for a pod or service, its controlling job's.
void Operator::Enqueue(const nlohmann::json& object, bool is_job) {
  const std::string key = is_job ? ObjectKey(object) : ControllerKey(object, "TFJob");
  if (!key.empty() && key != "/") queue_.Add(key);
}

void Operator::Start() {
  if (started_) return;
  started_ = true;
  Log("operator " + options_.identity + " starting: namespace " +
      (options_.namespace_name.empty() ? std::string("(all)") : options_.namespace_name) + ", " +
      std::to_string(options_.workers) + " worker(s)" +
      (elector_ ? ", leader election on lease " + elector_->options().lease_namespace + "/" +
                      elector_->options().lease_name
                : std::string()));
  for (Informer* informer : {jobs_.get(), pods_.get(), services_.get()}) {
    threads_.emplace_back([informer] { informer->Run(); });
  }
  if (elector_) {
    threads_.emplace_back([this] {
      elector_->Run([this](bool leading) {
        if (!leading) return;
        // A new leader looks at every job once: the last one may have left work undone.
        for (const nlohmann::json& job : jobs_->List()) queue_.Add(ObjectKey(job));
      });
    });
  }
  const int workers = std::clamp(options_.workers, 1, 64);
  for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { Work(); });
  if (options_.resync_period.count() > 0) threads_.emplace_back([this] { ResyncEveryPeriod(); });
}

void Operator::ResyncEveryPeriod() {
  std::unique_lock<std::mutex> lock(resync_mutex_);
  while (!stopping_.load()) {
    resync_stop_.wait_for(lock, options_.resync_period, [this] { return stopping_.load(); });
    if (stopping_.load()) return;
    // Before the caches are synced there is nothing to look at again: the first list queues all.
    if (!CachesSynced()) continue;
    lock.unlock();
    Resync();
    lock.lock();
  }
}

void Operator::Resync() {
  const std::vector<nlohmann::json> jobs = jobs_->List();
  {
    std::lock_guard<std::mutex> lock(resync_mutex_);
    resync_unsynced_.clear();
    for (const nlohmann::json& job : jobs) resync_unsynced_.insert(ObjectKey(job));
    resync_size_ = resync_unsynced_.size();
    resync_start_ = std::chrono::steady_clock::now();
  }
  Log("resync: " + std::to_string(resync_size_) + " jobs queued");
  for (const nlohmann::json& job : jobs) queue_.Add(ObjectKey(job));
}

// Called after each pass (done or failed): the last key of a resync to be synced ends it.
void Operator::NoteSynced(const std::string& key) {
  size_t size = 0;
  std::chrono::steady_clock::duration took{};
  {
    std::lock_guard<std::mutex> lock(resync_mutex_);
    if (resync_unsynced_.erase(key) == 0 || !resync_unsynced_.empty()) return;
    size = resync_size_;
    took = std::chrono::steady_clock::now() - resync_start_;
  }
  Log("resync: " + std::to_string(size) + " jobs synced in " +
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()) + " ms");
}

void Operator::Work() {
  while (!stopping_.load()) {
    if (!CachesSynced() || !Acting()) {
      // Bounded: re-checks leadership and the caches every poll interval.
      std::this_thread::sleep_for(std::min(options_.queue_poll, std::chrono::milliseconds(100)));
      continue;
    }
    std::optional<std::string> key = queue_.Get(options_.queue_poll);
    if (!key) continue;
    if (!Acting()) {
      queue_.Done(*key);
      queue_.Add(*key);  // the next leader's (or this one's, once it leads again)
      continue;
    }
    StatusOr<SyncResult> result = sync_->Sync(*key);
    syncs_.fetch_add(1);
    queue_.Done(*key);
    NoteSynced(*key);
    if (!result.ok()) {
      Log(*key + ": sync failed, again after back-off: " + result.status().message());
      queue_.AddRateLimited(*key);
      continue;
    }
    queue_.Forget(*key);
    if (result->requeue_at) queue_.AddAt(*key, *result->requeue_at);
  }
}

void Operator::Stop() {
  std::lock_guard<std::mutex> lock(stop_mutex_);
  if (!started_ || stopping_.exchange(true)) return;
  Log("operator " + options_.identity + " stopping");
  queue_.ShutDown();
  {
    std::lock_guard<std::mutex> lock(resync_mutex_);
    resync_stop_.notify_all();
  }
  if (elector_) elector_->Stop();
  for (Informer* informer : {jobs_.get(), pods_.get(), services_.get()}) informer->Stop();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
  if (elector_) {
    Status released = elector_->Release();
    if (!released.ok()) Log("lease not released: " + released.message());
  }
}

}  // namespace cohort::kube
