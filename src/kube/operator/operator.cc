#include "kube/operator/operator.h"

#include <algorithm>

#include "kube/objects/objects.h"
#include "kube/operator/replica_objects.h"

namespace cohort::kube {

Operator::Operator(Api& api, ObjectBuilders builders, OperatorOptions options,
                   std::function<Time()> clock)
    : api_(api),
      options_(std::move(options)),
      clock_(std::move(clock)),
      queue_(clock_, options_.queue_poll) {
  InformerOptions informer = options_.informer;
  if (!informer.log) informer.log = options_.log;
  JobCaches caches;
  for (const job::JobKind* kind : options_.kinds) {
    auto state = std::make_unique<KindState>();
    KindState* raw = state.get();
    state->kind = kind;
    state->recorder =
        std::make_unique<EventRecorder>(api_, kind->facts().controller_name, options_.identity);
    InformerOptions kind_informer = informer;
    kind_informer.on_list_error = [this, raw](const Status& status) {
      return ReportMissingKind(*raw, status);
    };
    state->jobs = std::make_unique<Informer>(
        api_, JobResource(*kind), options_.namespace_name, Selector{}, kind_informer,
        [this, raw](const nlohmann::json& object, bool deleted) {
          // A deleted job's events are not aggregated any more; its pods go with it.
          if (deleted) raw->recorder->Forget(object["metadata"].value("uid", ""));
          EnqueueJob(*raw->kind, object);
        });
    caches.kinds.push_back(OperatedKind{kind, state->jobs.get(), state->recorder.get()});
    kinds_.push_back(std::move(state));
  }
  const Selector owned{OwnedObjectsSelector(options_.kinds), ""};
  pods_ = std::make_unique<Informer>(
      api_, PodResource(), options_.namespace_name, owned, informer,
      [this](const nlohmann::json& object, bool) { EnqueueOwner(object); });
  services_ = std::make_unique<Informer>(
      api_, ServiceResource(), options_.namespace_name, owned, informer,
      [this](const nlohmann::json& object, bool) { EnqueueOwner(object); });
  caches.pods = pods_.get();
  caches.services = services_.get();
  if (options_.leader_election) {
    LeaderElectionOptions election = *options_.leader_election;
    if (!election.log) election.log = options_.log;
    elector_ = std::make_unique<LeaderElector>(api_, election, clock_);
  }
  sync_ = std::make_unique<JobSync>(
      api_, std::move(caches), std::move(builders), options_.objects, clock_,
      [this] { return Acting(); }, options_.log);
}

Operator::~Operator() { Stop(); }

void Operator::Log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

std::vector<Informer*> Operator::Informers() const {
  std::vector<Informer*> informers;
  for (const auto& state : kinds_) informers.push_back(state->jobs.get());
  informers.push_back(pods_.get());
  informers.push_back(services_.get());
  return informers;
}

bool Operator::Acting() const { return !stopping_.load() && (!elector_ || elector_->IsLeader()); }

const Informer* Operator::jobs(const job::JobKind& kind) const {
  for (const auto& state : kinds_) {
    if (state->kind == &kind) return state->jobs.get();
  }
  return nullptr;
}

// The pods and services first: a pass must never miss a job's pods (it would create them again).
// A kind's jobs need no wait: a key whose job its informer has not listed yet finds nothing and
// does nothing, and the list queues every job it brings. So a kind whose CRD is missing holds up
// no other kind.
bool Operator::CachesSynced() const { return pods_->HasSynced() && services_->HasSynced(); }

bool Operator::ReportMissingKind(KindState& state, const Status& status) {
  if (status.code() != Status::Code::kNotFound) return false;
  if (state.missing_reported.exchange(true)) return true;
  const job::JobKind& kind = *state.kind;
  std::string others;
  for (const auto& other : kinds_) {
    if (other.get() != &state) others += (others.empty() ? "" : ", ") + other->kind->name() + "s";
  }
  Log(kind.name() + "s are not run: the server has no " + kind.facts().plural + "." +
      kind.facts().group + "/" + kind.facts().version +
      " (its CustomResourceDefinition is not installed). Install it with `cohort crd " +
      job::LowerCase(kind.name()) +
      " | kubectl apply -f -` (or `kubectl apply -k deploy/kubernetes`), and it is picked up; or "
      "leave the kind out with --enable-scheme." +
      (others.empty() ? std::string() : " " + others + " run meanwhile.") + " (" +
      status.message() + ")");
  return true;
}

std::vector<std::string> Operator::AllJobKeys() const {
  std::vector<std::string> keys;
  for (const auto& state : kinds_) {
    for (const nlohmann::json& job : state->jobs->List()) {
      keys.push_back(JobQueueKey(*state->kind, ObjectKey(job)));
    }
  }
  return keys;
}

// A job's key for its own changes.
void Operator::EnqueueJob(const job::JobKind& kind, const nlohmann::json& object) {
  const std::string key = ObjectKey(object);
  if (!key.empty() && key != "/") queue_.Add(JobQueueKey(kind, key));
}

// For a pod or service, the key of the job its controller ownerReference names, of an operated
// kind; nothing for an object no operated job controls.
void Operator::EnqueueOwner(const nlohmann::json& object) {
  for (const auto& state : kinds_) {
    const std::string key = ControllerKey(object, state->kind->name());
    if (!key.empty() && key != "/") {
      queue_.Add(JobQueueKey(*state->kind, key));
      return;
    }
  }
}

void Operator::Start() {
  if (started_) return;
  started_ = true;
  std::string kinds;
  for (const auto& state : kinds_) kinds += (kinds.empty() ? "" : ", ") + state->kind->name() + "s";
  Log("operator " + options_.identity + " starting: " + kinds + ", namespace " +
      (options_.namespace_name.empty() ? std::string("(all)") : options_.namespace_name) + ", " +
      std::to_string(options_.workers) + " worker(s)" +
      (elector_ ? ", leader election on lease " + elector_->options().lease_namespace + "/" +
                      elector_->options().lease_name
                : std::string()));
  for (Informer* informer : Informers()) threads_.emplace_back([informer] { informer->Run(); });
  if (elector_) {
    threads_.emplace_back([this] {
      elector_->Run([this](bool leading) {
        if (!leading) return;
        // A new leader looks at every job once: the last one may have left work undone.
        for (const std::string& key : AllJobKeys()) queue_.Add(key);
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
  const std::vector<std::string> keys = AllJobKeys();
  {
    std::lock_guard<std::mutex> lock(resync_mutex_);
    resync_unsynced_.clear();
    for (const std::string& key : keys) resync_unsynced_.insert(key);
    resync_size_ = resync_unsynced_.size();
    resync_start_ = std::chrono::steady_clock::now();
  }
  Log("resync: " + std::to_string(resync_size_) + " jobs queued");
  for (const std::string& key : keys) queue_.Add(key);
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
  for (Informer* informer : Informers()) informer->Stop();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
  if (elector_) {
    Status released = elector_->Release();
    if (!released.ok()) Log("lease not released: " + released.message());
  }
}

}  // namespace cohort::kube
